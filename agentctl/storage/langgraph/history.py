"""Writes on LangGraph's checkpoint tables (SQLite and Postgres savers): rewind, branch,
merge, prune, threads delete, edit, the record of a run. Each is one transaction on the
journal (agentctl/storage/journal/): the rows it deletes and inserts, as row changes of
`checkpoints`, `writes` / `checkpoint_writes` and (Postgres) `checkpoint_blobs`, each
keyed by its primary key with `thread_id` as the thread column; undo and redo are the
journal's (a prune's undo also thread by thread: `undo OP --thread T`). They refuse when
a thread the operation wrote changed since (the fingerprint: the count and greatest id
of its checkpoints, the count of its pending writes and blobs), e.g. because LangGraph
ran on it. A branch's and a merge's op name only the thread they wrote (the branch, the
thread merged into): their undo does not care what the source did since.

The previous release's op log (`agentctl_langgraph_oplog` and its trash tables) is moved
into the journal by the first write (`migrate`, see `legacy.py`).

`rewind REF` is LangGraph's own time travel, made the head of the thread: LangGraph
resumes a thread from its latest checkpoint, so agentctl writes a NEW checkpoint copying
REF, as LangGraph's `update_state(REF config, None, as_node="__copy__")` does: `source`
"fork", step = REF's step + 1, parent = REF's parent, the same channel values and
channel versions (so no blob is copied on Postgres), a fresh id. LangGraph's replay
(`graph.invoke(None, {... "checkpoint_id": REF})`) also writes a fork first, but as a
child of REF; agentctl takes REF's parent because a DeltaChannel's value is rebuilt by
walking the parent chain and replaying each ancestor's pending writes: under REF the
walk would also replay REF's own pending writes (the abandoned run's next step), which
LangGraph's replay avoids by snapshotting the channel through the graph's reducer --
something agentctl cannot run. With REF's parent as parent the fork is rebuilt exactly
as REF is. Resuming the thread then gives what LangGraph's replay from REF gives (the
tests check it). The only pending writes that go with it are REF's "null task"
writes (`update_state`/`Command` input, task id 0000...) but for `__resume__` and
`__interrupt__` (time travel re-asks an interrupt, as LangGraph's replay drops those
too): a task's writes are keyed by a task id LangGraph derives from the checkpoint's id,
so REF's task writes would never be matched on the fork (LangGraph's own fork drops
them too, and re-runs the tasks).

The new id is a UUIDv6 like LangGraph's, at the current time or, when the thread holds
a greater id (a clock behind), one 100 ns tick after the greatest id of the thread.
Nothing is deleted; `--hard` also moves the checkpoints after REF (and the subgraph
namespaces' checkpoints after it) with their pending writes and the blobs no remaining
checkpoint names to the trash. REF is a checkpoint of the root graph: a subgraph's
checkpoint is refused (the parent graph drives its subgraphs; rewind the parent's).

`branch REF NAME` (a root-namespace checkpoint): the thread `T-branch-NAME-XXXX` holding
REF and its ancestors (parent chain) with the same ids, their pending writes (REF's own
only when nothing ran from REF: a continued run consumed them, and LangGraph applies a
head's pending writes), the subgraph namespaces' checkpoints up to REF, and (Postgres) each blob they name once: one INSERT ... SELECT
per table.

`merge BRANCH --into T`: a three-way merge of the channel values of the two heads from
their newest common checkpoint (a branch's copies keep their ids), written on T as a
new checkpoint (`source` "update", parent T's head, new versions for the changed
channels). Conflicts per path as for AgentOS; a value that is not plain data (LangChain
messages, other extension types) conflicts unless equal, but for the `messages` list:
ours, then the messages the branch added since the common checkpoint.

`prune` (--keep-last N per thread and namespace, --older-than): a thread goes with its
subgraph namespaces (a namespace whose checkpoint it ran from goes is deleted whole, the
others pruned by the same policy; a subgraph's run is no fork of its thread); the head,
fork points (checkpoints with several children) and checkpoints with a
pending interrupt (an `__interrupt__` write and no `__resume__`) are kept, and so is
what a kept checkpoint needs: its pending writes, the blobs its channel_versions name
(Postgres), and for each DeltaChannel not stored in it (metadata
`counters_since_delta_snapshot`) its ancestors back to the nearest one storing the
channel, with their writes.
"""

from __future__ import annotations

import json
import random
import re
import secrets
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from itertools import groupby
from typing import Any

from agentctl.diff import MISSING, json_equal
from agentctl.errors import CheckpointNotFound, MergeConflictError, NotFoundError, OperationError, UsageError
from agentctl.merge import Conflict, three_way_merge
from agentctl.model import utc_now_iso
from agentctl.storage.contract import History, PruneSpec, Unsupported, retried_write
from agentctl.storage.journal import ops, trash
from agentctl.storage.journal.history import JournalHistory
from agentctl.storage.journal.ops import Op
from agentctl.storage.langgraph import legacy, serde
from agentctl.storage.langgraph.store import (
    NS_SEP,
    UUID_EPOCH,
    _meta_dict,
    address,
    id_time,
    is_internal_channel,
    uuid_ticks,
)
from agentctl.storage.results import (
    CheckpointGC,
    DeletePlan,
    MergePlan,
    OpResult,
    PrunePlan,
    RewindPlan,
    TimeTravelResult,
)
from agentctl.storage.sqlutil import in_chunks

NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"

_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def uuid6_after(greatest: str | None, now_ns: int | None = None) -> str:
    """A UUIDv6 string (LangGraph's checkpoint id format) at the current time, or one
    tick after `greatest` when that is later; always > `greatest` as text."""
    ns = time.time_ns() if now_ns is None else now_ns
    ticks = ns // 100 + UUID_EPOCH
    if greatest:
        g = uuid_ticks(greatest, "6")
        if g is not None and g >= ticks:
            ticks = g + 1
    clock_seq = secrets.randbits(14)
    node = secrets.randbits(48)
    time_high, time_mid, time_low = (ticks >> 28) & 0xFFFFFFFF, (ticks >> 12) & 0xFFFF, ticks & 0x0FFF
    value = (
        (time_high << 96)
        | (time_mid << 80)
        | (0x6 << 76)
        | (time_low << 64)
        | ((0x8000 | clock_seq) << 48)
        | node
    )
    h = f"{value:032x}"
    out = f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
    if greatest and not out > greatest:
        raise OperationError(f"cannot make a checkpoint id greater than {greatest!r} (not a UUIDv6)")
    return out


def _msgpack_str(text: str) -> bytes:
    raw = text.encode("utf-8")
    n = len(raw)
    if n < 32:
        return bytes([0xA0 | n]) + raw
    if n < 256:
        return b"\xd9" + bytes([n]) + raw
    return b"\xda" + n.to_bytes(2, "big") + raw


def _replace_str_value(payload: bytes, key: str, new: str, old: str | None = None) -> bytes:
    """The msgpack map `payload` with the string value of its top-level `key` replaced;
    every other byte kept (no re-encoding of ext types)."""
    k = _msgpack_str(key)
    pos = payload.find(k)
    while pos >= 0:
        start = pos + len(k)
        head = payload[start]
        if 0xA0 <= head <= 0xBF:
            n, body = head & 0x1F, start + 1
        elif head == 0xD9:
            n, body = payload[start + 1], start + 2
        elif head == 0xDA:
            n, body = int.from_bytes(payload[start + 1 : start + 3], "big"), start + 3
        else:
            n, body = -1, start
        if n >= 0 and (old is None or payload[body : body + n] == old.encode("utf-8")):
            return payload[:start] + _msgpack_str(new) + payload[body + n :]
        pos = payload.find(k, pos + 1)
    raise OperationError(f"checkpoint payload has no {key!r} string to rewrite")


def _is_js(type_: str | None, checkpoint: dict[str, Any]) -> bool:
    """Whether LangGraph.js wrote a checkpoint (and so its thread: LangGraph.js reads no
    msgpack and no string versions, a thread is all-JS or all-Python): stored as 'json'
    (SqliteSaver), or its channel versions integers (PostgresSaver, whose Python twin
    writes strings)."""
    if type_ == "json":
        return True
    versions = checkpoint.get("channel_versions") or {}
    return (
        type_ is None
        and bool(versions)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in versions.values())
    )


