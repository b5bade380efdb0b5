"""The storage contract: what every agent-store format provides to agentctl.

A *format* (AgentOS checkpoints, the article's session store, LangGraph, ...) is an
adapter that

- recognises a database by its schema (`FormatSpec.matches`, from the tables and
  their columns; never the file name), on SQLite and on Postgres;
- maps it onto agentctl's model (`agentctl.model`): threads, checkpoints with messages,
  state and tool results, parent edges, branches — the read side, `Store`;
- declares what it can do (`Capability`) and owns every line of SQL and every dialect
  difference of its format; its writes (rewind, branch, merge, prune, delete, undo)
  are a `History`, reached through `Store.history()`.

The CLI and the TUI see only this module's types and the model's dataclasses. An
operation a format cannot do raises `Unsupported` (exit 2), naming the format and the
operation.

What a format must give and what it may (the lists below, checked against the classes by
tests/formats/test_capabilities.py):
- a Store gives every read of REQUIRED_READS (abstract); OPTIONAL_READS have a default
  here, correct for any format, that a format overrides to read faster or to say more;
  CAPABILITY_CALLS refuse (Unsupported) or find nothing unless the format does them;
- a History gives every write of REQUIRED_WRITES (abstract; one that the format cannot
  do raises Unsupported, as RewindAndBranchOnly does); the capabilities EDIT, RUN, REDO
  and COMPARE are small Protocols (EditsState, RecordsRuns, Redoes, Compares) that a
  format implements exactly when its FormatSpec declares them.

Ordering promises every format keeps:
- within a thread, `read_thread` returns checkpoints by `step` (oldest first unless
  `descending`), ties in the format's own order; a thread's head is its last checkpoint;
- `thread_summaries` sorts by the head's time (newest first) unless told otherwise,
  ties by thread id.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import Enum
from typing import (
    TYPE_CHECKING,
    Any,
    Protocol,
    TypeVar,
    cast,
    runtime_checkable,
)

from agentctl.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from agentctl.errors import CorruptRowError
    from agentctl.model import Checkpoint, CheckpointMetadata, SearchHit, ThreadSummary
    from agentctl.storage.results import (
        DeletePlan,
        MergePlan,
        OpRecord,
        OpResult,
        PrunePlan,
        PurgeResult,
        RewindPlan,
        TimeTravelResult,
    )


class Capability(str, Enum):
    """What a format can do. The CLI and the TUI ask before they offer an operation."""

    READ = "read"  # threads, log, show, diff, tree
    SEARCH = "search"  # full-text search (an index of the format's own or a scan)
    STATS = "stats"  # usage statistics
    REWIND = "rewind"
    BRANCH = "branch"
    MERGE = "merge"
    PRUNE = "prune"
    DELETE = "delete"  # threads delete
    UNDO = "undo"  # oplog, undo, purge
    FOLLOW = "follow"  # the TUI's follow mode (new rows polled)
    BACKUP = "backup"  # an online copy of the database (SQLite)
    DOCTOR = "doctor"  # problem checks (and index fixes where offered)
    IMPORT = "import"  # import / export of JSON Lines
    SNAPSHOT = "snapshot"  # the library's snapshot writer (AgentOS)
    EDIT = "edit"  # a checkpoint's state edited as a new head (`edit`)
    RUN = "run"  # the user's agent run from a checkpoint (`run`: the framework's)
    REDO = "redo"  # an undone operation done again (the journal's)
    COMPARE = "compare"  # where two runs parted (`compare`)


ALL_CAPABILITIES = tuple(Capability)

#: the places `Store.search` looks in (`agentctl search --in`): the messages, the tool
#: results (hits' `where` "tools_result") and the state; all three unless narrowed
SEARCH_PLACES: tuple[str, ...] = ("messages", "tools", "state")


def check_search_places(places: Sequence[str]) -> frozenset[str]:
    """The places as a set; an unknown one is a UsageError."""
    bad = [p for p in places if p not in SEARCH_PLACES]
    if bad:
        raise UsageError(f"unknown search place {bad[0]!r}; use {', '.join(SEARCH_PLACES)}")
    return frozenset(places)


class Unsupported(UsageError):
    """The format of this database cannot do the operation asked for (exit 2)."""

    def __init__(self, format_name: str, operation: str):
        self.format_name = format_name
        self.operation = operation
        super().__init__(f"the {format_name} format does not support {operation}")


def _entry_point(name: str) -> Any:
    """The object `module:attribute` names (a FormatSpec's store opener or history)."""
    import importlib

    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class FormatSpec:
    """One format: its name (`--format NAME`), what it can do, how it is recognised and
    opened. `matches(tables)` gets {table name: set of column names} of the database
    (its current schema on Postgres) and says whether the database is of this format.
    `open(kind, target, readonly, create)` makes the format's `Store` (not connected):
    kind is "sqlite" (target a file path) or "postgres" (target a DSN).

    `store` and `history` name the format's opener and its History class as entry
    points, "module:name", imported when first used: detecting a format imports none of
    its stores or drivers, and the layers of a format point one way: its spec (the
    package, this object) <- its store (which names its spec as `format`) <- its history
    (which reads through the store). `Store.history()` makes `history(store, **options)`."""

    name: str
    title: str
    description: str
    capabilities: frozenset[Capability]
    matches: Callable[[Mapping[str, set[str]]], bool]
    #: "module:name" of `opener(kind, target, *, readonly, create, **kwargs) -> Store`
    store: str
    #: "module:name" of the History class (`cls(store, **options)`); "" when read-only
    history: str = ""
    #: the tables whose presence the detection looks for (for messages)
    tables: tuple[str, ...] = ()
    #: capabilities only one dialect has, e.g. {"backup": ("sqlite",)}
    dialects: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: a plug-in's: the formats it is tried before in detection (else after the built-ins)
    detect_before: tuple[str, ...] = ()
    #: why a database that matches no format is not of this one, when its tables come
    #: close ({table: columns} -> one clause, or None): the message of a failed detection
    mismatch: Callable[[Mapping[str, set[str]]], str | None] | None = None
    #: "module:name" of `read(path, limit=N)`: the first page of `threads list` of a
    #: SQLite file, read on the caller's thread (the TUI's start); "" when none
    first_page: str = ""

    def open(
        self, kind: str, target: str, *, readonly: bool = True, create: bool = False, **kwargs: Any
    ) -> Store:
        opener = _entry_point(self.store)
        return opener(kind, target, readonly=readonly, create=create, **kwargs)

    def read_first_page(self, path: str, limit: int) -> list[Any]:
        if not self.first_page:
            raise Unsupported(self.name, "a first page read apart")
        return _entry_point(self.first_page)(path, limit=limit)

    def make_history(self, store: Store, **options: Any) -> History:
        if not self.history:
            raise Unsupported(self.name, "writes")
        return _entry_point(self.history)(store, **options)

    def can(self, capability: Capability | str, kind: str | None = None) -> bool:
        cap = Capability(capability)
        if cap not in self.capabilities:
            return False
        only = self.dialects.get(cap.value)
        return kind is None or only is None or kind in only

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "capabilities": [c.value for c in ALL_CAPABILITIES if c in self.capabilities],
            "tables": list(self.tables),
        }


