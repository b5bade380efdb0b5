"""Property-based fuzzing (hypothesis) of what users type and what databases hold:
references, whole-checkpoint diffs and their JSON output applied back, merges through
the engine. (Value-level diff and merge properties live in tests/unit/test_diff.py / test_merge.py.)
"""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentctl.backends import open_backend
from agentctl.diff import (
    MISSING,
    Change,
    apply_patch,
    checkpoint_sections,
    diff_checkpoints,
    patch_by_section,
    to_json_patch,
)
from agentctl.errors import AgentctlError, ExitCode
from agentctl.model import Checkpoint, CheckpointMetadata
from agentctl.refs import resolve, resolve_thread
from tests.support.helpers import make_cp, same
from tests.support.rig import run_sync
from tests.support.sampledb import cli, fresh_schema, sample_ro  # noqa: F401  (fixture)
from tests.support.strategies import KEYS, json_values, scalars

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
FEW = settings(FUZZ, max_examples=12)
CLI_FEW = settings(FUZZ, max_examples=8)  # each example runs several commands

MAIN = "coder-fix-flaky-test"
KNOWN = [
    MAIN,
    "coder-fix-flaky-test-branch-retry-backoff-70e7",
    "loop-research-7",
    "support-1042",
    "ckpt-coder-fix-flaky-test-6-4b9fe6",
    "ckpt-loop-research-7-000240",
    "ckpt-",
]
ATOMS = st.sampled_from(
    KNOWN
    + [
        "@",
        "~",
        "@-1",
        "~0",
        "-",
        "'",
        '"',
        "%",
        "_",
        "\\",
        "\x00",
        "\x1b[31m",
        "\x1b]0;t\x07",
        "\r",
        ";",
        "--",
        "' OR 1=1 --",
        "'; DROP TABLE checkpoints; --",
        "99999999999999999999999",
        "2147483648",
        "9223372036854775808",
        "-1",
        "0",
        "1",
        "13",
        " ",
        "\t",
        "中",
        "\udcff",
        "\ud800",
        "[bold]",
        "*",
        "?",
        "$1",
    ]
)
REFS = st.one_of(
    st.text(max_size=12), st.lists(st.one_of(ATOMS, st.text(max_size=3)), max_size=6).map("".join)
)


class Loop:
    """One event loop and one open backend for all examples of a property."""

    def __init__(self, url: str):
        self.loop = asyncio.new_event_loop()
        self.cm = open_backend(url)
        self.backend = self.loop.run_until_complete(self.cm.__aenter__())

    def __call__(self, coro):
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        self.loop.run_until_complete(self.cm.__aexit__(None, None, None))
        self.loop.close()


@pytest.fixture
def sample_loop(sample_ro):  # noqa: F811
    lp = Loop(sample_ro)
    yield lp
    lp.close()


# --------------------------------------------------------------------------- references


@FUZZ
@given(ref=REFS)
def test_fuzz_any_reference_resolves_or_raises_a_clean_error(sample_loop, ref):
    lp = sample_loop
    for fn in (resolve, resolve_thread):
        try:
            got = lp(fn(lp.backend, ref))
        except AgentctlError as exc:
            assert exc.exit_code in (ExitCode.USAGE, ExitCode.NOT_FOUND), (ref, exc)
            assert str(exc)
            continue
        if fn is resolve:
            assert isinstance(got, CheckpointMetadata)
            assert lp(lp.backend.get_metadata(got.checkpoint_id)) == got
        else:
            assert lp(lp.backend.count(got)) > 0
    stripped = ref.strip()
    if stripped in KNOWN[4:6]:  # a full id always names itself
        assert lp(resolve(lp.backend, ref)).checkpoint_id == stripped


