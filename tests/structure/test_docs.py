"""The manual (issue 33.18, 38.5): the site in docs/ builds with `mkdocs build --strict`
(a broken link or anchor fails it), its CLI reference has a page per command generated
from the Typer app (docs/hooks.py), and every command has a hand-written section and
every option is named on its command's own page of docs/commands/ (as sqlite-utils'
test_docs checks its commands and options against its documentation)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from tests.support.rig import REPO

DOCS = REPO / "docs"


@cache
def hooks():
    spec = importlib.util.spec_from_file_location("agentctl_docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def commands() -> list[tuple[tuple[str, ...], object]]:
    return [(path, cmd) for path, cmd, _ in hooks().commands()]


def long_options(cmd) -> list[list[str]]:
    """Each option's long names (`--read-only`, `--readonly`), --help left out."""
    out = []
    for param in cmd.params:
        names = [o for o in param.opts + param.secondary_opts if o.startswith("--")]
        if names and names != ["--help"] and not getattr(param, "hidden", False):
            out.append(names)
    return out


def hand_written() -> dict[str, str]:
    """The pages written by hand: docs/**/*.md and the README (the site's home page)."""
    pages = {
        p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8") for p in sorted(DOCS.rglob("*.md"))
    }
    pages["README.md"] = (REPO / "README.md").read_text(encoding="utf-8")
    return pages


def headings(text: str) -> list[str]:
    out, fence = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#{1,6} ", line):
            out.append(line)
    return out


def named(option: str, text: str) -> bool:
    return re.search(re.escape(option) + r"(?![\w-])", text) is not None


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"), "-d", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO), "NO_MKDOCS_2_WARNING": "1"},
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def test_the_site_builds_strict_with_a_reference_page_per_command(site):
    assert (site / "index.html").is_file()  # the README
    assert "Quick start" in (site / "index.html").read_text(encoding="utf-8")
    for path, cmd in commands():
        src = hooks().page_name(path)  # reference/index.md, reference/agentctl-log.md
        page = site / (
            src.removesuffix("index.md") if src.endswith("/index.md") else src.removesuffix(".md") + "/"
        )
        html = (page / "index.html").read_text(encoding="utf-8")
        assert "Usage: agentctl " + " ".join(path) in html, path
        for names in long_options(cmd):
            assert any(named(n, html) for n in names), (path, names)


def test_the_reference_covers_every_command_and_option():
    """What the reference pages are generated from: every command (the groups' too),
    each with its options; a command the walk missed would have no page."""
    pages = hooks().reference_pages()
    from agentctl.cli import registry

    walked = {path for path, _ in commands()}
    assert {(name,) for name in registry.COMMANDS} <= walked
    assert {
        ("threads", "list"),
        ("threads", "show"),
        ("threads", "delete"),
        ("index", "build"),
        ("index", "status"),
        ("index", "drop"),
    } <= walked
    for path, cmd in commands():
        text = pages[hooks().page_name(path)]
        for names in long_options(cmd):
            assert any(named(n, text) for n in names), (path, names)
    index = pages["reference/index.md"]
    for path, _ in commands():
        if path:
            assert "(" + hooks().page_name(path).removeprefix("reference/") + ")" in index, path


def test_every_command_has_a_hand_written_section():
    """A heading of a hand-written page names it (`# threads list / show / delete`)."""
    heads = [h for text in hand_written().values() for h in headings(text)]
    missing = [
        " ".join(path)
        for path, _ in commands()
        if path
        and not any(all(re.search(rf"\b{re.escape(word)}\b", h, re.I) for word in path) for h in heads)
    ]
    assert not missing, f"no section (a heading naming it) in docs/ or README.md for: {missing}"


def test_every_option_is_named_in_the_hand_written_docs():
    text = "\n".join(hand_written().values())
    missing = [
        f"{' '.join(('agentctl',) + path)} {names[0]}"
        for path, cmd in commands()
        for names in long_options(cmd)
        if not any(named(n, text) for n in names)
    ]
    assert not missing, f"options named nowhere in docs/ or README.md: {missing}"


COMMANDS = DOCS / "commands"


def heading_commands(heading: str) -> set[tuple[str, ...]]:
    """The commands a heading of docs/commands/ names: `# oplog, undo [OP], redo [OP],
    purge` four, `# threads list / show / delete` three of the group `threads` (a first
    part of two words that are not an argument names a group's command; the parts after
    it are the same group's)."""
    parts = [p.split() for p in re.split(r"[,/]", re.sub(r"^#+\s*", "", heading)) if p.split()]
    if not parts:
        return set()
    first = parts[0]
    group = (first[0].lower(),) if len(first) > 1 and re.fullmatch(r"[a-z][a-z-]*", first[1]) else ()
    return {
        (*group, p[0].lower()) if group and i else ((*group, first[1]) if group else (p[0].lower(),))
        for i, p in enumerate(parts)
    }


def command_pages() -> dict[tuple[str, ...], list[str]]:
    """Each command's page(s) in docs/commands/: where a heading names it (a group's:
    where its commands' are; the global options': index.md)."""
    out: dict[tuple[str, ...], list[str]] = {(): ["index.md"]}
    for page in sorted(COMMANDS.glob("*.md")):
        for h in headings(page.read_text(encoding="utf-8")):
            for path in heading_commands(h):
                for key in {path, path[:1]}:
                    if page.name not in out.setdefault(key, []):
                        out[key].append(page.name)
    return out


def test_every_option_is_on_its_commands_page():
    """As sqlite-utils' test_docs: every option of every command is named on THAT
    command's page of docs/commands/ (the page whose heading names the command), not
    just somewhere in the docs; each command with options has exactly one page."""
    pages = command_pages()
    text = {p.name: p.read_text(encoding="utf-8") for p in COMMANDS.glob("*.md")}
    missing, pageless = [], []
    for path, cmd in commands():
        options = long_options(cmd)
        own = pages.get(path, [])
        if not options:
            continue
        if len(own) != 1:
            pageless.append((" ".join(path), own))
            continue
        missing += [
            f"{' '.join(('agentctl',) + path)} {names[0]} (docs/commands/{own[0]})"
            for names in options
            if not any(named(n, text[own[0]]) for n in names)
        ]
    assert not pageless and not missing, (
        f"commands without one page of their own in docs/commands/: "
        f"{pageless}; options not named on their command's page: {missing}"
    )


def test_ci_builds_the_site_strict():
    assert "mkdocs build --strict" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
