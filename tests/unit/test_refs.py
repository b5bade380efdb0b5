"""Checkpoint and thread references (agentctl.refs) on SQLite and Postgres."""

from __future__ import annotations

import pytest

from agentctl.backends import open_backend
from agentctl.errors import AmbiguousReference, CheckpointNotFound, ExitCode, ThreadNotFound, UsageError
from agentctl.refs import resolve, resolve_thread
from tests.support.helpers import make_cp
from tests.support.sampledb import sample_ro  # noqa: F401  (fixture)

MAIN = "coder-fix-flaky-test"
BRANCH = "coder-fix-flaky-test-branch-retry-backoff-70e7"


async def ref_id(url: str, ref: str) -> str:
    async with open_backend(url) as b:
        return (await resolve(b, ref)).checkpoint_id


async def test_forms(sample_ro):  # noqa: F811
    assert (
        await ref_id(sample_ro, "ckpt-coder-fix-flaky-test-6-4b9fe6") == "ckpt-coder-fix-flaky-test-6-4b9fe6"
    )
    assert await ref_id(sample_ro, MAIN) == "ckpt-coder-fix-flaky-test-13-7fe041"
    assert await ref_id(sample_ro, MAIN + "~1") == "ckpt-coder-fix-flaky-test-12-a716b2"
    assert await ref_id(sample_ro, MAIN + "~") == "ckpt-coder-fix-flaky-test-12-a716b2"
    assert await ref_id(sample_ro, MAIN + "~0") == "ckpt-coder-fix-flaky-test-13-7fe041"
    assert await ref_id(sample_ro, MAIN + "~12") == "ckpt-coder-fix-flaky-test-1-9394a7"
    assert await ref_id(sample_ro, MAIN + "@6") == "ckpt-coder-fix-flaky-test-6-4b9fe6"
    assert await ref_id(sample_ro, BRANCH + "@0") == "ckpt-coder-fix-flaky-test-branch-retry-backoff-70e7-0"
    # a unique prefix
    assert await ref_id(sample_ro, "ckpt-coder-fix-flaky-test-6-") == "ckpt-coder-fix-flaky-test-6-4b9fe6"
    assert await ref_id(sample_ro, "  ckpt-loop-research-7-000240 ") == "ckpt-loop-research-7-000240"


async def test_ambiguous_prefix_lists_candidates(sample_ro):  # noqa: F811
    with pytest.raises(AmbiguousReference) as err:
        await ref_id(sample_ro, "ckpt-coder-fix-flaky-test-1")
    assert err.value.exit_code == ExitCode.USAGE
    assert "ckpt-coder-fix-flaky-test-1-9394a7" in err.value.candidates
    assert "ckpt-coder-fix-flaky-test-13-7fe041" in err.value.candidates
    with pytest.raises(AmbiguousReference) as err:
        await ref_id(sample_ro, "ckpt-")
    assert err.value.candidates[-1] == "…" and len(err.value.candidates) == 11


async def test_not_found_names_closest(sample_ro):  # noqa: F811
    with pytest.raises(CheckpointNotFound) as err:
        await ref_id(sample_ro, "ckpt-coder-fix-flaky-test-6-4b9fe7")
    assert err.value.exit_code == ExitCode.NOT_FOUND
    assert err.value.suggestions[0] == "ckpt-coder-fix-flaky-test-6-4b9fe6"
    with pytest.raises(CheckpointNotFound) as err:
        await ref_id(sample_ro, "coder-fix-flaky-tset")
    assert MAIN in err.value.suggestions
    with pytest.raises(CheckpointNotFound) as err:
        await ref_id(sample_ro, MAIN + "@99")
    assert err.value.suggestions == [MAIN + "@1", MAIN + "@13"]
    with pytest.raises(CheckpointNotFound) as err:
        await ref_id(sample_ro, MAIN + "~13")
    assert "13" in str(err.value)
    with pytest.raises(ThreadNotFound) as err:
        await ref_id(sample_ro, "suport-1042@1")
    assert "support-1042" in err.value.suggestions
    with pytest.raises(UsageError):
        await ref_id(sample_ro, "   ")


async def test_resolve_thread(sample_ro):  # noqa: F811
    async with open_backend(sample_ro) as b:
        assert await resolve_thread(b, MAIN) == MAIN  # exact, although it prefixes the branch
        assert await resolve_thread(b, "coder-add") == "coder-add-cli-flag"
        assert await resolve_thread(b, "ckpt-coder-fix-flaky-test-6-4b9fe6") == MAIN
        assert await resolve_thread(b, BRANCH + "~1") == BRANCH
        with pytest.raises(AmbiguousReference) as err:
            await resolve_thread(b, "support")
        assert err.value.candidates == ["support-1042", "support-1043", "support-1044"]
        with pytest.raises(ThreadNotFound) as err:
            await resolve_thread(b, "suport-1042")
        assert err.value.suggestions[0] == "support-1042"


async def test_odd_names_and_duplicate_steps(db_url):
    """Thread ids containing @ and ~ resolve as threads first; a repeated step picks the
    last row in thread order, as the head does."""
    async with open_backend(db_url, readonly=False, create=True) as b:
        await b.put(make_cp("a@1", 0, cid="x0"))
        await b.put(make_cp("a@1", 1, cid="x1", parent="x0"))
        await b.put(make_cp("t~2", 0, cid="y0"))
        await b.put(make_cp("dup", 1, cid="d1", created_at="2026-03-01T10:00:00+00:00"))
        await b.put(make_cp("dup", 1, cid="d2", created_at="2026-03-01T10:00:01+00:00"))
        assert (await resolve(b, "a@1")).checkpoint_id == "x1"
        assert (await resolve(b, "a@1@0")).checkpoint_id == "x0"
        assert (await resolve(b, "a@1~1")).checkpoint_id == "x0"
        assert (await resolve(b, "t~2")).checkpoint_id == "y0"
        assert (await resolve(b, "dup@1")).checkpoint_id == "d2"
        assert (await resolve(b, "dup")).checkpoint_id == "d2"
        assert (await resolve(b, "dup~1")).checkpoint_id == "d1"
        # a prefix with LIKE wildcards is taken literally
        with pytest.raises(CheckpointNotFound):
            await resolve(b, "x%")
        with pytest.raises(CheckpointNotFound):
            await resolve(b, "_1")