@dataclass
class Problem:
    """One thing `doctor` found: `kind` "error" or "warning" (a warning is not a
    problem: slower reads, a missing optional table), `check` the name of the check
    (the key `doctor --json` groups problems by, e.g. "orphan_parents"), `subject` what
    it is about (a thread, a row, a table), `detail` one line, `label` the short name
    shown in the PROBLEM column (default: check), `data` what `--json` lists for it
    (default: {subject, detail})."""

    kind: str
    check: str
    subject: str
    detail: str
    label: str = ""
    data: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "check": self.check, "subject": self.subject, "detail": self.detail}

    def json_value(self) -> Any:
        return self.data if self.data is not None else {"subject": self.subject, "detail": self.detail}


@dataclass
class PruneSpec:
    """What `prune` deletes, as the user asked it. Each format uses the fields that have
    a meaning for it and refuses the others with `Unsupported` (AgentOS prunes the
    checkpoints of threads; the article's store prunes whole sessions).

    threads: the threads asked for (None: every thread); keep_last: keep the newest N
    (checkpoints of a thread, or sessions of a user); older_than: seconds; milestones:
    keep N evenly spaced checkpoints; statuses: only sessions in these statuses."""

    threads: list[str] | None = None
    keep_last: int | None = None
    older_than: float | None = None
    milestones: int | None = None
    statuses: list[str] | None = None


def shared_prefix(lines: Sequence[Sequence[str]]) -> int:
    """How many checkpoint ids all these lines of ids (root first) share from the root."""
    n = 0
    for ids in zip(*lines, strict=False):
        if any(i != ids[0] for i in ids[1:]):
            break
        n += 1
    return n


def skip_copies(line: Sequence[CheckpointMetadata], forks: Mapping[str, str]) -> list[CheckpointMetadata]:
    """A line (root first) without a branch's copies of the line before its fork point:
    `forks` maps a branch thread that starts with copies of its fork point's line (items
    or events 1..N, its first one naming the fork point, at step N, as its parent) to its
    fork point. Where the line goes on past the copies they are left out (the branch's own
    steps follow the fork point); where it ends at copy K, the copy stands in place of
    its original (the line to step K - 1, then the copy)."""
    out: list[CheckpointMetadata] = []
    copies: tuple[str, str, int] | None = None  # (branch thread, fork thread, fork step)
    for i, m in enumerate(line):
        if out and m.thread_id != out[-1].thread_id and forks.get(m.thread_id) == out[-1].checkpoint_id:
            copies = (m.thread_id, out[-1].thread_id, out[-1].step)
        if copies is not None and m.thread_id == copies[0] and m.step <= copies[2]:
            if i < len(line) - 1:
                continue
            while out and out[-1].thread_id == copies[1] and out[-1].step >= m.step:
                out.pop()
        out.append(m)
    return out


class Content:
    """A checkpoint's messages and state as `compare` reads them (`Store.read_contents`).

    `key`: a hashable value such that equal keys mean equal messages and state (the
    stored bytes of both, say), or None when the format cannot tell without decoding.
    `value()`: (messages, state), decoded at each call when made from `decode` (not
    kept: the caller keeps what it needs; a format's errors, e.g. CorruptRowError, are
    raised then)."""

    __slots__ = ("key", "_decode", "_value")

    def __init__(
        self,
        key: Any = None,
        value: tuple[Any, Any] | None = None,
        decode: Callable[[], tuple[Any, Any]] | None = None,
    ):
        self.key = key
        self._value = value
        self._decode = decode

    def value(self) -> tuple[Any, Any]:
        if self._value is not None:
            return self._value
        assert self._decode is not None
        return self._decode()

    def state(self) -> Any:
        """The state alone (a format that stores it apart decodes only it)."""
        return self.value()[1]


