"""What the storage contract suite's files share (tests/formats/contract/): the pairs
they run on, the `built` fixture's body, and their small helpers.

Every store joins the suites by its entry in `contract_formats.CASES` (the one list):
the contract suite (tests/formats/contract/), its atomicity suite (test_atomicity.py),
its dry-run-equals-write suite (test_dry_run.py) and, with `FormatCase.hostile`, the
hostile-rows suite (tests/reliability/test_reliability_hostile.py) run on it without a
change of theirs (tests/README.md: how a new store joins). What a store lacks (Postgres,
writes, `rewind --hard`, its program's next step, a bundled sample) is said by its
case's fields, from which the suites derive what they run (a test that needs a capability
or the program's next step says so with `@pytest.mark.needs(...)`: the pairs it does
not apply to are deselected, not skipped; tests/formats/contract/conftest.py).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from agentctl.model import Checkpoint
from agentctl.storage import Capability, open_store
from tests.support.contract_formats import CASES, Built, FormatCase, dump

#: every (store, backend) the suites run: each case on the backends it has (FormatCase.kinds)
PAIRS = [(name, kind) for name, case in CASES.items() for kind in case.kinds]
#: those of the stores that write (FormatCase.writes): the atomicity suite's
WRITING = [(name, kind) for name, kind in PAIRS if CASES[name].writes]
WRITES = (Capability.REWIND, Capability.BRANCH, Capability.MERGE, Capability.PRUNE, Capability.DELETE)


def _needs(case: FormatCase) -> None:
    for module in case.needs:
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"{module} is not installed")
        pytest.importorskip(module)


async def build_pair(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[FormatCase, Built]:
    """The `built` fixture of a (format, kind) pair: the format's database, a copy of the
    one its program wrote for this run (tests/formats/conftest.py's builds)."""
    name, kind = request.param
    case = CASES[name]
    _needs(case)
    if kind == "sqlite":
        return case, await request.getfixturevalue("sqlite_builds").copy(case, tmp_path / "db.sqlite")
    return case, await case.build(kind, request.getfixturevalue("pg_dsn"))


def content(case: FormatCase, cp: Checkpoint):
    return case.content(cp)


async def data_rows(case: FormatCase, url: str) -> dict:
    """The format's own tables, row for row (agentctl's side tables left out)."""
    return await dump(url, side_tables=False, volatile=case.volatile)


def _ok(r, codes=(0,)) -> None:
    assert r.exit_code in codes, (r.exit_code, r.stdout, r.stderr)
    assert "Traceback" not in r.stdout + r.stderr


async def _cli_branch_to_merge(case: FormatCase, b: Built) -> str:
    assert case.append is not None, f"{case.name} merges: its case needs an append"
    async with open_store(b.url, readonly=False) as store:
        branch = await store.history().branch(
            (await store.get_latest(b.main)).metadata.checkpoint_id, "cli-m"
        )
    await case.append(b.url, branch, "from the cli branch")
    return branch
