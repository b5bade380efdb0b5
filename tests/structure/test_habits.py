"""The habits of issue 38 item 4, kept: CI checks the formatting and the lint rules, mypy
types every def, the package ships py.typed, and the commits since the formatting sweep
have subjects under 72 characters (the detail in the body)."""

from __future__ import annotations

import re
import subprocess

from tests.support.rig import REPO

#: the formatting sweep's commit: the subjects after it are checked
SWEEP = "354d2b1"


def _pyproject() -> str:
    """pyproject.toml's text (read as text: Python 3.10, which CI's fast tier runs on, has
    no tomllib)."""
    return (REPO / "pyproject.toml").read_text(encoding="utf-8")


def test_ci_checks_the_format_and_the_lint_rules() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "ruff format --check agentctl tests bench sample_db" in ci
    assert "ruff check agentctl tests bench sample_db" in ci
    select = re.search(r"^\[tool\.ruff\.lint\][^\[]*^select = \[(.*?)\]", _pyproject(), re.M | re.S)
    assert select is not None
    assert {"E", "F", "W", "I", "B", "UP"} <= set(re.findall(r'"(\w+)"', select.group(1)))


def test_mypy_types_every_def_and_the_package_says_it_is_typed() -> None:
    project = _pyproject()
    mypy = project[project.index("[tool.mypy]") :].split("\n[", 1)[0]
    assert re.search(r"^disallow_untyped_defs = true$", mypy, re.M)
    assert (REPO / "agentctl" / "py.typed").is_file()
    assert re.search(r'^agentctl = \[.*"py\.typed".*\]$', project, re.M)


def _subjects(rev_range: str) -> list[str]:
    r = subprocess.run(["git", "log", "--format=%h %s", rev_range], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def long_subjects(lines: list[str]) -> list[str]:
    """The `HASH SUBJECT` lines whose subject is 72 characters or more."""
    return [line for line in lines if len(line.split(" ", 1)[1]) >= 72]


def test_commit_subjects_since_the_sweep_are_short() -> None:
    known = subprocess.run(["git", "cat-file", "-e", f"{SWEEP}^{{commit}}"], cwd=REPO, capture_output=True)
    # a shallow clone without the sweep: its newest commit alone
    lines = _subjects(f"{SWEEP}..HEAD") if known.returncode == 0 else _subjects("-1")
    assert long_subjects(lines) == []


def test_the_check_sees_a_long_subject() -> None:
    assert long_subjects(["abc1234 " + "x" * 72, "def5678 short"]) == ["abc1234 " + "x" * 72]
