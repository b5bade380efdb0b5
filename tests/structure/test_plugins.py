"""Stores as plug-ins (issue 34): every format registers through the entry-point group
`agentctl.stores`, the built-in ones too; a package outside agentctl that registers a
FormatSpec there is found by detection and listed by `agentctl formats`, installed in a
throwaway venv here with pip; a checkout run with PYTHONPATH alone still finds the
built-ins; a broken plug-in is left out with one line on stderr."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentctl.storage import formats, plugins
from agentctl.storage.contract import Capability, FormatSpec
from tests.support.rig import REPO

BUILTIN_NAMES = [
    "langgraph",
    "agentos",
    "article",
    "openai-agents",
    "adk",
    "agno",
    "crewai",
    "crewai-flows",
    "crewai-replay",
]


def test_the_built_ins_register_in_detection_order():
    """pyproject.toml registers every built-in store, in the order detection tries them
    (LangGraph before AgentOS: both have a `checkpoints` table), as plugins.BUILTIN."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    registered = project["entry-points"][plugins.GROUP]
    assert list(registered.values()) == list(plugins.BUILTIN)
    assert [f.name for f in formats()] == BUILTIN_NAMES == list(registered)


def test_a_checkout_without_entry_points_finds_the_built_ins(tmp_path):
    """No site-packages at all (`python -S`, the package's sources alone on the path: a
    checkout's `agentctl.egg-info`, which `pip install -e` writes beside them, left out):
    no entry point of the group is installed, the built-in list is used."""
    shutil.copytree(REPO / "agentctl", tmp_path / "agentctl", ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from agentctl.storage import formats, plugins\n"
        "assert plugins.entry_points() == [], plugins.entry_points()\n"
        "print(' '.join(f.name for f in formats()))"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd="/",
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == BUILTIN_NAMES


def _dist(where: Path, name: str, entry_points: str) -> None:
    info = where / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "entry_points.txt").write_text(entry_points)


def test_entry_points_are_read_from_the_installed_distributions(tmp_path):
    _dist(
        tmp_path / "a",
        "one",
        "[console_scripts]\nx = y:z\n\n[agentctl.stores]\n"
        "zeta = pkg_z:FORMAT\n# a comment\nalpha = pkg_a : FORMAT\n",
    )
    _dist(tmp_path / "b", "two", "[agentctl.stores]\nalpha = shadowed:FORMAT\n[other]\nbeta = no:X\n")
    found = plugins.entry_points([str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "missing")])
    assert found == [("alpha", "pkg_a : FORMAT"), ("zeta", "pkg_z:FORMAT")]


def _spec(name: str, before: tuple[str, ...] = ()) -> FormatSpec:
    return FormatSpec(
        name, name, "", frozenset({Capability.READ}), lambda t: False, "x:y", detect_before=before
    )


def test_plug_ins_come_after_the_built_ins_unless_they_say_otherwise():
    built = [_spec("langgraph"), _spec("agentos"), _spec("adk")]
    order = plugins.ordered(
        built,
        [_spec("late"), _spec("early", before=("agentos", "adk")), _spec("nowhere", before=("unknown",))],
    )
    assert [s.name for s in order] == ["langgraph", "early", "agentos", "adk", "late", "nowhere"]


