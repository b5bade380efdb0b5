"""The contract suite's fixture: `built`, each format's small database on each backend."""

from __future__ import annotations

import pytest

from agentctl.storage import Capability, formats
from tests.support.contract_formats import CASES, Built, FormatCase
from tests.support.contract_suite import PAIRS, build_pair


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs(*what): a contract test that runs on the stores having each of "
        "`what` (a capability's name; 'cap': the test's `cap` parameter; 'append': the "
        "format's program writes a step here): the others are deselected, not skipped",
    )


def _has(name: str, what: tuple, params: dict) -> bool:
    spec = next(f for f in formats() if f.name == name)
    for w in what:
        if w == "append":
            if CASES[name].append is None:
                return False
        elif not spec.can(params["cap"] if w == "cap" else Capability(w)):
            return False
    return True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The `needs` marker: a (store, backend) pair the test does not apply to is not run
    (pytest's summary counts it as deselected), where a skip would hide it among real ones."""
    keep, drop = [], []
    for item in items:
        marker = item.get_closest_marker("needs")
        params = getattr(item, "callspec", None) and item.callspec.params
        if marker is None or not params or "built" not in params:
            keep.append(item)
            continue
        (keep if _has(params["built"][0], marker.args, params) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(params=PAIRS, ids=[f"{n}-{k}" for n, k in PAIRS])
async def built(request, tmp_path) -> tuple[FormatCase, Built]:
    return await build_pair(request, tmp_path)