def test_fuzz_reference_edge_cases(sample_loop):
    """Cases found by the fuzzer, kept as examples."""
    lp = sample_loop
    for ref in (
        MAIN + "@99999999999999999999999",
        MAIN + "@-99999999999999999999",
        MAIN + "@2147483648",
        MAIN + "~99999999999999999999999",
        "a\x00b",
    ):
        with pytest.raises(AgentctlError) as err:
            lp(resolve(lp.backend, ref))
        assert err.value.exit_code == ExitCode.NOT_FOUND, ref
    with pytest.raises(AgentctlError, match="not valid UTF-8") as err:
        lp(resolve(lp.backend, "ckpt-\udcff"))
    assert err.value.exit_code == ExitCode.USAGE
    with pytest.raises(AgentctlError, match="not valid UTF-8"):
        lp(resolve_thread(lp.backend, "\udcff"))


@CLI_FEW
@given(ref=REFS)
def test_fuzz_references_on_the_command_line(sample_ro, ref):  # noqa: F811
    """`show REF` exits 0, 2 or 3 with one clean line on stderr; never a traceback."""
    r = cli(sample_ro, "show", "--json", "--", ref)
    assert r.exit_code in (0, ExitCode.USAGE, ExitCode.NOT_FOUND), (ref, r.exit_code, r.stderr)
    if r.exit_code == 0:
        assert json.loads(r.stdout)["metadata"]["checkpoint_id"]
    else:
        assert r.stdout == ""
        line = r.stderr.rstrip("\n")
        assert "\n" not in line and "Traceback" not in line and "\x1b" not in line, r.stderr
        assert "\x00" not in r.stderr and "\r" not in r.stderr
    r = cli(sample_ro, "log", "--json", "--", ref)
    assert r.exit_code in (0, ExitCode.USAGE, ExitCode.NOT_FOUND), (ref, r.exit_code, r.stderr)


# --------------------------------------------------------------------------- whole checkpoints

TEXT = st.text(max_size=8)
# Smaller than test_diff's JSON: a checkpoint holds several of them.
SMALL_JSON = json_values(scalars(text_size=8), KEYS, width=3, max_leaves=8)
MESSAGE = st.one_of(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant", "tool", "system"]),
            "content": st.one_of(TEXT, SMALL_JSON),
        },
        optional={"tool_calls": st.lists(st.dictionaries(KEYS, SMALL_JSON, max_size=2), max_size=2)},
    ),
    SMALL_JSON,
)
OBJECTS = st.dictionaries(KEYS, SMALL_JSON, max_size=4)


@st.composite
def checkpoints(draw, *, storable: bool = False):
    """A checkpoint with arbitrary content; `storable`: what every backend can store
    (no NUL in text, JSONB's limits) and a fresh id."""
    text = TEXT.filter(lambda s: "\x00" not in s) if storable else TEXT

    def clean(value):
        return json.loads(json.dumps(value).replace("\\u0000", ""))

    meta = CheckpointMetadata(
        thread_id=("fuzz-" + uuid.uuid4().hex[:8]) if storable else draw(text),
        checkpoint_id=("ckpt-fuzz-" + uuid.uuid4().hex) if storable else draw(text),
        parent_checkpoint_id=None if storable else draw(st.none() | text),
        step=draw(st.integers(0, 2**31 - 1)),
        created_at=f"2026-0{draw(st.integers(1, 9))}-1{draw(st.integers(0, 9))}T10:00:00+00:00",
        tags=draw(st.lists(text, max_size=4)),
        summary=draw(text),
    )
    messages = draw(st.lists(MESSAGE, max_size=4))
    state, tools = draw(OBJECTS), draw(OBJECTS)
    if storable:
        messages, state, tools = clean(messages), clean(state), clean(tools)
    return Checkpoint(meta, messages, state, tools, draw(text))


@st.composite
def checkpoint_pairs(draw):
    a = draw(checkpoints())
    if draw(st.booleans()):
        return a, draw(checkpoints())
    # b shares parts of a: the common case of consecutive snapshots
    b = draw(checkpoints())
    return a, Checkpoint(
        CheckpointMetadata(**{**vars(a.metadata), "step": b.metadata.step, "tags": b.metadata.tags}),
        a.messages + b.messages[:1],
        {**a.state, **b.state} if draw(st.booleans()) else a.state,
        b.tools_result,
        a.next_node,
    )