def test_a_broken_plug_in_is_left_out_with_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "notes_broken.py").write_text("FORMAT = 42\nraise_me = None\n")
    _dist(
        tmp_path,
        "broken",
        "[agentctl.stores]\nbad-module = no_such_module_here:FORMAT\n"
        "not-a-spec = notes_broken:FORMAT\n"
        "agentos-again = agentctl.storage.agentos:FORMAT\n"
        "clash = tests.structure.test_plugins:CLASH\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    names = [f.name for f in plugins.load_formats()]
    assert names == BUILTIN_NAMES
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3, lines
    assert all(line.startswith("agentctl: store plug-in ") for line in lines)
    assert "'bad-module' left out: no_such_module_here:FORMAT does not load (ModuleNotFoundError" in lines[0]
    assert "'clash' left out: format 'agentos' is known already" in lines[1]
    assert "'not-a-spec' left out: notes_broken:FORMAT is a int, not a FormatSpec" in lines[2]


CLASH = _spec("agentos")

# ---- a store installed from outside agentctl ------------------------------------------

NOTES_INIT = """
from agentctl.storage.contract import Capability, FormatSpec


def _matches(tables):
    return {"id", "body"} <= tables.get("notes", set())


FORMAT = FormatSpec(name="notes", title="Notes", description="a notes(id, body) table",
                    capabilities=frozenset({Capability.READ}), matches=_matches,
                    store="agentctl_notes.store:open_notes", tables=("notes",))
"""

NOTES_STORE = '''
import sqlite3

from agentctl.model import Checkpoint, CheckpointMetadata, ThreadSummary
from agentctl.storage.contract import Store
from agentctl_notes import FORMAT

WHEN = "2026-01-01T00:00:00+00:00"


class NotesStore(Store):
    """Each note a thread of one checkpoint, `note-ID`."""

    format = FORMAT
    kind = "sqlite"

    def __init__(self, path):
        self.display_name = self.local_file = self._path = path

    def _notes(self):
        with sqlite3.connect(f"file:{self._path}?mode=ro", uri=True) as conn:
            return [(f"note-{i}", body) for i, body in conn.execute("SELECT id, body FROM notes ORDER BY id")]

    def _meta(self, tid):
        return CheckpointMetadata(thread_id=tid, checkpoint_id=tid, step=0, created_at=WHEN)

    def _body(self, tid):
        return dict(self._notes()).get(tid)

    async def thread_summaries(self, limit=50, offset=0, sort="updated", descending=True, prefix=None, **_):
        rows = [(t, b) for t, b in self._notes() if prefix is None or t.startswith(prefix)]
        return [ThreadSummary(thread_id=t, checkpoints=1, head_step=0, head_checkpoint_id=t,
                              updated_at=WHEN, head_summary=b) for t, b in rows[offset:offset + limit]]

    async def count_threads(self, prefix=None, **_):
        return len(await self.thread_summaries(10**9, prefix=prefix))

    async def thread_summary(self, thread_id):
        return next((s for s in await self.thread_summaries(10**9) if s.thread_id == thread_id), None)

    async def find_thread_ids(self, prefix, limit=10):
        return [t for t, _ in self._notes() if t.startswith(prefix)][:limit]

    find_checkpoint_ids = find_thread_ids

    async def count(self, thread_id=None):
        return len([t for t, _ in self._notes() if thread_id in (None, t)])

    async def read_thread(self, thread_id, limit=100, offset=0, descending=False):
        return [self._meta(thread_id)][offset:offset + limit] if self._body(thread_id) is not None else []

    async def get(self, checkpoint_id):
        body = self._body(checkpoint_id)
        if body is None:
            return None
        return Checkpoint(self._meta(checkpoint_id), [{"role": "user", "content": body}], {}, {})

    get_latest = get

    async def get_metadata(self, checkpoint_id):
        return self._meta(checkpoint_id) if self._body(checkpoint_id) is not None else None

    async def at_step(self, thread_id, step):
        return await self.get_metadata(thread_id) if step == 0 else None

    async def children(self, checkpoint_id):
        return []

    async def branches_of(self, thread_ids):
        return []

    async def iter_checkpoints(self, thread_ids=None, batch=500):
        for tid, _ in self._notes():
            if thread_ids is None or tid in thread_ids:
                yield await self.get(tid)

    async def search(self, text, thread_id=None, role=None, limit=50, scan=False, places=()):
        return []


def open_notes(kind, target, *, readonly=True, create=False, **_):
    return NotesStore(target)
'''

NOTES_PROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "agentctl-notes"
version = "0.1"

[project.entry-points."agentctl.stores"]
notes = "agentctl_notes:FORMAT"

[tool.setuptools]
packages = ["agentctl_notes"]
"""


@pytest.fixture(scope="module")
def notes_venv(tmp_path_factory) -> Path:
    """A venv (with the system's packages) with the tiny package agentctl-notes installed by pip."""
    root = tmp_path_factory.mktemp("plugin")
    package = root / "agentctl-notes"
    (package / "agentctl_notes").mkdir(parents=True)
    (package / "pyproject.toml").write_text(textwrap.dedent(NOTES_PROJECT))
    (package / "agentctl_notes" / "__init__.py").write_text(textwrap.dedent(NOTES_INIT))
    (package / "agentctl_notes" / "store.py").write_text(textwrap.dedent(NOTES_STORE))
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--disable-pip-version-check",
            str(package),
        ],
        check=True,
        capture_output=True,
        cwd=root,
    )
    return python


def _agentctl(python: Path | str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's agentctl
    env.pop("AGENTCTL_DB", None)
    env.pop("AGENTCTL_FORMAT", None)
    return subprocess.run(
        [str(python), "-m", "agentctl", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


def test_a_store_installed_from_outside_agentctl(notes_venv, tmp_path):
    db = tmp_path / "x.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.executemany("INSERT INTO notes (body) VALUES (?)", [("buy milk",), ("call Ada",)])
    conn.close()

    listed = _agentctl(notes_venv, "formats", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    names = [f["name"] for f in json.loads(listed.stdout)["formats"]]
    assert names == [*BUILTIN_NAMES, "notes"]  # after the built-ins

    detected = _agentctl(notes_venv, "--db", str(db), "formats", "--json", cwd=tmp_path)
    assert json.loads(detected.stdout)["database"] == {"format": "notes", "kind": "sqlite"}, detected.stderr

    threads = _agentctl(notes_venv, "--db", str(db), "threads", "list", "--json", cwd=tmp_path)
    assert threads.returncode == 0, threads.stderr
    assert threads.stderr == ""
    rows = json.loads(threads.stdout)
    rows = rows["threads"] if isinstance(rows, dict) else rows
    assert sorted((r["thread_id"], r["head_summary"]) for r in rows) == [
        ("note-1", "buy milk"),
        ("note-2", "call Ada"),
    ]

    # without the plug-in (this interpreter, the package not installed) it is no format
    plain = _agentctl(sys.executable, "--db", str(db), "threads", "list", cwd=tmp_path)
    assert plain.returncode == 6 and "matches no known format" in plain.stderr