def local_file_of(kind: str, target: str) -> str | None:
    """`Store.local_file` of a database of this kind at this target."""
    return target if kind == "sqlite" else None


class Store(ABC):
    """The read side of a format on one database. Use as `async with store:`.

    Every method returns the model's dataclasses (never driver rows) and raises
    `agentctl.errors.AgentctlError` subclasses for what the user can act on.
    """

    #: the format (set by each adapter class)
    format: FormatSpec
    #: "sqlite" or "postgres"
    kind: str = ""
    #: a display name of the database, safe to print (no password)
    display_name: str = ""
    #: the database's file on this machine (SQLite: its path, what a backup copies and
    #: `import --create` makes), None for a database on a server (Postgres)
    local_file: str | None = None

    @property
    def stores_nul(self) -> bool:
        """Whether text with NUL characters can be stored or looked up (not on Postgres)."""
        return self.kind != "postgres"

    @property
    def step_bits(self) -> int:
        """The bits of a step number, sign excluded (INTEGER: 32 on Postgres, 64 on SQLite)."""
        return 31 if self.kind == "postgres" else 63

    async def __aenter__(self) -> Store:
        await self.connect()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def connect(self) -> None:  # noqa: B027 (an optional hook: nothing by default)
        """Open connections and check the schema. Called lazily by every method."""

    async def close(self) -> None:  # noqa: B027 (an optional hook: nothing by default)
        """Release connections. Safe to call twice."""

    # ---- what it can do ----------------------------------------------------------

    def can(self, capability: Capability | str) -> bool:
        return self.format.can(capability, self.kind)

    def require(self, capability: Capability | str, operation: str | None = None) -> None:
        """Raise Unsupported unless the format can do this here."""
        cap = Capability(capability)
        if not self.can(cap):
            where = f" on {self.kind}" if cap in self.format.capabilities else ""
            raise Unsupported(self.format.name + where, operation or cap.value)

    def history(self, **options: Any) -> History:
        """The write side (rewind, branch, merge, prune, delete, undo); `options` are
        the format's (e.g. a seeded clock in tests). The spec names the class."""
        return self.format.make_history(self, **options)

    # ---- threads -------------------------------------------------------------------

    #: the keyword filters `thread_summaries` and `count_threads` take besides prefix
    #: (e.g. "user", "status" for session stores)
    thread_filters: tuple[str, ...] = ()

    @abstractmethod
    async def thread_summaries(
        self,
        limit: int = 50,
        offset: int = 0,
        sort: str = "updated",
        descending: bool = True,
        prefix: str | None = None,
    ) -> list[ThreadSummary]:
        """One row per thread with its count and head. sort: "updated", "thread",
        "checkpoints", "step", "created". Ties by thread id. A format with
        `thread_filters` also takes those as keyword arguments."""

    @abstractmethod
    async def count_threads(self, prefix: str | None = None) -> int:
        """Number of threads (whose id starts with `prefix`, if given)."""

    async def filter_values(self, name: str) -> list[str]:
        """The values one of `thread_filters` can match in this database (sorted), e.g.
        the statuses its sessions have: what `threads list` names when a value matches
        nothing. A format without filters has none."""
        return []

    async def thread_summary(self, thread_id: str) -> ThreadSummary | None:
        """The summary of one thread, or None when it does not exist. (Default: the
        first thread by id among those the id starts, which is the id itself.)"""
        page = await self.thread_summaries(1, 0, "thread", False, thread_id)
        return page[0] if page and page[0].thread_id == thread_id else None

    async def all_thread_ids(self) -> list[str]:
        """Every thread id, sorted."""
        out: list[str] = []
        offset = 0
        while True:
            page = await self.thread_summaries(1000, offset, "thread", False)
            out.extend(t.thread_id for t in page)
            if len(page) < 1000:
                return out
            offset += 1000

    async def find_thread_ids(self, prefix: str, limit: int = 10) -> list[str]:
        """Thread ids that start with `prefix`, sorted."""
        return [t.thread_id for t in await self.thread_summaries(limit, 0, "thread", False, prefix)]

    # ---- checkpoints ---------------------------------------------------------------

    @abstractmethod
    async def count(self, thread_id: str | None = None) -> int:
        """Number of checkpoints (in one thread, or in all)."""

    @abstractmethod
    async def read_thread(
        self, thread_id: str, limit: int = 100, offset: int = 0, descending: bool = False
    ) -> list[CheckpointMetadata]:
        """A page of a thread's checkpoints in step order (oldest first by default)."""

    async def read_thread_forks(
        self, thread_id: str, limit: int = 100, offset: int = 0, descending: bool = False
    ) -> tuple[list[CheckpointMetadata], list[str]]:
        """read_thread, and the ids of those checkpoints with children in other threads."""
        rows = await self.read_thread(thread_id, limit, offset, descending)
        ids = {m.checkpoint_id for m in rows}
        forks = {m.parent_checkpoint_id for m in await self.branches_of([thread_id])}
        return rows, [cid for cid in (m.checkpoint_id for m in rows) if cid in forks and cid in ids]

    async def describe(self, metas: Sequence[CheckpointMetadata]) -> list[CheckpointMetadata]:
        """The checkpoints as `log`, `tree` and the TUI's list show them: a format whose
        metadata says little (LangGraph: its source) gives each a fuller summary here."""
        return list(metas)

    @abstractmethod
    async def get(self, checkpoint_id: str) -> Checkpoint | None:
        """The checkpoint with this id, or None. Raises CorruptRowError if it cannot be decoded."""

    async def get_metadata(self, checkpoint_id: str) -> CheckpointMetadata | None:
        """Only the metadata of a checkpoint (default: `get`'s, content decoded too)."""
        cp = await self.get(checkpoint_id)
        return cp.metadata if cp is not None else None

    async def get_latest(self, thread_id: str) -> Checkpoint | None:
        """The head of a thread, or None."""
        page = await self.read_thread(thread_id, 1, 0, descending=True)
        return await self.get(page[0].checkpoint_id) if page else None

    async def _thread_metas(self, thread_id: str) -> AsyncIterator[CheckpointMetadata]:
        """A thread's checkpoints in step order, read a page at a time (the defaults' walk)."""
        offset = 0
        while page := await self.read_thread(thread_id, 1000, offset):
            for meta in page:
                yield meta
            offset += len(page)

    async def at_step(self, thread_id: str, step: int) -> CheckpointMetadata | None:
        """The checkpoint of a thread at a step (the last one if the step repeats).
        (Default: a walk of the thread; a store with an index on its steps seeks.)"""
        found = None
        async for meta in self._thread_metas(thread_id):
            found = meta if meta.step == step else found
        return found

    async def all_at_step(self, thread_id: str, step: int, limit: int = 11) -> list[CheckpointMetadata]:
        """Every checkpoint of a thread at a step (forks inside a thread repeat steps),
        newest first, at most `limit`. A format whose steps never repeat in a thread
        answers with `at_step`'s."""
        found = await self.at_step(thread_id, step)
        return [found] if found is not None else []

    async def failed_checkpoints(self, thread_id: str, checkpoint_ids: Sequence[str]) -> set[str]:
        """Those of `checkpoint_ids` (of one thread) where a run failed: the checkpoint
        a task's error was written against (LangGraph's `__error__` write). `log`
        marks them; a format that records no failure has none."""
        return set()

    async def children(self, checkpoint_id: str) -> list[CheckpointMetadata]:
        """Checkpoints whose parent is this one, in any thread. (Default: a walk of its
        thread, then the first checkpoints of the threads branched from it.)"""
        meta = await self.get_metadata(checkpoint_id)
        if meta is None:
            return []
        out = [m async for m in self._thread_metas(meta.thread_id) if m.parent_checkpoint_id == checkpoint_id]
        return out + [
            m for m in await self.branches_of([meta.thread_id]) if m.parent_checkpoint_id == checkpoint_id
        ]

    @abstractmethod
    async def branches_of(self, thread_ids: Sequence[str]) -> list[CheckpointMetadata]:
        """First checkpoints of other threads whose parent is in one of these threads."""

    async def existing_checkpoint_ids(self, ids: Sequence[str]) -> set[str]:
        """Those of `ids` that name a checkpoint."""
        return {cid for cid in ids if await self.get_metadata(cid) is not None}

    async def fork_children(self, parent_ids: Sequence[str], thread_id: str) -> list[tuple[str, str]]:
        """(thread_id, parent_id) of the checkpoints outside `thread_id` whose parent is
        one of `parent_ids`, by thread then step."""
        out: list[tuple[str, str]] = []
        for pid in parent_ids:
            out.extend((c.thread_id, pid) for c in await self.children(pid) if c.thread_id != thread_id)
        return sorted(out)

    async def change_token(self, thread_id: str | None) -> tuple[Any, Any]:
        """Something that changes when another writer adds rows anywhere, and when the
        given thread changes (the TUI's follow mode polls it)."""
        if thread_id is None:
            return await self.count(), None
        head = await self.read_thread(thread_id, 1, 0, descending=True)
        return await self.count(), (await self.count(thread_id), head[0].checkpoint_id if head else None)

    async def archive_threads(self) -> set[str]:
        """Threads that hold what a rewind set aside (shown as "abandoned")."""
        return set()

    @abstractmethod
    async def find_checkpoint_ids(self, prefix: str, limit: int = 10) -> list[str]:
        """Checkpoint ids that start with `prefix`, sorted."""

    @abstractmethod
    def iter_checkpoints(
        self, thread_ids: Sequence[str] | None = None, batch: int = 500
    ) -> AsyncIterator[Checkpoint | CorruptRowError]:
        """Every checkpoint (of these threads), in thread then step order, streamed.
        A row that cannot be decoded is yielded as its CorruptRowError, not raised."""

    # ---- runs (`compare`) ------------------------------------------------------------

    async def lineage(self, checkpoint_id: str) -> list[CheckpointMetadata]:
        """The checkpoints from the root to this one along parent links, root first
        (across threads: a branch's line starts in the thread it was branched from); []
        when it does not exist. A parent that no longer exists (pruned) ends the line
        there; a cycle (a buggy writer) ends it where it repeats. This default reads each
        thread met on the way once (its metadata) and looks a parent in another thread
        up by id."""
        meta = await self.get_metadata(checkpoint_id)
        if meta is None:
            return []
        known: dict[str, CheckpointMetadata] = {}
        read_threads: set[str] = set()
        path: list[CheckpointMetadata] = []
        seen: set[str] = set()
        cur: CheckpointMetadata | None = meta
        while cur is not None and cur.checkpoint_id not in seen:
            seen.add(cur.checkpoint_id)
            path.append(cur)
            pid = cur.parent_checkpoint_id
            if not pid:
                break
            if pid not in known:
                parent = await self.get_metadata(pid)
                if parent is None:
                    break
                if parent.thread_id not in read_threads:
                    read_threads.add(parent.thread_id)
                    total = await self.count(parent.thread_id)
                    for m in await self.read_thread(parent.thread_id, max(total, 1), 0):
                        known.setdefault(m.checkpoint_id, m)
                known.setdefault(pid, parent)
            cur = known.get(pid)
        path.reverse()
        return path

    async def read_contents(self, metas: Sequence[CheckpointMetadata]) -> dict[str, Content]:
        """The messages and state of these checkpoints, by id (CheckpointNotFound for
        one that does not exist). This default decodes whole checkpoints (streamed a
        thread at a time when many are wanted) and gives no keys; a format whose stored
        bytes tell equal contents apart overrides it (keys, decoding on demand)."""
        from agentctl.errors import CheckpointNotFound, CorruptRowError

        want = {m.checkpoint_id for m in metas}
        out: dict[str, Content] = {}
        if len(want) <= 32:
            for cid in want:
                cp = await self.get(cid)
                if cp is None:
                    raise CheckpointNotFound(cid)
                out[cid] = Content(value=(cp.messages, cp.state))
            return out
        threads = sorted({m.thread_id for m in metas})
        async for item in self.iter_checkpoints(threads):
            if isinstance(item, CorruptRowError):
                if item.checkpoint_id in want:
                    raise item
                continue
            if item.metadata.checkpoint_id in want:
                out[item.metadata.checkpoint_id] = Content(value=(item.messages, item.state))
        missing = want - out.keys()
        if missing:
            raise CheckpointNotFound(sorted(missing)[0])
        return out

    async def without_copies(self, line: list[CheckpointMetadata]) -> list[CheckpointMetadata]:
        """A line (`lineage`) as `compare` walks it: the same checkpoints, but for those
        that only copy the line before them (a format whose branch holds copies of the
        transcript up to its fork point leaves them out: `skip_copies`). This default
        gives the line as it is."""
        return line

    async def run_lines(self, checkpoint_ids: Sequence[str]) -> tuple[list[list[str]], dict[str, Content]]:
        """`compare`'s reads in one call: each checkpoint's line (`lineage` then
        `without_copies`, as checkpoint ids, root first) and the contents (`read_contents`) of the
        checkpoints on the lines (the part they share too: its steps are counted).
        CheckpointNotFound for a checkpoint that does not
        exist. This default makes the two calls; a format that reads a thread's line and
        texts in one pass overrides it."""
        from agentctl.errors import CheckpointNotFound

        lines = [await self.without_copies(await self.lineage(cid)) for cid in checkpoint_ids]
        for cid, line in zip(checkpoint_ids, lines, strict=False):
            if not line:
                raise CheckpointNotFound(cid)
        ids = [[m.checkpoint_id for m in line] for line in lines]
        wanted = {m.checkpoint_id: m for line in lines for m in line}
        return ids, await self.read_contents(list(wanted.values()))

    # ---- capabilities as library calls ------------------------------------------------

    #: which way the last `search` went: "fts" (a full-text index) or "scan"
    last_search_path: str = ""

    @abstractmethod
    async def search(
        self,
        text: str,
        thread_id: str | None = None,
        role: str | None = None,
        limit: int = 50,
        scan: bool = False,
        places: Sequence[str] = SEARCH_PLACES,
    ) -> list[SearchHit]:
        """Checkpoints whose messages (of `role`, if given), tool results or state
        contain `text`, case-insensitively; newest first, one hit per checkpoint and
        place, its `path` saying where. `places`: of SEARCH_PLACES, where to look (a
        `role` looks in messages only); a format looks where it can (its state may not
        be searched). Through the format's full-text index where it has a usable one,
        unless `scan`; `last_search_path` says which ran."""

    #: the checks `doctor --json` lists even when they find nothing
    doctor_checks: tuple[str, ...] = ()

    async def doctor(self, limit: int = 100) -> list[Problem]:
        """What is wrong with the database, as this format sees it (at most `limit`
        findings of each check). Reads only."""
        self.require(Capability.DOCTOR, "doctor")
        return []

    async def fix_indexes(self) -> list[str]:
        """Create the indexes the format's reads want and the database lacks, in one
        write transaction; their names. (`doctor --fix-indexes`)"""
        raise Unsupported(self.format.name, "doctor --fix-indexes")

    async def fix(self) -> list[str]:
        """Repair what `doctor` reports that the format can repair, in one write
        transaction, undoably; one line per repair. (`doctor --fix`)"""
        raise Unsupported(self.format.name, "doctor --fix")

    async def usage_stats(self, user: str | None = None, days: float | None = None) -> dict[str, Any]:
        """Usage statistics of the format (`agentctl stats`), as plain JSON data."""
        raise Unsupported(self.format.name, "stats")

    async def written_by(self) -> list[str] | None:
        """Which framework(s) wrote the database, where a format is written by more than
        one (`formats`); None where the format does not tell."""
        return None

    async def backup(self, dest: str) -> str:
        """An online, consistent copy of the database at `dest` (SQLite's backup API);
        the path written."""
        self.require(Capability.BACKUP, "backup")
        raise Unsupported(self.format.name, "backup")

    async def search_index(self, action: str) -> dict[str, Any]:
        """The format's search index, for formats without full-text search of their own
        (`agentctl index`): "build" (or rebuild), "status" or "drop"; returns its status
        ({"state": "current" | "behind" | "corrupt" | "absent" | ..., "path", ...}).
        SQLite: a side file next to the database (agentctl.storage.textindex), the
        database only read; Postgres: indexes in the database, only on "build"."""
        raise Unsupported(self.format.name, "a search index (`agentctl index`)")

    async def compact(self) -> dict[str, Any]:
        """VACUUM after a delete (`prune --vacuum`, `threads delete --vacuum`): SQLite
        rewrites the file (it shrinks), Postgres runs VACUUM on the format's tables
        (their space becomes reusable). Outside any transaction; needs write access.
        Returns {"vacuumed": "file" or the tables' names, "before": bytes, "after":
        bytes}: the file's size (SQLite) or the tables' total size (Postgres)."""
        raise Unsupported(self.format.name, "--vacuum")


