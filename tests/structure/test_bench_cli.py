"""bench/ works for a newcomer (issue 16): the generators make their folders, and
`bench/run.py --list` / `--help` need no database; a figure whose database is missing
names the command that makes it and is skipped (exit 3). Cheap: a 500-row database,
no figure is measured (that would compile the checkout and write bench/data/)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.rig import REPO

RUN = [sys.executable, str(REPO / "bench" / "run.py")]


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)


def _missing_dbs(tmp: Path) -> list[str]:
    """Every database option pointed at a path that does not exist."""
    return [
        "--db",
        str(tmp / "no" / "bench.db"),
        "--prune-db",
        str(tmp / "no" / "prune.db"),
        "--indexed-db",
        str(tmp / "no" / "indexed.db"),
        "--article-db",
        str(tmp / "no" / "a.db"),
        "--langgraph-db",
        str(tmp / "no" / "lg.db"),
        "--langgraph-prune-db",
        str(tmp / "no" / "lgp.db"),
        "--sdk-openai-db",
        str(tmp / "no" / "oa.db"),
        "--sdk-adk-db",
        str(tmp / "no" / "adk.db"),
        "--pg-meta",
        str(tmp / "no" / "pg.meta.json"),
    ]


def test_help_and_list_without_any_database(tmp_path) -> None:
    helped = _run([*RUN, "--help"], tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert "--issue16" in helped.stdout and "--list" in helped.stdout

    listed = _run([*RUN, "--list", *_missing_dbs(tmp_path)], tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()}
    # every figure of issue 16's table is listed, each saying what makes its database
    for key in (
        "show",
        "log-all",
        "tree-long",
        "prune",
        "prune-floor",
        "show-pg",
        "diff-pg",
        "log-pg",
        "article-show",
        "lg-show",
        "lg-prune-floor",
        "sdk-adk-show",
    ):
        assert key in rows, (key, listed.stdout)
        assert "[skipped: " in rows[key], rows[key]
    assert "make it with: python bench/make_db.py sqlite" in rows["show"]
    assert "--long-steps 100000" in rows["prune-floor"]
    assert "--pg DSN" in rows["show-pg"] and "--pg-start" in rows["show-pg"]
    assert "bench/make_langgraph_db.py" in rows["lg-show"]
    assert "[skipped" not in rows["help"]  # needs no database
    assert not (tmp_path / "no").exists()  # listing creates nothing


def test_missing_database_is_one_line_and_exit_3(tmp_path) -> None:
    proc = _run([*RUN, "--only", "show,prune-floor", "--runs", "1", *_missing_dbs(tmp_path)], tmp_path)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 2, proc.stderr
    assert lines[0].startswith("show skipped: ") and "python bench/make_db.py sqlite" in lines[0]
    assert lines[1].startswith("prune-floor skipped: ") and "--long-steps 100000" in lines[1]


def test_tiny_make_db_into_a_new_folder_then_list(tmp_path) -> None:
    db = tmp_path / "new" / "folder" / "small.db"
    made = _run(
        [
            sys.executable,
            str(REPO / "bench" / "make_db.py"),
            "sqlite",
            str(db),
            "--threads",
            "10",
            "--checkpoints",
            "500",
            "--big-mb",
            "0.2",
        ],
        tmp_path,
    )
    assert made.returncode == 0, made.stderr
    meta = json.loads(Path(str(db) + ".meta.json").read_text())
    assert meta["rows"] == 500 and meta["long_thread"] == "long-thread"
    assert json.loads(made.stdout) == meta

    listed = _run([*RUN, "--list", *_missing_dbs(tmp_path)[2:], "--db", str(db)], tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()}
    for key in ("threads", "show", "diff", "log", "log-all", "tree-long"):
        assert "[skipped" not in rows[key], rows[key]
    assert "[skipped" in rows["prune"]  # its own database is still missing


def test_prune_live_writer_help(tmp_path) -> None:
    """bench/prune_live_writer.py (issue 22's prune-vs-live-writer figure) answers --help
    without a database (not run here: it makes 100k-row databases)."""
    helped = _run([sys.executable, str(REPO / "bench" / "prune_live_writer.py"), "--help"], tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert "--pg-start" in helped.stdout and "--keep-last" in helped.stdout


def test_readme_starts_with_the_current_figures(tmp_path) -> None:
    """bench/README.md opens with one table of the current figures (issue 33.19): each
    target with its latest figure, the run it comes from (a dated section below), its
    floor, the ratio, whether it is met and the command that reproduces it; each figure
    that command names is one `bench/run.py` has."""
    import re

    text = (REPO / "bench" / "README.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## (.+)$", text, re.M)
    assert sections[0] == "Current figures"
    table = text[text.index("## Current figures") : text.index("## " + sections[1])]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| target")]
    assert len(rows) >= 25
    listed = _run(
        [*RUN, "--list", *_missing_dbs(tmp_path), "--pg", "postgresql://nobody@127.0.0.1:1/none"], tmp_path
    )
    assert listed.returncode == 0, listed.stderr
    figures = {line.split()[0] for line in listed.stdout.splitlines() if line.strip()}
    dated = set(re.findall(r"^### (\d{4}-\d\d-\d\d) ", text, re.M))
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert len(cells) == 7 and all(cells), row
        target, latest, when, floor, ratio, met, reproduce = cells
        assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d", when) and when[:10] in dated, row
        assert re.search(r"\b(yes|no)\b|at the limit", met), row
        assert "bench/" in reproduce or reproduce.startswith("as above"), row
        for keys in re.findall(r"--only ([\w,-]+)", reproduce):
            assert set(keys.split(",")) <= figures, (row, set(keys.split(",")) - figures)