def _js_dumps(value: Any) -> bytes:
    """A value as LangGraph.js's JsonPlusSerializer stores it: JSON.stringify's UTF-8."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _js_ts() -> str:
    """Now as LangGraph.js writes a checkpoint's ts (`new Date().toISOString()`)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class LangGraphHistory(JournalHistory, History):
    """The write side of the LangGraph format (see the module doc)."""

    prune_policies = ("keep_last_n", "keep_age")  # no milestones
    undo_by_thread = True

    def __init__(self, store: Any, *, now: Any = None, hex4: Any = None) -> None:
        self.store = store
        self.kind = store.kind
        self._pg = store.kind == "postgres"
        self._now = now or utc_now_iso
        self._hex = hex4 or (lambda: secrets.token_hex(2))
        self.W, self.WV, self.C = store._writes_table, store._writes_value, store._C
        #: each table's primary key (the journal's row keys)
        self._keys = {
            "checkpoints": ("thread_id", "checkpoint_ns", "checkpoint_id"),
            self.W: ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"),
        }
        if self._pg:
            self._keys["checkpoint_blobs"] = ("thread_id", "checkpoint_ns", "channel", "version")

    # ---- plumbing --------------------------------------------------------------------

    async def journal_ready(self) -> None:
        await self.store.connect()
        if self._pg and self.store.shallow:
            raise Unsupported("langgraph (shallow saver)", "writes")

    def _tx(self, threads: Sequence[str]) -> Any:
        return self.journal_tx(sorted(set(threads)))

    async def lock(self, tx: Any, threads: Sequence[str]) -> None:
        """Postgres: LangGraph's tables locked against its writers (the fingerprints and
        the plans read here must stay true)."""
        if self._pg:
            # in the order LangGraph's PostgresSaver.put takes them (blobs, then
            # checkpoints; put_writes: writes alone), so a saver's write in progress
            # finishes first instead of deadlocking with this one
            await tx.execute(
                f"LOCK TABLE checkpoint_blobs, checkpoints, {self.W} IN SHARE ROW EXCLUSIVE MODE"
            )

    old_log = legacy.OLD

    async def migrate(self, tx: Any) -> None:
        await legacy.migrate(self, tx)

    async def fingerprint(self, tx: Any, tid: str) -> list[Any]:
        a = await tx.fetch(
            f"SELECT COUNT(*) AS n, MAX(checkpoint_id{self.C}) AS m FROM checkpoints WHERE thread_id = ?", tid
        )
        b = await tx.fetch(f"SELECT COUNT(*) AS n FROM {self.W} WHERE thread_id = ?", tid)
        out = [int(a[0]["n"]), a[0]["m"], int(b[0]["n"])]
        if self._pg:
            c = await tx.fetch("SELECT COUNT(*) AS n FROM checkpoint_blobs WHERE thread_id = ?", tid)
            out.append(int(c[0]["n"]))
        return out

    def undo_result(self, record: dict[str, Any], image: str) -> dict[str, list[str]]:
        """The checkpoint a rewind, merge or edit wrote: deleted by the undo, made again by the redo."""
        fork = (record.get("details") or {}).get("fork")
        if not fork:
            return {}
        return {"deleted" if image == "before" else "created": [fork]}

    async def undo_threads(self, record: dict[str, Any], threads: Sequence[str]) -> list[str]:
        """`undo OP --thread T`: of a prune, the threads named (THREAD or THREAD|NS) among
        those it still has to restore."""
        if record["kind"] != "prune":
            raise UsageError(
                f"--thread restores some threads of a prune; operation {record['op_id']} is a "
                f"{record['kind']} (undo it whole)"
            )
        todo = ops.left(record)
        out: list[str] = []
        for t in threads:
            tid = t if t in todo else (await self.store._split(t))[0]
            if tid not in todo:
                raise UsageError(
                    f"operation {record['op_id']} has no thread {t!r} left to restore "
                    f"(it has: {ops.brief(todo) or 'none'})"
                )
            out.append(tid)
        return list(dict.fromkeys(out))

    async def journal_moved(self) -> None:
        """The store's caches of checkpoint places and branches: stale after a write."""
        self.store._where.clear()
        self.store._branch_map = None

    async def _delete(self, op: Op, table: str, where: str, *params: Any) -> int:
        """Delete the rows of `table` matching `where` (journal: to the trash)."""
        return await op.delete(table, self._keys[table], where, params, thread="thread_id")

    async def _inserted(self, op: Op, table: str, where: str, *params: Any) -> int:
        """The rows of `table` matching `where`, just inserted, recorded as the op's."""
        return await op.inserted(table, self._keys[table], where, params, thread="thread_id")

    async def _delete_ids(
        self, op: Op, tid: str, ns: str, ids: Sequence[str], all_ids: Sequence[str] | None = None
    ) -> int:
        """Checkpoints of (tid, ns) by id, with their pending writes. With `all_ids`
        (every id of the namespace, in order) on SQLite, the ids go as runs of
        consecutive ids, one range statement per run (a prune's usual case: one run)."""
        pieces: list[tuple[str, Sequence[str]]] = [(f"IN ({ph})", chunk) for ph, chunk in in_chunks(ids)]
        if all_ids is not None and not self._pg:
            wanted = set(ids)
            runs = [
                (g[0], g[-1])
                for inside, group in groupby(all_ids, key=wanted.__contains__)
                if inside
                for g in [list(group)]
            ]
            if len(runs) * 10 <= len(ids):
                pieces = [(">= ? AND checkpoint_id <= ?", run) for run in runs]
        n = 0
        for cond, params in pieces:
            where = f"thread_id = ? AND checkpoint_ns = ? AND checkpoint_id {cond}"
            await self._delete(op, self.W, where, tid, ns, *params)
            n += await self._delete(op, "checkpoints", where, tid, ns, *params)
        return n

    async def _delete_unused_blobs(self, op: Op, tid: str) -> int:
        """Postgres: the blobs of a thread named by the checkpoints this operation
        deleted and by no checkpoint left."""
        if not self._pg:
            return 0
        b = "checkpoint_blobs"
        where = (
            f"thread_id = ? AND (checkpoint_ns, channel, version) IN (SELECT t.checkpoint_ns, v.key, v.value "
            f"FROM {trash.images_of('checkpoints')} t CROSS JOIN LATERAL "
            f"jsonb_each_text(t.checkpoint -> 'channel_versions') v WHERE t.thread_id = {b}.thread_id) "
            f"AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread_id = {b}.thread_id "
            f"AND c.checkpoint_ns = {b}.checkpoint_ns AND c.checkpoint -> 'channel_versions' ->> {b}.channel "
            f"= {b}.version)"
        )
        return await self._delete(op, b, where, tid, op.op_id)

    async def _inserted_update(self, op: Op, tid: str, new_id: str, blobs: list[list[str]]) -> None:
        """The checkpoint `_write_update` inserted and its blobs (all at one new version)."""
        await self._inserted(
            op, "checkpoints", "thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?", tid, new_id
        )
        if blobs:
            chans = [ch for _, ch, _ in blobs]
            await self._inserted(
                op,
                "checkpoint_blobs",
                f"thread_id = ? AND checkpoint_ns = '' AND version = ? "
                f"AND channel IN ({', '.join('?' for _ in chans)})",
                tid,
                blobs[0][2],
                *chans,
            )

    # ---- reading (outside or inside a transaction) -----------------------------------

    async def _ref(self, checkpoint_id: str, what: str = "") -> dict[str, Any]:
        """The row of a checkpoint; with `what`, refused when it is a subgraph's (the
        parent graph drives a subgraph: time travel goes through the parent's checkpoint)."""
        row = await self.store._locate(checkpoint_id)
        if row is None:
            raise CheckpointNotFound(checkpoint_id)
        if what and row["checkpoint_ns"]:
            raise UsageError(
                f"{checkpoint_id} is a checkpoint of a subgraph ({self.store._metadata(row).thread_id}); "
                f"{what} from the parent graph's checkpoint"
            )
        return row

    async def _row(self, q: Any, tid: str, checkpoint_id: str | None = None) -> dict[str, Any]:
        """The whole row of a root-namespace checkpoint (the thread's head without
        `checkpoint_id`), payload and metadata as text on Postgres."""
        text = (
            "checkpoint::text AS checkpoint, metadata::text AS metadata"
            if self._pg
            else "checkpoint, CAST(metadata AS TEXT) AS metadata"
        )
        which = "AND checkpoint_id = ?" if checkpoint_id else f"ORDER BY checkpoint_id{self.C} DESC LIMIT 1"
        rows = await q(
            f"SELECT checkpoint_id, parent_checkpoint_id, type, {text} FROM checkpoints "
            f"WHERE thread_id = ? AND checkpoint_ns = '' {which}",
            tid,
            *([checkpoint_id] if checkpoint_id else []),
        )
        if not rows:
            raise (
                CheckpointNotFound(checkpoint_id)
                if checkpoint_id
                else NotFoundError(f"thread {tid!r} not found")
            )
        return rows[0]

    async def _greatest(self, q: Any, tid: str) -> str | None:
        """The thread's greatest checkpoint id (a new one is made after it)."""
        return (await q(f"SELECT MAX(checkpoint_id{self.C}) AS m FROM checkpoints WHERE thread_id = ?", tid))[
            0
        ]["m"]

    async def _rows_after(
        self, q: Any, tid: str, ns: str, after: str, subgraphs: bool
    ) -> list[dict[str, Any]]:
        """The metadata rows after a checkpoint (in its namespace; with `subgraphs`,
        in every subgraph namespace of the thread too), in id order."""
        where = "c.checkpoint_ns <> '' OR c.checkpoint_ns = ?" if subgraphs else "c.checkpoint_ns = ?"
        return await q(
            f"SELECT {self.store._meta_cols} FROM checkpoints c WHERE c.thread_id = ? AND ({where}) "
            f"AND c.checkpoint_id{self.C} > ? ORDER BY c.checkpoint_ns{self.C}, c.checkpoint_id{self.C}",
            tid,
            ns,
            after,
        )

    # ---- rewind ----------------------------------------------------------------------

    async def plan_rewind(self, checkpoint_id: str, hard: bool = False) -> RewindPlan:
        await self.journal_ready()
        row = await self._ref(checkpoint_id, "rewind")  # of the root namespace
        later = await self._rows_after(self.store._q, row["thread_id"], "", row["checkpoint_id"], hard)
        addr = self.store._metadata(row).thread_id
        return RewindPlan(
            target=self.store._metadata(row),
            thread_id=addr,
            moved=[self.store._metadata(r) for r in later],
            archive_thread=None if hard or not later else addr,
            hard=hard,
        )

    @retried_write
    async def rewind(
        self, checkpoint_id: str, hard: bool = False, *, archive_thread: str | None = None
    ) -> TimeTravelResult:
        """A fork checkpoint copying REF (parent: REF's parent) as the thread's new head (see the module doc);
        with `hard`, the checkpoints after REF to the trash. The result's
        `archive_thread` is the thread itself: the abandoned run stays there as a branch."""
        await self.journal_ready()
        row = await self._ref(checkpoint_id, "rewind")
        tid, ns, ref = row["thread_id"], row["checkpoint_ns"], row["checkpoint_id"]
        target = self.store._metadata(row)
        addr = target.thread_id
        before = await self.store.count(addr)
        async with self._tx([tid]) as tx:
            later = await self._rows_after(tx.fetch, tid, ns, ref, hard and ns == "")
            if not later:
                cp = await self.store.get(ref)
                return TimeTravelResult(
                    checkpoint=cp, thread_id=addr, rewind_depth=0, snapshot_count_before=before
                )
            full = await self._row(tx.fetch, tid, ref)  # REF: of the root namespace
            meta = json.loads(full["metadata"] or "{}")
            greatest = await self._greatest(tx.fetch, tid)
            new_id = uuid6_after(greatest)
            moved_ids = [r["checkpoint_id"] for r in later]
            details: dict[str, Any] = {
                "thread_id": tid,
                "ns": ns,
                "ref": ref,
                "fork": new_id,
                "hard": hard,
                "later": len(later),
            }
            verb = "to the trash" if hard else "kept as a branch"
            op = await self.journal_begin(
                tx,
                "rewind",
                f"rewind {addr} to step {target.step} ({ref}): fork "
                f"{new_id}; {len(later)} later checkpoint(s) {verb}",
                [tid],
                details,
            )
            if hard:
                for each_ns, rows in groupby(later, key=lambda r: r["checkpoint_ns"]):  # (in namespace order)
                    ids = [r["checkpoint_id"] for r in rows]
                    await self._delete_ids(op, tid, each_ns, ids, all_ids=ids)  # all after REF: one run
                await self._delete_unused_blobs(op, tid)
            shifted = await self._insert_fork(tx, tid, ns, ref, new_id, full, meta)
            for table in ("checkpoints", self.W):
                await self._inserted(
                    op, table, "thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?", tid, ns, new_id
                )
            for ch, ver in shifted:
                await self._inserted(
                    op,
                    "checkpoint_blobs",
                    "thread_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?",
                    tid,
                    ns,
                    ch,
                    ver,
                )
            op_id = await self.journal_finish(op)
        await self.journal_moved()
        cp = await self.store.get(new_id)
        return TimeTravelResult(
            checkpoint=cp,
            thread_id=addr,
            rewind_depth=len(later),
            snapshot_count_before=before,
            op_id=op_id,
            archive_thread=None if hard else addr,
            moved=[] if hard else moved_ids,
            deleted=moved_ids if hard else [],
        )

    async def _insert_fork(
        self, tx: Any, tid: str, ns: str, ref: str, new_id: str, full: dict[str, Any], meta: dict[str, Any]
    ) -> list[tuple[str, str]]:
        """The fork copy of REF; the blob keys it inserted (a LangGraph.js thread on
        Postgres: `_insert_js_pg_fork`)."""
        ts = utc_now_iso()
        new_meta = {k: v for k, v in meta.items() if k not in ("run_id", "writes")}
        new_meta["source"] = "fork"
        step = meta.get("step")
        new_meta["step"] = (step + 1) if isinstance(step, int) else step
        # counters_since_delta_snapshot stay REF's: the fork has REF's place in the chain
        meta_text = json.dumps(new_meta, ensure_ascii=False)
        shifted: list[tuple[str, str]] = []
        if self._pg and _is_js(full["type"], cp := json.loads(full["checkpoint"])):
            shifted = await self._insert_js_pg_fork(tx, tid, ns, new_id, full, cp, meta_text)
        elif self._pg:
            await tx.execute(
                "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
                "checkpoint, metadata) SELECT thread_id, checkpoint_ns, CAST(? AS TEXT), parent_checkpoint_id, type, "
                "jsonb_set(jsonb_set(checkpoint, '{id}', to_jsonb(CAST(? AS TEXT))), '{ts}', "
                "to_jsonb(CAST(? AS TEXT))), CAST(? AS JSONB) FROM checkpoints WHERE thread_id = ? "
                "AND checkpoint_ns = ? AND checkpoint_id = ?",
                new_id,
                new_id,
                ts,
                meta_text,
                tid,
                ns,
                ref,
            )
        elif full["type"] == "json":  # LangGraph.js's SqliteSaver: the checkpoint as UTF-8 JSON
            cp = json.loads(bytes(full["checkpoint"]))
            if not isinstance(cp, dict) or cp.get("id") != ref:
                raise OperationError(f"cannot rewrite the id of checkpoint {ref}")
            cp.update(id=new_id, ts=_js_ts())
            await tx.execute(
                "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
                "checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
                tid,
                ns,
                new_id,
                full["parent_checkpoint_id"],
                "json",
                _js_dumps(cp),
                meta_text.encode("utf-8"),
            )
        else:
            if (full["type"] or "msgpack") != "msgpack":
                raise UsageError(
                    f"cannot rewind to {ref}: its checkpoint is stored as {full['type']!r} "
                    "(agentctl rewrites only msgpack and JSON checkpoints, never decrypts or unpickles)"
                )

            data = bytes(full["checkpoint"])
            data = _replace_str_value(data, "id", new_id, old=ref)
            old_ts = serde.decode_msgpack(data).get("ts")
            if isinstance(old_ts, str):
                data = _replace_str_value(data, "ts", ts, old=old_ts)
            check = serde.decode_msgpack(data)
            if not isinstance(check, dict) or check.get("id") != new_id:
                raise OperationError(f"cannot rewrite the id of checkpoint {ref}")
            await tx.execute(
                "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
                "checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
                tid,
                ns,
                new_id,
                full["parent_checkpoint_id"],
                full["type"],
                data,
                meta_text.encode("utf-8"),
            )
        wcols = [c for c in await trash.columns(tx, self.W) if c != "checkpoint_id"]
        await tx.execute(
            f"INSERT INTO {self.W} ({', '.join(wcols)}, checkpoint_id) SELECT {', '.join(wcols)}, CAST(? AS TEXT) "
            f"FROM {self.W} WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? AND task_id = ? "
            "AND channel NOT IN ('__resume__', '__interrupt__')",
            new_id,
            tid,
            ns,
            ref,
            NULL_TASK_ID,
        )
        return shifted

    async def _insert_js_pg_fork(
        self,
        tx: Any,
        tid: str,
        ns: str,
        new_id: str,
        full: dict[str, Any],
        cp: dict[str, Any],
        meta_text: str,
    ) -> list[tuple[str, str]]:
        """LangGraph.js on Postgres: the fork copy with every channel version (and the
        versions_seen) moved above the thread's greatest version, its blob rows copied
        at those versions. LangGraph.js's PostgresSaver keys blobs by (channel, integer
        version) and keeps the row already there on conflict: a run from a plain copy
        would write versions the abandoned run holds and read that run's values back.
        Shifting every version by one amount keeps every comparison (what triggers
        which node) as REF's. The blob keys inserted."""
        used = await tx.fetch(
            "SELECT MAX(CAST(version AS BIGINT)) AS m FROM checkpoint_blobs WHERE "
            "thread_id = ? AND checkpoint_ns = ? AND version ~ '^[0-9]{1,18}$'",
            tid,
            ns,
        )
        versions = cp.get("channel_versions") or {}
        shift = max([used[0]["m"] or 0, *versions.values()])

        def up(v: Any) -> Any:
            return v + shift if isinstance(v, int) and not isinstance(v, bool) else v

        cp.update(
            id=new_id,
            ts=_js_ts(),
            channel_versions={c: up(v) for c, v in versions.items()},
            versions_seen={
                n: {c: up(v) for c, v in seen.items()} if isinstance(seen, dict) else seen
                for n, seen in (cp.get("versions_seen") or {}).items()
            },
        )
        await tx.execute(
            "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
            "checkpoint, metadata) VALUES (?, ?, ?, ?, ?, CAST(? AS JSONB), CAST(? AS JSONB))",
            tid,
            ns,
            new_id,
            full["parent_checkpoint_id"],
            full["type"],
            json.dumps(cp, ensure_ascii=False),
            meta_text,
        )
        out = []
        for ch, v in sorted(versions.items()):
            await tx.execute(
                "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
                "SELECT thread_id, checkpoint_ns, channel, CAST(? AS TEXT), type, blob FROM checkpoint_blobs "
                "WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?",
                str(up(v)),
                tid,
                ns,
                ch,
                str(v),
            )
            out.append((ch, str(up(v))))
        return out

    # ---- branch ----------------------------------------------------------------------

    @retried_write
    async def branch(self, from_checkpoint_id: str, branch_name: str) -> str:
        name = str(branch_name)
        if not _NAME.match(name):
            raise UsageError(f"invalid branch name {branch_name!r} (letters, digits, '.', '_', '-')")
        await self.journal_ready()
        row = await self._ref(from_checkpoint_id, "branch")
        tid, ref = row["thread_id"], row["checkpoint_id"]
        new = await self._fresh_thread(f"{tid}-branch-{name}")
        chain = (
            "WITH RECURSIVE chain(id) AS (SELECT CAST(? AS TEXT) UNION ALL SELECT c.parent_checkpoint_id "
            "FROM checkpoints c JOIN chain ON c.thread_id = ? AND c.checkpoint_ns = '' "
            "AND c.checkpoint_id = chain.id WHERE c.parent_checkpoint_id IS NOT NULL) "
        )
        async with self._tx([tid, new]) as tx:
            if await tx.fetch("SELECT 1 AS x FROM checkpoints WHERE thread_id = ? LIMIT 1", new):
                raise OperationError(f"thread {new!r} appeared meanwhile; retry")
            details: dict[str, Any] = {"thread_id": tid, "ref": ref, "new_thread": new}
            op = await self.journal_begin(
                tx,
                "branch",
                f"branch {new} from {tid} step {self.store._metadata(row).step} ({ref})",
                [new],
                details,
            )
            # REF's own pending writes go only when nothing ran from it: once a child
            # exists they were consumed, and on the branch's head LangGraph would apply them
            continued = bool(
                await tx.fetch(
                    "SELECT 1 AS x FROM checkpoints WHERE thread_id = ? AND "
                    "checkpoint_ns = '' AND parent_checkpoint_id = ? LIMIT 1",
                    tid,
                    ref,
                )
            )
            for table in ("checkpoints", self.W):
                cols = [c for c in await trash.columns(tx, table) if c != "thread_id"]
                sel = ", ".join("x." + c for c in cols)
                ins = f"INSERT INTO {table} (thread_id, {', '.join(cols)}) "
                skip = " AND x.checkpoint_id <> ?" if table == self.W and continued else ""
                # the chain up to REF in the root namespace
                await tx.execute(
                    ins + chain + f"SELECT CAST(? AS TEXT), {sel} FROM {table} x WHERE x.thread_id = ? "
                    f"AND x.checkpoint_ns = '' AND x.checkpoint_id IN (SELECT id FROM chain){skip}",
                    ref,
                    tid,
                    new,
                    tid,
                    *([ref] if skip else []),
                )
                # the subgraph runs up to REF
                await tx.execute(
                    ins + f"SELECT CAST(? AS TEXT), {sel} FROM {table} x WHERE x.thread_id = ? "
                    f"AND x.checkpoint_ns <> '' AND x.checkpoint_id{self.C} <= ?",
                    new,
                    tid,
                    ref,
                )
            if self._pg:
                await tx.execute(
                    "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
                    "SELECT CAST(? AS TEXT), b.checkpoint_ns, b.channel, b.version, b.type, b.blob "
                    "FROM checkpoint_blobs b WHERE b.thread_id = ? AND (b.checkpoint_ns, b.channel, b.version) IN "
                    "(SELECT DISTINCT c.checkpoint_ns, v.key, v.value FROM checkpoints c CROSS JOIN LATERAL "
                    "jsonb_each_text(c.checkpoint -> 'channel_versions') v WHERE c.thread_id = ?)",
                    new,
                    tid,
                    new,
                )
            for table in self._keys:
                await self._inserted(op, table, "thread_id = ?", new)
            await self.journal_finish(op)
        await self.journal_moved()
        return new

    async def _fresh_thread(self, stem: str) -> str:
        for _ in range(20):
            name = f"{stem}-{self._hex()}"
            if not await self.store._q("SELECT 1 AS x FROM checkpoints WHERE thread_id = ? LIMIT 1", name):
                return name
        raise OperationError(f"no free thread name for {stem!r}; retry")

    # ---- prune -----------------------------------------------------------------------

    @staticmethod
    def _policy(spec: PruneSpec) -> tuple[Any, float]:
        if spec.keep_last is not None:
            return CheckpointGC.KEEP_LAST_N, float(spec.keep_last)
        if spec.older_than is not None:
            return CheckpointGC.KEEP_AGE, float(spec.older_than)
        return CheckpointGC.KEEP_ALL, 0.0

    async def _prune_threads(self, spec: PruneSpec) -> list[tuple[str, str, str]]:
        if spec.milestones is not None:
            raise Unsupported("langgraph", "prune --milestones")
        if spec.statuses is not None:
            raise Unsupported("langgraph", "prune --status")
        if spec.keep_last is None and spec.older_than is None:
            raise UsageError("give a policy: --keep-last N or --older-than AGE")
        if spec.threads is not None:
            return [(a, *await self.store._split(a)) for a in spec.threads]
        # every thread with its namespaces (a namespace alone where its thread has no root rows)
        out: list[tuple[str, str, str]] = []
        roots: set[str] = set()
        for a in await self.store.all_addresses():  # each namespace right after its thread
            tid, ns = await self.store._split(a)
            if ns == "":
                roots.add(tid)
            if ns == "" or tid not in roots:
                out.append((a, tid, ns))
        return [
            t
            for t in out
            if t[2] == "" or not any(t[2].startswith(o[2] + NS_SEP) for o in out if o[1] == t[1] and o[2])
        ]

    async def _plan_thread(
        self, q: Any, tid: str, ns: str, spec: PruneSpec, now: float
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """(metadata rows to delete, facts: kept reasons, sizes and `parts`, the ids
        deleted and all ids of each namespace) of an address: (thread, ns) and the
        subgraph namespaces under it. A namespace whose checkpoint it ran from (its
        metadata's `parents`) goes is deleted whole (its run was part of that step);
        the others are pruned by the same policy, each on its own."""
        gone, facts = await self._plan_ns(q, tid, ns, spec, now)
        facts["parts"] = [(ns, [r["checkpoint_id"] for r in gone], facts.pop("ids", []))]
        facts["namespaces"] = 0
        inner = ns + NS_SEP if ns else ""
        meta = "metadata" + ("::text" if self._pg else "")
        subs = await q(
            f"SELECT c.checkpoint_ns AS ns, c.{meta} AS meta FROM checkpoints c WHERE c.thread_id = ? "
            "AND c.checkpoint_ns <> '' AND c.checkpoint_id = (SELECT MIN(d.checkpoint_id) FROM "
            "checkpoints d WHERE d.thread_id = c.thread_id AND d.checkpoint_ns = c.checkpoint_ns)",
            tid,
        )
        # outer namespaces first: whether an inner one goes whole depends on its outer's plan
        subs = sorted(
            (r for r in subs if r["ns"].startswith(inner) and r["ns"] != ns),
            key=lambda r: (r["ns"].count(NS_SEP), r["ns"]),
        )
        deleted = {ns: set(facts["parts"][0][1])}
        for r in subs:
            outer = r["ns"].rsplit(NS_SEP, 1)[0] if NS_SEP in r["ns"] else ""
            parents = _meta_dict(r["meta"]).get("parents")
            ran_from = parents.get(outer) if isinstance(parents, dict) else None
            whole = outer in deleted and ran_from in deleted[outer]
            part, more = await self._plan_ns(q, tid, r["ns"], spec, now, whole=whole)
            facts["namespaces"] += whole
            for k in ("forks", "interrupts", "delta", "bytes", "writes", "blobs"):
                facts[k] += more[k]
            deleted[r["ns"]] = {x["checkpoint_id"] for x in part}
            facts["parts"].append((r["ns"], [x["checkpoint_id"] for x in part], more.get("ids", [])))
            gone += part
        return gone, facts

    async def _plan_ns(
        self, q: Any, tid: str, ns: str, spec: PruneSpec, now: float, whole: bool = False
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """(metadata rows to delete, facts: kept reasons and sizes) of one (thread, ns);
        `whole`: every row of it (a subgraph run from a checkpoint the prune deletes)."""
        size = "pg_column_size" if self._pg else "LENGTH"
        # the sizes (the plan's "bytes") in the same pass over the thread
        rows = await q(
            f"SELECT {self.store._meta_cols}, COALESCE({size}(c.checkpoint), 0) + "
            f"COALESCE({size}(c.metadata), 0) AS agentctl_n FROM checkpoints c WHERE c.thread_id = ? "
            f"AND c.checkpoint_ns = ? ORDER BY c.checkpoint_id{self.C}",
            tid,
            ns,
        )
        facts: dict[str, Any] = {"forks": 0, "interrupts": 0, "delta": 0, "bytes": 0, "writes": 0, "blobs": 0}
        if not rows:
            return [], facts
        ids = [r["checkpoint_id"] for r in rows]
        facts["ids"] = ids
        delete: set[str] = set(ids if whole else ids[:-1])  # the head stays (with its thread)
        if whole:
            pass
        elif spec.keep_last is not None:
            delete -= set(ids[-int(spec.keep_last) :]) if spec.keep_last > 0 else set()
        if spec.older_than is not None and not whole:
            cutoff = now - float(spec.older_than)
            delete = {
                cid
                for cid in delete
                if (t := id_time(cid)) and datetime.fromisoformat(t).timestamp() < cutoff
            }
        if not delete:
            return [], facts
        parent = {r["checkpoint_id"]: r["parent_checkpoint_id"] for r in rows}
        # DeltaChannel counters, parsed only from the metadata that names them
        counters_of: dict[str, set[str]] = {}
        for r in rows:
            text = r["meta"]
            if text is not None and "counters_since_delta_snapshot" in (
                text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
            ):
                c = _meta_dict(text).get("counters_since_delta_snapshot")
                if isinstance(c, dict) and c:
                    counters_of[r["checkpoint_id"]] = set(c)
        # fork points: several children here (a subgraph's run is not a fork: its
        # namespace goes with the checkpoint it ran from, see _plan_thread)
        forks = (
            set() if whole else {cid for cid, n in Counter(p for p in parent.values() if p).items() if n > 1}
        )
        # pending interrupts: an __interrupt__ write, no __resume__
        # and, in the same pass over the thread's writes, their count and size
        interrupts: set[str] = set()
        writes: list[tuple[str, int, int]] = []
        for r in await q(
            f"SELECT checkpoint_id, COUNT(*) AS k, SUM(COALESCE({size}({self.WV}), 0)) AS n, "
            "SUM(CASE WHEN channel = '__interrupt__' THEN 1 ELSE 0 END) AS i, "
            "SUM(CASE WHEN channel = '__resume__' THEN 1 ELSE 0 END) AS r "
            f"FROM {self.W} WHERE thread_id = ? AND checkpoint_ns = ? GROUP BY checkpoint_id",
            tid,
            ns,
        ):
            if int(r["i"] or 0) and not int(r["r"] or 0) and not whole:
                interrupts.add(r["checkpoint_id"])
            writes.append((r["checkpoint_id"], int(r["k"]), int(r["n"] or 0)))
        keep_forks = forks & delete
        keep_int = interrupts & delete
        delete -= keep_forks | keep_int
        facts["forks"], facts["interrupts"] = len(keep_forks), len(keep_int)
        # DeltaChannel: ancestors of a kept checkpoint back to the one storing the channel
        needed: set[str] = set()
        for cid in ids:
            if cid in delete:
                continue
            chans = set(counters_of.get(cid, ()))
            cur = parent.get(cid)
            while chans and cur and cur in parent:
                needed.add(cur)
                chans &= counters_of.get(cur, set())
                cur = parent.get(cur)
        facts["delta"] = len(needed & delete)
        delete -= needed
        gone = [r for r in rows if r["checkpoint_id"] in delete]
        kept = set(ids) - delete
        for r in rows:
            if r["checkpoint_id"] in delete:
                facts["bytes"] += int(r["agentctl_n"])
        for cid, k, n in writes:
            if cid in delete:
                facts["bytes"] += n
                facts["writes"] += k
        if self._pg:
            refs: dict[tuple[str, str], bool] = {}
            for r in await q(
                "SELECT c.checkpoint_id, v.key, v.value FROM checkpoints c CROSS JOIN LATERAL "
                "jsonb_each_text(c.checkpoint -> 'channel_versions') v WHERE c.thread_id = ? "
                "AND c.checkpoint_ns = ?",
                tid,
                ns,
            ):
                version = (r["key"], r["value"])
                refs[version] = refs.get(version, False) or r["checkpoint_id"] in kept
            freed = {v for v, used in refs.items() if not used}
            if freed:
                for r in await q(
                    "SELECT channel, version, COALESCE(pg_column_size(blob), 0) AS n FROM "
                    "checkpoint_blobs WHERE thread_id = ? AND checkpoint_ns = ?",
                    tid,
                    ns,
                ):
                    if (r["channel"], r["version"]) in freed:
                        facts["blobs"] += 1
                        facts["bytes"] += int(r["n"])
        return gone, facts

    @staticmethod
    def _reason(gone: int, facts: dict[str, Any]) -> str:
        kept = [
            f"{facts[k]} {label}"
            for k, label in (
                ("forks", "fork point(s)"),
                ("interrupts", "with a pending interrupt"),
                ("delta", "DeltaChannel ancestor(s)"),
            )
            if facts[k]
        ]
        subs = sum(len(part) for _, part, _ in facts.get("parts", ())[1:])
        whole = f", {facts['namespaces']} whole" if facts.get("namespaces") else ""
        text = (
            f"frees {gone} checkpoint(s)"
            + (f" ({subs} of subgraph namespaces{whole})" if subs else "")
            + f", {facts['writes']} pending write(s)"
            + (f", {facts['blobs']} blob(s)" if facts.get("blobs") else "")
            + f": {facts['bytes']} bytes"
        )
        return text + (f"; kept besides: {', '.join(kept)}" if kept else "")

    async def plan_prune_spec(self, spec: PruneSpec, preview: int | None = None) -> list[PrunePlan]:
        await self.journal_ready()
        policy, param = self._policy(spec)
        now = time.time()
        out = []
        for addr, tid, ns in await self._prune_threads(spec):
            # the thread before the plan reads it: a write after this changes what the
            # write compares, which then plans again instead of reusing what is read here
            seen = await self.fingerprint(self.store, tid)
            gone, facts = await self._plan_thread(self.store._q, tid, ns, spec, now)
            total = sum(len(ids) for _, _, ids in facts["parts"])
            metas = [self.store._metadata(r) for r in (gone if preview is None else gone[:preview])]
            out.append(
                PrunePlan(
                    addr,
                    policy,
                    param,
                    metas,
                    total - len(gone),
                    len(gone),
                    reason=self._reason(len(gone), facts) if gone else "",
                    stamp={"fingerprint": seen, "facts": facts},
                    delete_ids=[r["checkpoint_id"] for r in gone],
                )
            )
        return out

    @retried_write
    async def prune_spec(
        self,
        spec: PruneSpec,
        *,
        progress: Callable[[int], Any] | None = None,
        plans: Sequence[PrunePlan] | None = None,
    ) -> list[OpResult]:
        await self.journal_ready()
        targets = await self._prune_threads(spec)
        now = time.time()
        policy = self._policy(spec)
        known = {p.thread_id: p for p in plans or () if (p.policy, p.param) == policy and p.stamp is not None}
        async with self._tx([t for _, t, _ in targets]) as tx:
            work: list[tuple[str, str, str, list[str], Any]] = []
            for addr, tid, ns in targets:
                plan = known.get(addr)
                if plan is not None and await self.fingerprint(tx, tid) == plan.stamp["fingerprint"]:
                    gone, facts = list(plan.delete_ids or ()), plan.stamp["facts"]  # the thread is as planned
                else:
                    rows, facts = await self._plan_thread(tx.fetch, tid, ns, spec, now)
                    gone = [r["checkpoint_id"] for r in rows]
                if gone:
                    work.append((addr, tid, ns, gone, facts))
            if not work:
                return [OpResult(None, "prune", "nothing to prune")]
            n = sum(len(p[3]) for p in work)
            size = sum(p[4]["bytes"] for p in work)
            details: dict[str, Any] = {"threads": {p[0]: len(p[3]) for p in work}, "bytes": size}
            summary = f"prune {n} checkpoint(s) of {len(work)} thread(s) ({size} bytes)"
            tids = list(dict.fromkeys(p[1] for p in work))
            op = await self.journal_begin(tx, "prune", summary, tids, details)
            deleted: list[str] = []
            for _addr, tid, _ns, gone, facts in work:
                for part_ns, part, ids in facts["parts"]:
                    if part:
                        await self._delete_ids(op, tid, part_ns, part, all_ids=ids)
                deleted += gone
                if progress is not None:
                    progress(1)
            for tid in tids:
                await self._delete_unused_blobs(op, tid)
            op_id = await self.journal_finish(op)
        await self.journal_moved()
        return [OpResult(op_id, "prune", summary, deleted=deleted)]

    # ---- threads delete ---------------------------------------------------------------

    async def _delete_where(self, thread_id: str) -> tuple[str, str, str, list[str]]:
        """(thread_id, ns, WHERE, its parameters) of what delete_thread deletes:
        the root thread goes with its subgraphs' namespaces (as LangGraph's
        delete_thread); a namespace alone."""
        tid, ns = await self.store._split(thread_id)
        if not await self.store._q(
            "SELECT 1 AS x FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? LIMIT 1", tid, ns
        ):
            raise NotFoundError(f"thread {thread_id!r} not found")
        where = "thread_id = ?" + ("" if ns == "" else " AND checkpoint_ns = ?")
        return tid, ns, where, [tid] if ns == "" else [tid, ns]

    async def plan_delete_thread(self, thread_id: str) -> DeletePlan:
        await self.journal_ready()
        tid, ns, where, params = await self._delete_where(thread_id)
        rows = await self.store._q(
            f"SELECT checkpoint_ns AS ns, COUNT(*) AS n FROM checkpoints WHERE {where} "
            f"GROUP BY checkpoint_ns ORDER BY checkpoint_ns{self.C}",
            *params,
        )
        included = [address(tid, r["ns"]) for r in rows if r["ns"] != ns]
        branches = [b.thread_id for b in await self.store.branches_of([thread_id])]
        kept = [b for b in dict.fromkeys(branches) if b not in included and b != thread_id]
        return DeletePlan(thread_id, sum(int(r["n"]) for r in rows), included, kept)

    @retried_write
    async def delete_thread(self, thread_id: str) -> OpResult:
        await self.journal_ready()
        tid, ns, where, params = await self._delete_where(thread_id)
        async with self._tx([tid]) as tx:
            ids = [
                r["checkpoint_id"]
                for r in await tx.fetch(
                    f"SELECT checkpoint_id FROM checkpoints WHERE {where} ORDER BY checkpoint_id{self.C}",
                    *params,
                )
            ]
            details: dict[str, Any] = {"thread_id": tid, "ns": ns, "count": len(ids)}
            summary = f"delete thread {thread_id} ({len(ids)} checkpoint(s))"
            op = await self.journal_begin(tx, "delete_thread", summary, [tid], details)
            for table in (self.W, "checkpoints") + (("checkpoint_blobs",) if self._pg else ()):
                await self._delete(op, table, where, *params)
            op_id = await self.journal_finish(op)
        await self.journal_moved()
        return OpResult(op_id, "delete_thread", summary, deleted=ids)

    # ---- run: what the user's agent wrote, recorded after the fact -------------------

    async def _keys_now(self, q: Any, thread_id: str) -> dict[str, set[tuple[Any, ...]]]:
        """The primary key but thread_id of every row the thread has now, by table."""
        return {
            t: {
                tuple(r.values())
                for r in await q(f"SELECT {', '.join(key[1:])} FROM {t} WHERE thread_id = ?", thread_id)
            }
            for t, key in self._keys.items()
        }

    async def run_keys(self, thread_id: str) -> dict[str, set[tuple[Any, ...]]]:
        """The keys of every row the thread has now, by table (read before a run)."""
        await self.journal_ready()
        return await self._keys_now(self.store.connection.query, thread_id)

    @retried_write
    async def record_run(
        self,
        thread_id: str,
        before: dict[str, set[tuple[Any, ...]]],
        summary: str,
        details: dict[str, Any],
        kind: str = "run",
    ) -> int | None:
        """One op (`kind`: "run" or "edit") for what LangGraph, driven by the user's graph,
        wrote to the thread since `before` (rows whose keys are new): undo deletes them,
        redo puts them back. None: it wrote nothing."""
        await self.journal_ready()
        async with self._tx([thread_id]) as tx:
            inserted = {
                t: sorted(new, key=repr)
                for t, keys in (await self._keys_now(tx.fetch, thread_id)).items()
                if (new := keys - before.get(t, set()))
            }
            if not inserted:
                return None
            details = dict(details, thread_id=thread_id, inserted={t: len(k) for t, k in inserted.items()})
            op = await self.journal_begin(tx, kind, summary, [thread_id], details)
            for table, keys in inserted.items():
                cols = self._keys[table][1:]  # the key but thread_id, as _keys_now reads it
                one = "(" + " AND ".join(f"{c} = ?" for c in cols) + ")"
                for at in range(0, len(keys), 100):
                    chunk = keys[at : at + 100]
                    await self._inserted(
                        op,
                        table,
                        f"thread_id = ? AND ({' OR '.join(one for _ in chunk)})",
                        thread_id,
                        *[v for k in chunk for v in k],
                    )
            op_id = await self.journal_finish(op)
        await self.journal_moved()
        return op_id

    # ---- merge ----------------------------------------------------------------------

    async def _head_raw(self, q: Any, tid: str, checkpoint_id: str | None = None) -> dict[str, Any]:
        """The head of a root thread (or its checkpoint `checkpoint_id`): its row, its
        channel values as (raw, plain) by channel (raw: what is stored -- ormsgpack
        objects with ext values kept as `ormsgpack.Ext`, or on Postgres ("inline", value)
        / ("blob", type, bytes))."""
        import ormsgpack

        row = await self._row(q, tid, checkpoint_id)
        out = dict(row)
        values: dict[str, tuple[Any, Any]] = {}
        if self._pg:
            data = json.loads(row["checkpoint"])
            for k, v in (data.get("channel_values") or {}).items():
                values[k] = (("inline", v), v)
            versions = data.get("channel_versions") or {}
            if versions:
                for r in await q(
                    "SELECT channel, type, blob FROM checkpoint_blobs WHERE thread_id = ? "
                    "AND checkpoint_ns = '' AND (channel, version) IN (SELECT v.key, v.value FROM "
                    "checkpoints c CROSS JOIN LATERAL jsonb_each_text(c.checkpoint -> "
                    "'channel_versions') v WHERE c.thread_id = ? AND c.checkpoint_ns = '' AND "
                    "c.checkpoint_id = ?)",
                    tid,
                    tid,
                    row["checkpoint_id"],
                ):
                    if r["type"] == "empty":
                        continue
                    blob = bytes(r["blob"]) if r["blob"] is not None else None
                    values[r["channel"]] = (("blob", r["type"], blob), serde.decode_typed(r["type"], blob))
        elif row["type"] == "json":  # LangGraph.js's SqliteSaver: values inline, as JSON
            data = json.loads(bytes(row["checkpoint"]))
            plain = serde.decode_json(bytes(row["checkpoint"]))
            pv = plain.get("channel_values") or {}
            for k, v in (data.get("channel_values") or {}).items():
                values[k] = (v, pv.get(k))
        else:
            if (row["type"] or "msgpack") != "msgpack":
                raise UsageError(
                    f"cannot rewrite checkpoint {row['checkpoint_id']}: stored as {row['type']!r} "
                    "(agentctl rewrites only msgpack and JSON checkpoints)"
                )
            data = ormsgpack.unpackb(
                bytes(row["checkpoint"]), ext_hook=ormsgpack.Ext, option=ormsgpack.OPT_NON_STR_KEYS
            )
            plain = serde.decode_msgpack(bytes(row["checkpoint"]))
            pv = plain.get("channel_values") or {}
            for k, v in (data.get("channel_values") or {}).items():
                values[k] = (v, pv.get(k))
        out["data"] = data
        out["values"] = values
        out["js"] = _is_js(row["type"], data)
        return out

    @staticmethod
    def _is_plain(value: Any) -> bool:
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, dict):
                if serde.TYPE_KEY in v:
                    return False
                stack.extend(v.values())
            elif isinstance(v, list):
                stack.extend(v)
            elif isinstance(v, (bytes, bytearray)):
                return False
        return True

    async def _merge_facts(self, q: Any, branch: str, into: str, strategy: str) -> dict[str, Any]:
        if strategy == "fail":
            strategy = "three-way"
        for t in (branch, into):
            if (await self.store._split(t))[1]:
                raise UsageError(f"{t} is a subgraph's namespace; merge root threads")
        theirs = await self._head_raw(q, branch)
        ours = await self._head_raw(q, into)
        found = await q(
            f"SELECT b.checkpoint_id FROM checkpoints b JOIN checkpoints i ON i.thread_id = ? "
            "AND i.checkpoint_ns = '' AND i.checkpoint_id = b.checkpoint_id WHERE b.thread_id = ? "
            f"AND b.checkpoint_ns = '' ORDER BY b.checkpoint_id{self.C} DESC LIMIT 1",
            into,
            branch,
        )
        base = await self._head_raw(q, into, found[0]["checkpoint_id"]) if found else None
        changed: dict[str, Any] = {}  # channel -> new raw value (None: plain value to encode)
        merged_plain: dict[str, Any] = {}
        conflicts: list[Any] = []
        resolved: list[Any] = []
        bvals = base["values"] if base else {}
        names = list(ours["values"]) + [k for k in theirs["values"] if k not in ours["values"]]
        for ch in names:
            if not isinstance(ch, str) or is_internal_channel(ch):
                continue  # LangGraph's own channels (triggers) stay ours
            o = ours["values"].get(ch, (MISSING, MISSING))
            t = theirs["values"].get(ch, (MISSING, MISSING))
            b = bvals.get(ch, (MISSING, MISSING))
            if json_equal(o[1], t[1]) or json_equal(t[1], b[1]):
                continue
            if json_equal(o[1], b[1]):
                if t[0] is MISSING:
                    conflicts.append(Conflict(f"/{ch}", b[1], o[1], t[1]))  # a removed channel
                    continue
                changed[ch], merged_plain[ch] = t[0], t[1]
                continue
            # both changed
            if (
                ch == "messages"
                and all(isinstance(x[1], list) for x in (b, o, t))
                and len(o[1]) >= len(b[1])
                and len(t[1]) >= len(b[1])
                and json_equal(o[1][: len(b[1])], b[1])
                and json_equal(t[1][: len(b[1])], b[1])
            ):
                # ours' messages, then those the branch added since the base
                n = len(b[1])
                if self._pg:
                    if o[0][0] != "blob" or t[0][0] != "blob" or o[0][1] != "msgpack" or t[0][1] != "msgpack":
                        conflicts.append(Conflict(f"/{ch}", b[1], o[1], t[1]))
                        continue
                    import ormsgpack

                    def unpack(raw: bytes) -> Any:
                        return ormsgpack.unpackb(
                            raw, ext_hook=ormsgpack.Ext, option=ormsgpack.OPT_NON_STR_KEYS
                        )

                    raw_list = unpack(o[0][2]) + unpack(t[0][2])[n:]
                else:
                    raw_list = list(o[0]) + list(t[0])[n:]
                changed[ch], merged_plain[ch] = raw_list, o[1] + t[1][n:]
                continue
            if all(x[1] is MISSING or self._is_plain(x[1]) for x in (b, o, t)):
                r = three_way_merge(b[1], o[1], t[1], strategy)
                conflicts += [Conflict(f"/{ch}{c.path}", c.base, c.ours, c.theirs) for c in r.conflicts]
                resolved += [Conflict(f"/{ch}{c.path}", c.base, c.ours, c.theirs) for c in r.resolved]
                if not r.conflicts and r.value is not MISSING and not json_equal(r.value, o[1]):
                    changed[ch], merged_plain[ch] = None, r.value
                continue
            c = Conflict(f"/{ch}", b[1], o[1], t[1])  # not plain data: equal or a conflict
            if strategy == "theirs" and t[0] is not MISSING:
                resolved.append(c)
                changed[ch], merged_plain[ch] = t[0], t[1]
            elif strategy == "ours":
                resolved.append(c)
            else:
                conflicts.append(c)
        return {
            "ours": ours,
            "theirs": theirs,
            "base": base,
            "changed": changed,
            "plain": merged_plain,
            "conflicts": conflicts,
            "resolved": resolved,
            "strategy": strategy,
        }

    async def plan_merge(
        self, branch_thread_id: str, into_thread_id: str, strategy: str = "fail"
    ) -> MergePlan:
        await self.journal_ready()
        f = await self._merge_facts(self.store._q, branch_thread_id, into_thread_id, strategy)
        ours_cp = await self.store.get(f["ours"]["checkpoint_id"])
        theirs_cp = await self.store.get(f["theirs"]["checkpoint_id"])
        base_meta = await self.store.get_metadata(f["base"]["checkpoint_id"]) if f["base"] else None
        greatest = await self._greatest(self.store._q, into_thread_id)
        state = dict(ours_cp.state)
        messages = ours_cp.messages
        for ch, v in f["plain"].items():
            state[ch] = serde.transcript(v)
            if ch == "messages" and isinstance(state[ch], list):
                messages = [m for m in state[ch] if isinstance(m, dict)]
        meta = replace(
            ours_cp.metadata,
            checkpoint_id=uuid6_after(greatest),
            step=ours_cp.metadata.step + 1,
            parent_checkpoint_id=ours_cp.metadata.checkpoint_id,
            tags=["update"],
            summary=f"update · merge of {branch_thread_id}",
        )
        merged = replace(ours_cp, metadata=meta, state=state, messages=messages)
        return MergePlan(
            base=base_meta,
            ours=ours_cp,
            theirs=theirs_cp,
            merged=merged,
            conflicts=f["conflicts"],
            strategy=f["strategy"],
            branch_thread_id=branch_thread_id,
            into_thread_id=into_thread_id,
            resolved=f["resolved"],
            up_to_date=not f["changed"] and not f["conflicts"],
            # a UUIDv6 of the time it is written (`created` is read from it)
            id_at_write="its id carries the time of the write",
        )

    @retried_write
    async def merge_branch(
        self,
        branch_thread_id: str,
        into_thread_id: str,
        strategy: str = "fail",
        *,
        checkpoint_id: str | None = None,
    ) -> str:
        """The merge of the module doc written on `into`; its id. Raises MergeConflictError."""
        await self.journal_ready()
        into, branch = into_thread_id, branch_thread_id
        async with self._tx([into, branch]) as tx:
            f = await self._merge_facts(tx.fetch, branch, into, strategy)
            if f["conflicts"]:
                raise MergeConflictError(f["conflicts"])
            if f["base"] is None and not f["changed"]:
                raise OperationError(f"{branch} and {into} have no checkpoint in common")
            ours = f["ours"]
            if not f["changed"]:
                return ours["checkpoint_id"]
            greatest = await self._greatest(tx.fetch, into)
            new_id = (
                checkpoint_id
                if checkpoint_id and (greatest is None or checkpoint_id > greatest)
                else uuid6_after(greatest)
            )
            details: dict[str, Any] = {
                "thread_id": into,
                "ns": "",
                "fork": new_id,
                "branch": branch,
                "channels": sorted(f["changed"]),
            }
            op = await self.journal_begin(
                tx,
                "merge",
                f"merge {branch} into {into} as {new_id} ({', '.join(sorted(f['changed']))})",
                [into],
                details,
            )
            meta = json.loads(ours["metadata"] or "{}")
            step = meta.get("step")
            blobs = await self._write_update(
                tx,
                into,
                ours,
                f["changed"],
                f["plain"],
                new_id,
                {
                    "source": "update",
                    "step": step + 1 if isinstance(step, int) else step,
                    "parents": {},
                    "agentctl_merge": branch,
                },
                updated_channels=sorted(f["changed"]),
            )
            await self._inserted_update(op, into, new_id, blobs)
            await self.journal_finish(op)
        await self.journal_moved()
        return new_id

    async def _write_update(
        self,
        tx: Any,
        tid: str,
        base: dict[str, Any],
        changed: dict[str, Any],
        plain: dict[str, Any],
        new_id: str,
        new_meta: dict[str, Any],
        *,
        cleared: Sequence[str] = (),
        versions_seen: dict[str, Any] | None = None,
        updated_channels: list[str] | None = None,
    ) -> list[list[str]]:
        """Insert checkpoint `new_id`, a child of `base` (a `_head_raw`), as LangGraph's
        update_state writes one: the `changed` channels (their raw stored value, or None:
        the plain value in `plain`, encoded as the saver's serde encodes plain data) and
        the `cleared` ones (ephemeral channels the step empties) get one new version, the
        saver's `get_next_version` of the greatest version there is; the rest is `base`'s
        (ext values kept byte for byte). Postgres: primitive values inline, the others in
        a blob row at their new version, as PostgresSaver.put writes them. The blob keys
        inserted."""
        import ormsgpack

        data, js = base["data"], base["js"]
        versions = dict(data.get("channel_versions") or {})
        top = 0
        for v in versions.values():
            try:
                top = max(top, int(str(v).split(".")[0]))
            except ValueError:
                pass
        if js and self._pg:
            # LangGraph.js's PostgresSaver keys blobs by (channel, integer version) and
            # keeps the row already there (ON CONFLICT DO NOTHING): after a fork, the
            # version its getNextVersion gives may be another branch's. One above every
            # version of the thread: a new version all the same, and no collision.
            used = await tx.fetch(
                "SELECT MAX(CAST(version AS BIGINT)) AS m FROM checkpoint_blobs WHERE "
                "thread_id = ? AND checkpoint_ns = '' AND version ~ '^[0-9]{1,18}$'",
                tid,
            )
            top = max(top, used[0]["m"] or 0)
        ints = bool(versions) and all(isinstance(v, int) for v in versions.values())
        version: Any = top + 1 if ints else f"{top + 1:032}.{random.random():016}"
        cp = dict(data)
        values = dict(cp.get("channel_values") or {})
        blobs: list[tuple[str, str, str, bytes | None]] = []
        for ch in cleared:
            versions[ch] = version
            values.pop(ch, None)
            if self._pg and js:  # PostgresSaver.js's _dumpBlobs: a new version without a value
                blobs.append((ch, str(version), "empty", None))
        for ch, raw in sorted(changed.items()):
            versions[ch] = version
            if js:  # LangGraph.js: JSON only; on Postgres every value in a blob row
                raw = plain[ch] if raw is None else raw
                if self._pg:
                    raw = raw if isinstance(raw, tuple) else ("blob", "json", _js_dumps(raw))
            elif raw is None:  # a plain value to encode
                raw = plain[ch]
                if self._pg:
                    raw = (
                        ("inline", raw)
                        if raw is None or isinstance(raw, (str, int, float, bool))
                        else ("blob", "msgpack", ormsgpack.packb(raw, option=ormsgpack.OPT_NON_STR_KEYS))
                    )
            elif self._pg and isinstance(raw, list):  # a merged messages list (ormsgpack objects)
                raw = ("blob", "msgpack", ormsgpack.packb(raw, option=ormsgpack.OPT_NON_STR_KEYS))
            if self._pg:
                if raw[0] == "inline":
                    values[ch] = raw[1]
                else:
                    values.pop(ch, None)
                    blobs.append((ch, str(version), raw[1], raw[2]))
            else:
                values[ch] = raw
        cp.update(
            id=new_id,
            ts=_js_ts() if js else utc_now_iso(),
            channel_values=values,
            channel_versions=versions,
            updated_channels=updated_channels,
        )
        if js:  # LangGraph.js's checkpoints have no updated_channels; on Postgres no channel_values
            if updated_channels is None:
                cp.pop("updated_channels")
            if self._pg:
                cp.pop("channel_values")
        if versions_seen is not None:
            cp["versions_seen"] = versions_seen
        meta_text = json.dumps(new_meta, ensure_ascii=False)
        if self._pg:
            mark, row = "CAST(? AS JSONB)", [base["type"], json.dumps(cp), meta_text]
        elif js:
            mark, row = "?", ["json", _js_dumps(cp), meta_text.encode("utf-8")]
        else:
            mark, row = (
                "?",
                [
                    base["type"] or "msgpack",
                    ormsgpack.packb(cp, option=ormsgpack.OPT_NON_STR_KEYS),
                    meta_text.encode("utf-8"),
                ],
            )
        await tx.execute(
            "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
            f"checkpoint, metadata) VALUES (?, '', ?, ?, ?, {mark}, {mark})",
            tid,
            new_id,
            base["checkpoint_id"],
            *row,
        )
        for ch, ver, type_, blob in blobs:  # (Postgres)
            await tx.execute(
                "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, "
                "blob) VALUES (?, '', ?, ?, ?, ?)",
                tid,
                ch,
                ver,
                type_,
                blob,
            )
        return [["", ch, ver] for ch, ver, _, _ in blobs]

    # ---- edit without the user's graph ----------------------------------------------

    #: what its edit_state does, as `edit` asks before it writes ({ref}: REF, {thread}: its thread)
    EDIT_CONFIRM = "write a new checkpoint after {ref} with these values"

    async def edit_state(
        self,
        checkpoint_id: str,
        state: dict[str, Any],
        what: str,
        *,
        keys: Sequence[str] | None = None,
        as_node: str | None = None,
        thread_id: str | None = None,
    ) -> OpResult:
        """A new checkpoint, child of REF (a fork when REF is not the head), as LangGraph's
        `update_state(config_of_REF, values, as_node)` writes it for a graph of plain
        channels, each value given whole (a reducer channel's as `Overwrite` gives it):
        metadata source "update", step REF's + 1; the channels `keys` of `state` and the
        edges `as_node` wrote the last time it ran (its `branch:to:*` writes) at one new
        version; the other ephemeral channels REF holds cleared at that version;
        `versions_seen` of `as_node` as LangGraph's apply_writes leaves it. `as_node`
        None: the node that wrote last (LangGraph's `_infer_as_node`). Refused (exit 2)
        where agentctl cannot write it faithfully without the graph: a channel whose value
        is not plain data (LangChain messages, other extension types, pickled or encrypted
        payloads), DeltaChannels. Not written: the update's pending writes on REF, which
        LangGraph keeps when REF is the head (read only by DeltaChannels). One op, kind
        "edit"; its undo moves the checkpoint (and its blobs) to the trash. `thread_id`:
        REF's thread when the caller knows it (LangGraph has no index on checkpoint ids:
        finding an id's thread is a scan of the whole table's key index)."""
        await self.journal_ready()
        if thread_id and "|" not in thread_id:  # REF's thread, resolved by the caller: no scan for it
            self.store._where.setdefault(checkpoint_id, (thread_id, ""))
        row = await self._ref(checkpoint_id, "edit")
        tid, ref = row["thread_id"], row["checkpoint_id"]
        keys = list(dict.fromkeys(keys if keys is not None else state))
        graph_hint = "pass --agent (or run where langgraph.json is) so that LangGraph writes the edit"
        async with self._tx([tid]) as tx:
            base = await self._head_raw(tx.fetch, tid, ref)
            data, meta = base["data"], json.loads(base["metadata"] or "{}")
            if meta.get("counters_since_delta_snapshot"):
                raise UsageError(
                    f"the graph of {tid} has DeltaChannels, which agentctl does not write; {graph_hint}"
                )
            for k in keys:
                if k not in state:
                    raise UsageError(f"{k!r} is a channel of the graph: it can be set, not unset")
                old = base["values"].get(k)
                stored = (
                    old is not None
                    and self._pg
                    and old[0][0] == "blob"
                    and old[0][1] != ("json" if base["js"] else "msgpack")
                )
                if stored or not self._is_plain(state[k]) or (old is not None and not self._is_plain(old[1])):
                    raise UsageError(
                        f"cannot write {k!r} without your graph: its value is not plain data "
                        f"(LangChain messages, other objects, pickled or encrypted); {graph_hint}"
                    )
            seen: dict[str, Any] = dict(data.get("versions_seen") or {})
            versions = data.get("channel_versions") or {}
            nodes = {n for n in seen if n not in ("__input__", "__interrupt__", "__snapshot_bumps__")}
            nodes |= {
                c[len("branch:to:") :] for c in versions if isinstance(c, str) and c.startswith("branch:to:")
            }
            if as_node is None:
                as_node = self._last_writer(seen, nodes)
            elif as_node not in nodes:
                raise UsageError(
                    f"--as-node {as_node}: no such node in {tid}'s checkpoints (nodes: "
                    f"{', '.join(sorted(nodes)) or 'none'}); {graph_hint} to check it"
                )
            edges = await self._edges_of(tx, tid, ref, as_node, base)
            greatest = await self._greatest(tx.fetch, tid)
            new_id = uuid6_after(greatest)
            written = set(keys) | set(edges)
            cleared = sorted(
                c
                for c in base["values"]
                if isinstance(c, str)
                and c not in written
                and (c.startswith("branch:") or c in ("__start__", "__pregel_tasks"))
            )
            new_seen = dict(seen)
            node_seen = dict(new_seen.get(as_node) or {})
            if "__interrupt__" in versions:  # the update's task is triggered by __interrupt__
                node_seen["__interrupt__"] = versions["__interrupt__"]
            new_seen[as_node] = node_seen
            step = meta.get("step")
            new_meta = {
                "source": "update",
                "step": step + 1 if isinstance(step, int) else step,
                "parents": meta.get("parents") or {},
            }
            summary = f"edit {tid} at step {step} ({ref}) as {as_node}: {what}"
            details: dict[str, Any] = {
                "thread_id": tid,
                "ref": ref,
                "as_node": as_node,
                "keys": keys,
                "by": "agentctl",
                "fork": new_id,
            }
            op = await self.journal_begin(tx, "edit", summary, [tid], details)
            changed: dict[str, Any] = {k: None for k in keys} | {e: None for e in edges}
            plain = {k: state[k] for k in keys} | {e: None for e in edges}
            blobs = await self._write_update(
                tx, tid, base, changed, plain, new_id, new_meta, cleared=cleared, versions_seen=new_seen
            )
            await self._inserted_update(op, tid, new_id, blobs)
            op_id = await self.journal_finish(op)
        await self.journal_moved()
        return OpResult(
            op_id,
            "edit",
            f"edited {tid}: new checkpoint {new_id} at step {new_meta['step']} (as {as_node})",
            created=[new_id],
        )

    async def _js_edges(self, tx: Any, tid: str, node: str, base: dict[str, Any]) -> list[str]:
        """LangGraph.js: the branch channels written in the step where `node` last ran
        up to REF (the first of REF's ancestors whose versions_seen of `node` is REF's):
        those at that step's new version (the greatest there) that hold a value (a
        trigger the step consumed is bumped too, and left empty)."""
        seen = (base["data"].get("versions_seen") or {}).get(node)
        if seen is None:
            return []
        cur = base
        for _ in range(10_000):
            parent = cur["parent_checkpoint_id"]
            if parent is None:
                break
            up = await self._head_raw(tx.fetch, tid, parent)
            if (up["data"].get("versions_seen") or {}).get(node) != seen:
                break
            cur = up
        versions = cur["data"].get("channel_versions") or {}
        top = max((v for v in versions.values() if isinstance(v, int)), default=None)
        return sorted(
            c
            for c, v in versions.items()
            if isinstance(c, str) and c.startswith("branch:") and v == top and c in cur["values"]
        )

    @staticmethod
    def _last_writer(seen: dict[str, Any], nodes: set[str]) -> str:
        """LangGraph's `_infer_as_node`: the node that saw the greatest version."""
        if len(nodes) == 1:
            return next(iter(nodes))
        last = sorted((v, n) for n in nodes for v in (seen.get(n) or {}).values())
        if not last:  # nothing ran yet: the input (a StateGraph's input node)
            return "__start__"
        if len(last) == 1 or last[-1][0] != last[-2][0]:
            return last[-1][1]
        tied = sorted({n for v, n in last if v == last[-1][0]})
        raise UsageError(
            f"cannot tell which node wrote last ({', '.join(tied)} ran in the same step); "
            "name one with --as-node NODE"
        )

    async def _edges_of(self, tx: Any, tid: str, ref: str, node: str, base: dict[str, Any]) -> list[str]:
        """The trigger channels (`branch:to:X`) `node` wrote the last time it ran to
        completion up to REF: what its writers write again in update_state (the edges of
        a graph whose routing does not depend on the edited values). Without the writes'
        task_path (an old saver): REF's own updated branch channels; LangGraph.js's
        checkpoints name none (`_js_edges`)."""
        data = base["data"]
        if not self.store.has_task_path:
            if base["js"]:
                return await self._js_edges(tx, tid, node, base)
            return sorted(c for c in data.get("updated_channels") or [] if c.startswith("branch:"))
        task = await tx.fetch(
            f"SELECT checkpoint_id, task_id FROM {self.W} WHERE thread_id = ? AND checkpoint_ns = '' "
            f"AND checkpoint_id{self.C} <= ? AND task_path = ? AND channel NOT IN ('__error__', '__interrupt__', "
            f"'__resume__') ORDER BY checkpoint_id{self.C} DESC LIMIT 1",
            tid,
            ref,
            f"~__pregel_pull, {node}",
        )
        if not task:
            return []
        rows = await tx.fetch(
            f"SELECT channel FROM {self.W} WHERE thread_id = ? AND checkpoint_ns = '' AND "
            "checkpoint_id = ? AND task_id = ?",
            tid,
            task[0]["checkpoint_id"],
            task[0]["task_id"],
        )
        return sorted({r["channel"] for r in rows if str(r["channel"]).startswith("branch:")})


__all__ = ["LangGraphHistory", "uuid6_after"]