#: the reads every Store gives (its abstract methods)
REQUIRED_READS = (
    "thread_summaries",
    "count_threads",
    "count",
    "read_thread",
    "get",
    "branches_of",
    "find_checkpoint_ids",
    "iter_checkpoints",
    "search",
)
#: the reads with a default here (right for every format; overridden to be faster or say more)
OPTIONAL_READS = (
    "thread_summary",
    "find_thread_ids",
    "get_metadata",
    "get_latest",
    "at_step",
    "children",
    "filter_values",
    "all_thread_ids",
    "read_thread_forks",
    "describe",
    "all_at_step",
    "failed_checkpoints",
    "existing_checkpoint_ids",
    "fork_children",
    "change_token",
    "archive_threads",
    "lineage",
    "read_contents",
    "without_copies",
    "run_lines",
    "written_by",
)
#: what a format does only if it can (the default refuses with Unsupported, or finds nothing)
CAPABILITY_CALLS = ("doctor", "fix_indexes", "fix", "usage_stats", "backup", "search_index", "compact")
#: the writes every History gives (its abstract methods; Unsupported where the format cannot)
REQUIRED_WRITES = (
    "plan_rewind",
    "rewind",
    "branch",
    "plan_merge",
    "merge_branch",
    "plan_prune_spec",
    "prune_spec",
    "plan_delete_thread",
    "delete_thread",
    "oplog",
    "undo",
    "purge",
)

