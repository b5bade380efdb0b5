"""The contract suite's fixture: `built`, each format's small database on each backend."""

from __future__ import annotations

import pytest

from tests.support.contract_formats import Built, FormatCase
from tests.support.contract_suite import PAIRS, build_pair


@pytest.fixture(params=PAIRS, ids=[f"{n}-{k}" for n, k in PAIRS])
async def built(request, tmp_path) -> tuple[FormatCase, Built]:
    return await build_pair(request, tmp_path)
