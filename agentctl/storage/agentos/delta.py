"""Delta snapshots (`SnapshotConfig(delta_snapshots=True)`, opt-in).

A delta row stores its checkpoint as RFC 6902 JSON Patches against a full row (its
*base*, a keyframe) of the same thread. The row stays a valid row of the format, and a
reader that does not know deltas sees an explicit placeholder, never a plausible but
wrong state:

- `state_blob`: `{"__agentctl_delta__": {"v": 1, "base": BASE_ID, "depth": K,
  "messages": PATCH, "state": PATCH, "tools_result": PATCH}}`
- `messages_blob`: one system message saying that this checkpoint stores only its
  changes since BASE_ID and must be read with agentctl;
- `tools_blob`: `{"__agentctl_delta__": "see state_blob"}`;
- `tags`: the snapshot's tags plus `agentctl-delta:BASE_ID` (visible to any reader;
  agentctl's reads drop it); summary, step, parent, next_node are the real ones.

agentctl's reads (`get`, `get_latest`, `iter_checkpoints`, also inside a transaction)
return the full checkpoint: the base is read and the patches applied. A delta whose base
is gone (deleted by a foreign writer) reads as a CorruptRowError naming the base.

Keyframes: a snapshot is a delta against the base of the thread's head (or against the
head itself when that is full) while fewer than `delta_keyframe_every` deltas share that
base and the delta is smaller than half the full row; otherwise it is written full.

Invariant kept by the engine: a delta's base is in the same thread. Before rows are
deleted (prune, GC, hard rewind, import replace) the surviving deltas whose base goes
are rewritten full; before a rewind moves rows to an archive thread, the deltas that
would be separated from their base are rewritten full. Undo restores deleted rows as
they were (deltas included, with their base, which the per-thread undo order restores
first); a rewritten survivor stays full (same content, same row id).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentctl.errors import CorruptRowError
from agentctl.model import Checkpoint, CheckpointMetadata
from agentctl.storage.agentos.rows import ALL_COLUMNS, DELTA_MARKER, DELTA_TAG, dumps, row_to_checkpoint

if TYPE_CHECKING:
    from agentctl.storage.agentos.protocols import Rows, Tx

VERSION = 1
_MAX_CHAIN = 64
SECTIONS = ("messages", "state", "tools_result")


def is_delta(cp: Checkpoint) -> bool:
    marker = cp.state.get(DELTA_MARKER) if isinstance(cp.state, dict) else None
    return isinstance(marker, dict) and "base" in marker


def _placeholder(base_id: str) -> list[dict[str, Any]]:
    return [
        {
            "role": "system",
            "agentctl_delta": True,
            "content": f"agentctl delta snapshot: this checkpoint stores only its changes since "
            f"checkpoint {base_id}; read it with agentctl (agentctl show <id>)",
        }
    ]


def encode(cp: Checkpoint, base: Checkpoint, depth: int) -> Checkpoint | None:
    """The delta row of `cp` against the full checkpoint `base`, or None when a delta
    would not be at least half smaller than the full row."""
    from agentctl.diff import diff_values, to_json_patch

    base_id = base.metadata.checkpoint_id
    patches = {s: to_json_patch(diff_values(getattr(base, s), getattr(cp, s))) for s in SECTIONS}
    state = {DELTA_MARKER: {"v": VERSION, "base": base_id, "depth": depth, **patches}}
    full_size = sum(len(dumps(getattr(cp, s))) for s in SECTIONS)
    if len(dumps(state)) * 2 >= full_size:
        return None
    meta = cp.metadata
    return Checkpoint(
        CheckpointMetadata(
            meta.thread_id,
            meta.checkpoint_id,
            meta.step,
            meta.parent_checkpoint_id,
            meta.created_at,
            list(meta.tags) + [DELTA_TAG + base_id],
            meta.summary,
        ),
        _placeholder(base_id),
        state,
        {DELTA_MARKER: "see state_blob"},
        cp.next_node,
    )


async def _raw(reader: Rows, checkpoint_id: str) -> Checkpoint | None:
    rows = await reader.query(f"SELECT {ALL_COLUMNS} FROM checkpoints WHERE checkpoint_id = ?", checkpoint_id)
    return row_to_checkpoint(rows[0]) if rows else None


async def resolve(reader: Rows, cp: Checkpoint, cache: dict[str, Checkpoint] | None = None) -> Checkpoint:
    """The full checkpoint of a delta row (`cp` as decoded from the row)."""
    from agentctl.diff import PatchError, apply_patch

    chain = [cp]
    current = cp
    while is_delta(current):
        base_id = str(current.state[DELTA_MARKER]["base"])
        if len(chain) > _MAX_CHAIN or any(c.metadata.checkpoint_id == base_id for c in chain):
            raise CorruptRowError(cp.metadata.checkpoint_id, "state_blob", "delta chain loops")
        base = cache.get(base_id) if cache is not None else None
        if base is None:
            base = await _raw(reader, base_id)
        if base is None:
            raise CorruptRowError(
                cp.metadata.checkpoint_id,
                "state_blob",
                f"delta snapshot whose base {base_id!r} no longer exists",
            )
        chain.append(base)
        current = base
    full = chain.pop()
    if cache is not None:
        if len(cache) >= 16:
            cache.clear()
        cache[full.metadata.checkpoint_id] = full
    while chain:
        delta = chain.pop()
        marker = delta.state[DELTA_MARKER]
        values = {}
        try:
            for s in SECTIONS:
                values[s] = apply_patch(getattr(full, s), marker.get(s) or [])
        except (PatchError, ValueError, TypeError, KeyError, IndexError) as exc:
            raise CorruptRowError(
                delta.metadata.checkpoint_id, "state_blob", f"delta does not apply to its base: {exc}"
            ) from None
        full = Checkpoint(
            delta.metadata, values["messages"], values["state"], values["tools_result"], delta.next_node
        )
    return full


async def encode_for_thread(tx: Tx, cp: Checkpoint, every: int) -> Checkpoint:
    """The row to write for a new snapshot `cp` (full, or a delta; see the module doc)."""
    thread = cp.metadata.thread_id
    rows = await tx.query(
        f"SELECT {ALL_COLUMNS} FROM checkpoints WHERE thread_id = ? "
        "ORDER BY step DESC, created_at DESC, id DESC LIMIT 1",
        thread,
    )
    if not rows:
        return cp
    try:
        head = row_to_checkpoint(rows[0])
    except CorruptRowError:
        return cp
    if is_delta(head):
        marker = head.state[DELTA_MARKER]
        depth = int(marker.get("depth", every)) + 1
        if depth >= max(int(every), 1):
            return cp
        try:
            base = await _raw(tx, str(marker["base"]))
        except CorruptRowError:
            return cp
        if base is None or is_delta(base) or base.metadata.thread_id != thread:
            return cp
    else:
        base, depth = head, 1
    return encode(cp, base, depth) or cp


def _tags_text(kind: str) -> str:
    return "tags" if kind == "sqlite" else "tags::text"


async def _deltas_in(tx: Tx, thread: str) -> list[tuple[str, str]]:
    """(checkpoint_id, base id) of the delta rows of a thread, read from their tags."""
    from agentctl.storage.agentos.rows import decode_tags_raw

    rows = await tx.query(
        f"SELECT checkpoint_id, tags FROM checkpoints WHERE thread_id = ? AND {_tags_text(tx.kind)} LIKE ?",
        thread,
        f"%{DELTA_TAG}%",
    )
    out = []
    for r in rows:
        for tag in decode_tags_raw(r["tags"]):
            if tag.startswith(DELTA_TAG):
                out.append((r["checkpoint_id"], tag[len(DELTA_TAG) :]))
    return out


async def _rehydrate(
    tx: Tx, thread: str, where: str, params: list[Any], needs: Callable[[bool, bool], bool], op: Any = None
) -> int:
    deltas = await _deltas_in(tx, thread)
    if not deltas:
        return 0
    selected = {
        r["checkpoint_id"]
        for r in await tx.query(f"SELECT checkpoint_id FROM checkpoints WHERE {where}", *params)
    }
    todo = [cid for cid, base in deltas if needs(cid in selected, base in selected)]
    for cid in todo:
        raw = await _raw(tx, cid)
        if raw is None:  # pragma: no cover - read in the same transaction
            continue
        full = await resolve(tx, raw)
        if op is None or cid in selected:  # a row of `where`: its images are the caller's
            await tx.put(full)
            continue
        from agentctl.storage.agentos import oplog  # both images: the op's undo writes the delta back

        await oplog.set_aside(tx, op, "checkpoint_id = ?", [cid], "before")
        await tx.put(full)
        await oplog.set_aside(tx, op, "checkpoint_id = ?", [cid], "after")
    return len(todo)


async def before_delete(tx: Tx, thread: str, where: str, params: list[Any], op: Any = None) -> int:
    """Rewrite full the deltas of `thread` that survive a delete of `where` but whose
    base does not (`op`: a journal op, which keeps both images of them)."""
    return await _rehydrate(tx, thread, where, params, lambda row, base: base and not row, op)


async def before_move(tx: Tx, thread: str, where: str, params: list[Any], op: Any = None) -> int:
    """Rewrite full the deltas of `thread` that a move of `where` separates from their base."""
    return await _rehydrate(tx, thread, where, params, lambda row, base: row != base, op)