#: the writes of a History that are retried when their transaction gave way to another
#: program's writer (GaveWay), how often, and the pause before the first retry (doubling)
RETRIED_WRITES = (
    "rewind",
    "branch",
    "merge_branch",
    "prune_spec",
    "delete_thread",
    "undo",
    "redo",
    "purge",
    "record_run",
)
WRITE_ATTEMPTS = 5
RETRY_PAUSE = 0.05

_retrying: ContextVar[bool] = ContextVar("agentctl_retrying", default=False)
_W = TypeVar("_W", bound=Callable[..., Any])


def retried_write(write: _W) -> _W:
    """A History's write (decorator: each of RETRIED_WRITES a format defines wears it) run
    again from the start (it re-reads and re-plans in its transaction) when its
    transaction gave way to another program's writer; after WRITE_ATTEMPTS, one
    DatabaseBusy line (nothing was changed). A write inside a write runs once: the outer
    one retries."""

    @functools.wraps(write)
    async def retried(self: Any, *args: Any, **kwargs: Any) -> Any:
        import asyncio
        import random

        from agentctl.errors import DatabaseBusy, GaveWay

        if _retrying.get():  # a write inside a write: the outer one retries
            return await write(self, *args, **kwargs)
        token = _retrying.set(True)
        try:
            for attempt in range(WRITE_ATTEMPTS):
                try:
                    return await write(self, *args, **kwargs)
                except GaveWay as exc:
                    where = exc.where
                if attempt + 1 < WRITE_ATTEMPTS:
                    await asyncio.sleep(RETRY_PAUSE * 2**attempt * (1 + random.random()))
            raise DatabaseBusy(
                f"{where}: another program kept writing the same rows (a live agent?); agentctl "
                f"gave way {WRITE_ATTEMPTS} times, nothing was changed; try again",
                nothing_changed=True,
            )
        finally:
            _retrying.reset(token)

    retried.retried_write = True  # type: ignore[attr-defined]
    return cast(_W, retried)