def from_change_dicts(rows: list[dict]) -> list[Change]:
    """The changes back from their `--json` / to_dict() form (None stands for MISSING
    only where the op says a side is absent)."""
    return [
        Change(
            r["section"],
            r["path"],
            r["op"],
            MISSING if r["op"] == "added" else r["old"],
            MISSING if r["op"] == "removed" else r["new"],
        )
        for r in rows
    ]


def apply_sections(sections: dict, patches: dict) -> dict:
    return {name: apply_patch(value, patches.get(name, [])) for name, value in sections.items()}


@FUZZ
@given(checkpoint_pairs())
def test_fuzz_diff_checkpoints_patches_apply_back(pair):
    a, b = pair
    changes = diff_checkpoints(a, b)
    want = checkpoint_sections(b)
    # the patches, also after a trip through JSON (what `diff --patch` prints)
    patches = patch_by_section(changes)
    assert same(apply_sections(checkpoint_sections(a), patches), want)
    assert same(apply_sections(checkpoint_sections(a), json.loads(json.dumps(patches))), want)
    # the change list as `diff --json` prints it carries enough to rebuild the patches
    rows = json.loads(json.dumps([c.to_dict() for c in changes]))
    rebuilt = patch_by_section(from_change_dicts(rows))
    assert same(apply_sections(checkpoint_sections(a), rebuilt), want)
    # the to_dict() form diffs the same, and a checkpoint equals itself
    assert diff_checkpoints(a.to_dict(), b.to_dict()) == changes
    assert diff_checkpoints(b, b) == []
    assert (changes == []) is same(checkpoint_sections(a), want)
    for name in patches:
        assert to_json_patch([c for c in changes if c.section == name]) == patches[name]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def scratch_url(request, tmp_path_factory):
    """An empty checkpoint database shared by a module's examples."""
    if request.param == "sqlite":
        url = str(tmp_path_factory.mktemp("fuzz") / "fuzz.db")
        run_sync(lambda: _create(url))
        yield url
        return
    with fresh_schema(request.getfixturevalue("pg_base_dsn"), "fz_") as url:
        run_sync(lambda: _create(url))
        yield url


async def _create(url: str) -> None:
    async with open_backend(url, readonly=False, create=True):
        pass


async def _put(url: str, *cps: Checkpoint) -> None:
    async with open_backend(url, readonly=False) as b:
        async with b.transaction() as tx:
            for cp in cps:
                await tx.put(cp)


