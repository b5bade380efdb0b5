"""Declared dependency ranges are true (issue 14): agentctl uses no private module of
Typer or click, and .ci/constraints-lowest.txt pins exactly the lower bounds of
pyproject.toml, which .ci/run installs for a second test run."""

from __future__ import annotations

import re
import sys

import pytest

from tests.support.rig import REPO


def requirements() -> dict[str, str]:
    """pyproject's dependencies (and the test-core extra, what the lowest-versions run
    installs): name -> specifier."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        tomllib = pytest.importorskip("tomli")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    out = {}
    for req in project["dependencies"] + project["optional-dependencies"]["test-core"]:
        name, spec = re.match(r"^([A-Za-z0-9_.-]+)\s*(.*)$", req).groups()
        out[name.lower()] = spec
    return out


def test_no_private_typer_or_click_modules():
    """`typer._click` exists only in Typer 0.26 and later (before, Typer uses click):
    importing it crashed every command on an older Typer."""
    used = []
    for path in (REPO / "agentctl").rglob("*.py"):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\btyper\._click\b|\bfrom click\._|\bimport click\._", line):
                used.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not used, "\n".join(used)


def test_lowest_constraints_are_the_declared_lower_bounds():
    pins = {}
    for line in (REPO / ".ci" / "constraints-lowest.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    bounds = {}
    for name, spec in requirements().items():
        lower = re.search(r">=\s*([0-9][0-9A-Za-z.]*)", spec)
        assert lower, f"{name} has no lower bound in pyproject.toml"
        bounds[name] = lower.group(1)
    assert set(pins) == set(bounds)
    for name, version in pins.items():
        want = bounds[name].split(".")
        assert version.split(".")[: len(want)] == want and all(
            p == "0" for p in version.split(".")[len(want) :]
        ), (name, version, bounds[name])


def test_ci_runs_the_tests_again_on_the_lowest_versions():
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert '-m venv "$lowest"' in script and "-c .ci/constraints-lowest.txt" in script


def test_installed_versions_are_in_the_declared_ranges():
    from importlib.metadata import version

    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", v)[:3])

    for name, spec in requirements().items():
        have = key(version(name))
        for op, bound in re.findall(r"(>=|<)\s*([0-9][0-9.]*)", spec):
            assert (have >= key(bound)) if op == ">=" else (have < key(bound)), (name, version(name), spec)


def test_ci_runs_the_lowest_and_newest_claimed_python():
    """The package claims `requires-python` (README: "Python 3.10 or newer"): .ci/run installs
    and runs the quick start and the lowest-versions tests on that Python, the quick start
    on the newest, and the fast tier on both (issue 33: `pip install .` failed on 3.10
    while the README claimed it)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        tomllib = pytest.importorskip("tomli")
    claim = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    lowest = re.fullmatch(r">=\s*(3\.\d+)", claim).group(1)
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert f"LOWEST_PY={lowest}\n" in script
    assert re.search(r"^NEWEST_PY=3\.\d+$", script, re.M)
    assert 'quick_start "$(find_python "$NEWEST_PY")"' in script
    assert '"$(find_python "$LOWEST_PY")" -m venv "$lowest"' in script
    # the fast tier on both (tests/README.md)
    assert 'for v in "$LOWEST_PY" "$NEWEST_PY"; do' in script and '-m "not slow"' in script
    assert f"Python {lowest} or newer" in (REPO / "README.md").read_text(encoding="utf-8")