def whole_undo_only(format_name: str, threads: Sequence[str] | None) -> None:
    """Refuse `undo --thread` on a format whose operations are undone whole."""
    if threads is not None:
        raise UsageError(f"undo --thread is not offered on {format_name}: its operations are undone whole")


class History(ABC):
    """The write side of a format: every write is one transaction, recorded in the
    format's operation log and undoable until `purge`. Plans (`plan_*`) write nothing.

    The plan and result types are storage/results.py's (`RewindPlan`, `TimeTravelResult`,
    `MergePlan`, `PrunePlan`, `OpResult`, `OpRecord`, `PurgeResult`), so the CLI and
    the TUI render every format's writes alike.

    On another program's Postgres tables a write's transaction gives way to that
    program's writers (`GaveWay`); the writes of RETRIED_WRITES a subclass defines are
    then run again, a few times: each of RETRIED_WRITES a format defines is decorated
    with `retried_write` (tests/formats/test_capabilities.py checks that none lacks it)."""

    #: the id of the last operation this object recorded
    last_op_id: int | None = None
    #: what a prune of ONE thread can keep, as CheckpointGC names (the TUI's prune
    #: dialog offers these only): the last N checkpoints, those younger than an age,
    #: N milestones
    prune_policies: tuple[str, ...] = ("keep_last_n", "keep_age", "keep_milestones")

    # what `edit` reads of a History whose format edits (EditsState); these defaults say
    # what a format that does not set them gets
    #: what its edit_state does, as `edit` asks before it writes ({ref}: REF, {thread}: its thread)
    EDIT_CONFIRM = "write a new head of {thread} holding this checkpoint with these values"
    #: an edit may set keys the state does not have (ADK's state_delta)
    EDIT_NEW_KEYS = False
    #: `--unset KEY` writes None (the format cannot drop a key)
    EDIT_UNSET_TO_NONE = False

    def edit_view(self, cp: Checkpoint) -> dict[str, Any]:
        """What an edit's keys name: the state without the keys a format adds of its own
        (dunder names); a format whose edits change something else (an SDK's item) says so."""
        return {k: v for k, v in (cp.state or {}).items() if not (k.startswith("__") and k.endswith("__"))}

    def edit_check(self, old: dict[str, Any], new: dict[str, Any]) -> None:  # noqa: B027 (an optional hook: nothing by default)
        """Refuse (UsageError) an edited value the format's rows cannot hold; default: none."""

    async def run_options(self, thread_id: str, from_id: str | None = None) -> dict[str, Any]:
        """What a run of this thread (from the checkpoint `from_id`) passes the framework
        besides its input (the OpenAI Agents SDK: its session class; CrewAI: what to
        restore, or UsageError when CrewAI cannot); default: nothing."""
        return {}

    @abstractmethod
    async def plan_rewind(self, checkpoint_id: str, hard: bool = False) -> RewindPlan:
        """What `rewind` would do."""

    @abstractmethod
    async def rewind(
        self, checkpoint_id: str, hard: bool = False, *, archive_thread: str | None = None
    ) -> TimeTravelResult:
        """Make the checkpoint its thread's head again; later ones go to an archive
        thread (or the trash with hard=True)."""

    @abstractmethod
    async def branch(self, from_checkpoint_id: str, branch_name: str) -> str:
        """A new thread holding the history up to the checkpoint; its id."""

    @abstractmethod
    async def plan_merge(
        self, branch_thread_id: str, into_thread_id: str, strategy: str = "fail"
    ) -> MergePlan:
        """What `merge_branch` would write."""

    @abstractmethod
    async def merge_branch(
        self,
        branch_thread_id: str,
        into_thread_id: str,
        strategy: str = "fail",
        *,
        checkpoint_id: str | None = None,
    ) -> str:
        """Merge a branch into a thread; the new head's checkpoint id (`checkpoint_id`:
        the one its plan announced)."""

    @abstractmethod
    async def plan_prune_spec(self, spec: PruneSpec, preview: int | None = None) -> list[PrunePlan]:
        """The plans of a prune as the user asked it."""

    @abstractmethod
    async def prune_spec(
        self,
        spec: PruneSpec,
        *,
        progress: Callable[[int], Any] | None = None,
        plans: Sequence[PrunePlan] | None = None,
    ) -> list[OpResult]:
        """Carry out a prune as ONE operation (one transaction: all or nothing, one
        undo); its OpResults. `progress(n)`, when given, is called as the work advances.
        `plans`: the plans of this prune shown to the user (plan_prune_spec), which a
        format may reuse where the database is unchanged since (never trusted blindly)."""

    @abstractmethod
    async def plan_delete_thread(self, thread_id: str) -> DeletePlan:
        """What `delete_thread` would delete (the rows it counts are the rows the write
        deletes)."""

    @abstractmethod
    async def delete_thread(self, thread_id: str) -> OpResult:
        """Delete a thread (to the trash)."""

    @abstractmethod
    async def oplog(self, limit: int = 50) -> list[OpRecord]:
        """The newest operations first."""

    @abstractmethod
    async def undo(
        self, op_id: int | None = None, threads: Sequence[str] | None = None, dry_run: bool = False
    ) -> OpResult:
        """Revert an operation (the newest undoable one by default). `threads`: of a
        prune of several threads, restore those alone (the op stays undoable for the
        others); a format whose operations are undone whole raises UsageError.
        `dry_run`: what it would do (the checkpoints it would bring back or remove),
        refused as the undo would be, nothing written."""

    async def redo(self, op_id: int | None = None, dry_run: bool = False) -> OpResult:
        """Re-apply an undone operation (the newest undone one by default) when nothing
        it touched changed since its undo; an OpResult (dry_run: what it would do,
        nothing written). Offered by the formats on the journal (agentctl/storage/
        journal/); the others raise Unsupported naming the format."""
        store = getattr(self, "store", None) or getattr(self, "_checkpointer", None)
        fmt = getattr(store, "format", None)
        raise Unsupported(fmt.name if fmt is not None else type(self).__name__, "redo")

    @abstractmethod
    async def purge(self, dry_run: bool = False) -> PurgeResult:
        """Empty the trash."""