def show_json(url: str, ref: str) -> dict:
    r = cli(url, "show", ref, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


@CLI_FEW
@given(checkpoints(storable=True), checkpoints(storable=True))
def test_fuzz_cli_diff_output_applies_back(scratch_url, a, b):
    """What `diff --patch` and `diff --json` print turns `show A --json` into
    `show B --json`, on each backend (whatever the database normalised on the way)."""
    run_sync(lambda: _put(scratch_url, a, b))
    ida, idb = a.metadata.checkpoint_id, b.metadata.checkpoint_id
    got_a, got_b = show_json(scratch_url, ida), show_json(scratch_url, idb)
    r = cli(scratch_url, "diff", ida, idb, "--patch")
    assert r.exit_code == 0, r.stderr
    patches = json.loads(r.stdout)
    want = checkpoint_sections(got_b)
    assert same(apply_sections(checkpoint_sections(got_a), patches), want)
    r = cli(scratch_url, "diff", ida, idb, "--json")
    assert r.exit_code == 0, r.stderr
    rebuilt = patch_by_section(from_change_dicts(json.loads(r.stdout)))
    assert same(apply_sections(checkpoint_sections(got_a), rebuilt), want)
    r = cli(scratch_url, "diff", idb, idb, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout) == []


# --------------------------------------------------------------------------- merges through the engine

_names = (f"m{i}" for i in itertools.count())

# JSON every backend stores and reads back unchanged (JSONB: no NUL, no float drift).
DB_TEXT = st.text(max_size=4).filter(lambda s: "\x00" not in s)
DB_JSON = json_values(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | DB_TEXT, DB_TEXT, width=3, max_leaves=12
)
DB_STATES = st.dictionaries(DB_TEXT, DB_JSON, max_size=5)


@st.composite
def disjoint_edits(draw):
    """(base, ours, theirs, expected): ours and theirs change different top-level keys
    of a state, so a three-way merge has nothing to decide."""
    base = draw(DB_STATES)
    keys = list(base) + [f"new-{i}" for i in range(draw(st.integers(0, 3)))]
    ours, theirs, expected = dict(base), dict(base), dict(base)
    for key in keys:
        side = draw(st.sampled_from(["ours", "theirs", "none"]))
        if side == "none":
            continue
        target = ours if side == "ours" else theirs
        if key in base and draw(st.booleans()):
            del target[key]
            del expected[key]
        else:
            target[key] = expected[key] = draw(DB_JSON)
    return base, ours, theirs, expected


async def _merge_case(url: str, base: dict, ours: dict, theirs: dict, strategy: str):
    """A thread at `base`, then `ours`; a branch from base, then `theirs`; merged."""
    from agentctl.engine import CheckpointEngine

    thread = "fz-" + next(_names) + "-" + uuid.uuid4().hex[:6]
    async with open_backend(url, readonly=False) as b:
        engine = CheckpointEngine(b)
        root = make_cp(thread, 1, cid=f"ckpt-{thread}-1", state=base)
        await b.put(root)
        branch = await engine.branch(root.metadata.checkpoint_id, "x")
        await b.put(
            make_cp(thread, 2, cid=f"ckpt-{thread}-2", parent=root.metadata.checkpoint_id, state=ours)
        )
        head = await b.get_latest(branch)
        await b.put(
            make_cp(
                branch,
                head.metadata.step + 1,
                cid=f"ckpt-{branch}-t",
                parent=head.metadata.checkpoint_id,
                state=theirs,
            )
        )
        if (await engine.plan_merge(branch, thread, strategy=strategy)).up_to_date:
            # the merge would change nothing in the target's head: nothing is written,
            # and the head (ours) is what the merge would have been
            from agentctl.errors import OperationError

            with pytest.raises(OperationError, match="nothing to merge"):
                await engine.merge_branch(branch, thread, strategy=strategy)
            latest = await b.get_latest(thread)
            assert latest.metadata.checkpoint_id == f"ckpt-{thread}-2"
            return latest, latest
        cid = await engine.merge_branch(branch, thread, strategy=strategy)
        return await b.get(cid), await b.get_latest(thread)


@FEW
@given(disjoint_edits(), st.sampled_from(["three-way", "ours", "theirs"]))
def test_fuzz_engine_merge_of_disjoint_changes_has_no_conflict(scratch_url, edits, strategy):
    base, ours, theirs, expected = edits
    merged, head = run_sync(lambda: _merge_case(scratch_url, base, ours, theirs, strategy))
    assert head.metadata.checkpoint_id == merged.metadata.checkpoint_id
    assert same(merged.state, expected), (merged.state, expected)


@FEW
@given(DB_STATES, DB_STATES, DB_STATES, st.sampled_from(["ours", "theirs"]))
def test_fuzz_engine_merge_with_a_side_strategy_is_total(scratch_url, base, ours, theirs, strategy):
    """Any three states: `ours` / `theirs` never raise a conflict; the merge checkpoint
    is the new head and holds the pure merge of the three."""
    from agentctl.merge import three_way_merge

    merged, head = run_sync(lambda: _merge_case(scratch_url, base, ours, theirs, strategy))
    assert head.metadata.checkpoint_id == merged.metadata.checkpoint_id
    assert same(merged.state, three_way_merge(base, ours, theirs, strategy).value)