# ---- the capabilities a History or a Store declares beyond the writes every History has ----
# A format declares them in its FormatSpec (Capability.EDIT, RUN, REDO, COMPARE); the code
# that uses one asks the declaration (`capable`), never `hasattr`. The conformance test
# (tests/formats/test_capabilities.py) checks that each built-in format declares exactly
# the capabilities its classes implement.


@runtime_checkable
class EditsState(Protocol):
    """Capability.EDIT: the History writes a checkpoint's state edited (`agentctl edit`)
    itself. What it shows and takes is the History's `edit_view`, `edit_check`,
    `EDIT_CONFIRM`, `EDIT_NEW_KEYS`, `EDIT_UNSET_TO_NONE` (defaults on History)."""

    async def edit_state(
        self, checkpoint_id: str, state: dict[str, Any], what: str, **extra: Any
    ) -> OpResult:
        """Write `state` at the checkpoint as one undoable op (`extra`: the keywords the
        format takes, LangGraph's keys, as_node, thread_id)."""
        ...


@runtime_checkable
class RecordsRuns(Protocol):
    """Capability.RUN: what the framework wrote, run by agentctl in a child process (`run`,
    and LangGraph's `edit` through the user's graph), recorded as one undoable op."""

    async def run_keys(self, thread_id: str) -> Any:
        """The rows the run may change, as they are before it (given back to record_run)."""
        ...

    async def record_run(
        self, thread_id: str, before: Any, summary: str, details: dict[str, Any], kind: str = "run"
    ) -> int | None:
        """One op of what changed since `before`; its id (None: nothing changed)."""
        ...


@runtime_checkable
class Redoes(Protocol):
    """Capability.REDO: an undone operation done again (the journal's formats)."""

    async def redo(self, op_id: int | None = None, dry_run: bool = False) -> OpResult: ...


@runtime_checkable
class Compares(Protocol):
    """Capability.COMPARE: the Store's reads `compare` walks two runs with (defaults on
    Store; a format overrides them to read faster)."""

    async def lineage(self, checkpoint_id: str) -> list[CheckpointMetadata]: ...

    async def run_lines(
        self, checkpoint_ids: Sequence[str]
    ) -> tuple[list[list[str]], dict[str, Content]]: ...


#: the Protocol each of these capabilities is
CAPABILITY_PROTOCOLS: dict[Capability, type] = {
    Capability.EDIT: EditsState,
    Capability.RUN: RecordsRuns,
    Capability.REDO: Redoes,
    Capability.COMPARE: Compares,
}


def implements(cls: type, capability: Capability) -> bool:
    """Whether the class (a History's, or a Store's for COMPARE) has the capability's
    methods (History's own refusal of redo does not count)."""
    if capability is Capability.REDO and getattr(cls, "redo", None) is History.redo:
        return False
    return issubclass(cls, CAPABILITY_PROTOCOLS[capability])


def editor(store: Store, history: History) -> EditsState:
    """The History as it edits a state (EDIT); Unsupported naming the format unless it
    declares the capability."""
    store.require(Capability.EDIT, "edit")
    return cast(EditsState, history)


def run_recorder(store: Store, history: History, operation: str = "run") -> RecordsRuns:
    """The History as it records a run of the framework (RUN; `operation`: what the user
    asked, "run" or "edit" through the user's graph); Unsupported unless declared."""
    store.require(Capability.RUN, operation)
    return cast(RecordsRuns, history)


class RewindAndBranchOnly:
    """The History methods a format that offers only rewind and branch (and undo)
    refuses: merge, prune and threads delete raise Unsupported naming the format."""

    store: Any

    def _no(self, what: str) -> Unsupported:
        return Unsupported(self.store.format.name, what)

    async def plan_merge(
        self, branch_thread_id: str, into_thread_id: str, strategy: str = "fail"
    ) -> MergePlan:
        raise self._no("merge")

    async def merge_branch(
        self,
        branch_thread_id: str,
        into_thread_id: str,
        strategy: str = "fail",
        *,
        checkpoint_id: str | None = None,
    ) -> str:
        raise self._no("merge")

    async def plan_prune_spec(self, spec: PruneSpec, preview: int | None = None) -> list[PrunePlan]:
        raise self._no("prune")

    async def prune_spec(
        self,
        spec: PruneSpec,
        *,
        progress: Callable[[int], Any] | None = None,
        plans: Sequence[PrunePlan] | None = None,
    ) -> list[OpResult]:
        raise self._no("prune")

    async def plan_delete_thread(self, thread_id: str) -> DeletePlan:
        raise self._no("threads delete")

    async def delete_thread(self, thread_id: str) -> OpResult:
        raise self._no("threads delete")
