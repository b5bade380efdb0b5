"""The TUI's reads and writes, as coroutines over one store (and its History).

Every method here runs inside a worker on the app's event loop, never on the UI path.
Reads are paged: threads and checkpoints come a page at a time, branches only when a
thread is shown, a checkpoint's blobs only when it is selected.

The one exception is the first page of threads of a SQLite file: a plain thread reads it
from the moment the app is created (`FirstPage`), while Textual starts and draws, and
the app shows it when it mounts (or as soon as it is read).
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from agentctl.errors import CorruptRowError
from agentctl.model import Checkpoint, CheckpointMetadata, ThreadSummary
from agentctl.storage import Store, local_file, make_store

THREAD_PAGE = 100
CHECKPOINT_PAGE = 200


@dataclass
class Detail:
    checkpoint: Checkpoint | None
    base: Checkpoint | None
    base_kind: str
    changes: list[Any]
    error: str = ""


class FirstPage:
    """The thread list's first page (`DataSource.threads("", 0)`) of a SQLite file, read
    on a plain thread with its own read-only connection: the same query as the
    store's, run while the app imports, starts and draws instead of after it opened
    the database. Any error is left to the normal path, which reports it."""

    _started: dict[str, FirstPage] = {}

    def __init__(self, path: str) -> None:
        self.future: Future[list[ThreadSummary]] = Future()
        threading.Thread(target=self._read, args=(path,), name="agentctl-first-threads", daemon=True).start()

    def _read(self, path: str) -> None:
        try:
            from agentctl.storage import first_thread_page

            self.future.set_result(first_thread_page(path, limit=THREAD_PAGE + 1))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            self.future.set_exception(exc)

    @classmethod
    def start(cls, url: str) -> None:
        """Start reading (`agentctl tui` calls this before it imports Textual)."""
        if url not in cls._started and (page := cls._make(url)) is not None:
            cls._started[url] = page

    @classmethod
    def take(cls, url: str) -> FirstPage | None:
        """The read started for `url` (started now if it was not), once."""
        return cls._started.pop(url, None) or cls._make(url)

    @classmethod
    def _make(cls, url: str) -> FirstPage | None:
        path = (url or "").strip()
        if not path or "://" in path:  # a URL (local_file imports the backends' module
            try:  # and its imports: not for a plain file path)
                file = local_file(url)
            except Exception:  # noqa: BLE001 - the normal path reports a bad URL
                return None
            if file is None:
                return None
            path = file
        return cls(path)


class DataSource:
    """One store of the database's format (opened in the app's loop) and, for writes,
    its History."""

    def __init__(
        self,
        url: str,
        *,
        readonly: bool = False,
        history_options: dict[str, Any] | None = None,
        format: str | None = None,
    ) -> None:
        self.url = url
        self.format = format
        self.readonly = readonly
        self.history_options = dict(history_options or {})
        self.store: Store | None = None
        self._history: Any = None
        self._opened = asyncio.Event()
        self._first_page: FirstPage | None = FirstPage.take(url)

    async def open(self) -> Store:
        store = await make_store(self.url, format=self.format, readonly=self.readonly)
        await store.connect()
        self.store = store
        self._opened.set()
        return store

    async def ready(self) -> Store:
        """The store, once `open` has connected it (reads asked for earlier wait)."""
        await self._opened.wait()
        return self.db

    async def close(self) -> None:
        store, self.store = self.store, None
        if store is not None:
            await store.close()

    @property
    def db(self) -> Store:
        if self.store is None:
            raise RuntimeError("the database is not open yet")
        return self.store

    @property
    def history(self) -> Any:
        if self._history is None:
            self._history = self.db.history(**self.history_options)
        return self._history

    # ---- reads ----------------------------------------------------------------------

    def first_threads(self) -> tuple[list[ThreadSummary], bool] | None:
        """`threads()` if its page has been read already (by FirstPage), else None."""
        page = self._first_page
        if page is None or not page.future.done() or page.future.exception() is not None:
            return None
        self._first_page = None
        return self._page(page.future.result(), THREAD_PAGE)

    async def threads(
        self, prefix: str = "", offset: int = 0, limit: int = THREAD_PAGE
    ) -> tuple[list[ThreadSummary], bool]:
        page, self._first_page = self._first_page, None
        if page is not None and (prefix, offset, limit) == ("", 0, THREAD_PAGE):
            try:
                return self._page(await asyncio.wrap_future(page.future), limit)
            except Exception:  # noqa: BLE001 - read it the normal way (which reports it)
                pass
        # One row more than a page tells whether another page exists, without a COUNT.
        rows = await (await self.ready()).thread_summaries(
            limit=limit + 1, offset=offset, prefix=prefix or None
        )
        return self._page(rows, limit)

    @staticmethod
    def _page(rows: list[ThreadSummary], limit: int) -> tuple[list[ThreadSummary], bool]:
        return rows[:limit], len(rows) > limit

    async def thread_page(
        self, thread_id: str, offset: int = 0, limit: int = CHECKPOINT_PAGE
    ) -> tuple[list[CheckpointMetadata], int]:
        """A page counted from the head (offset 0 = the newest), oldest first, and the
        thread's size."""
        db = await self.ready()
        metas = await db.describe(
            await db.read_thread(thread_id, limit=limit, offset=offset, descending=True)
        )
        total = await db.count(thread_id)
        metas.reverse()
        return metas, total

    async def origin(self, thread_id: str) -> CheckpointMetadata | None:
        """Where a thread was forked from: the parent of its first row, when that
        parent lives in another thread."""
        db = await self.ready()
        first = await db.read_thread(thread_id, limit=1)
        if not first or not first[0].parent_checkpoint_id:
            return None
        parent = await db.get_metadata(first[0].parent_checkpoint_id)
        if parent is None or parent.thread_id == thread_id:
            return None
        return parent

    async def branches(self, thread_id: str) -> dict[str, list[CheckpointMetadata]]:
        out: dict[str, list[CheckpointMetadata]] = {}
        for first in await (await self.ready()).branches_of([thread_id]):
            if first.parent_checkpoint_id:
                out.setdefault(first.parent_checkpoint_id, []).append(first)
        return out

    async def detail(self, checkpoint_id: str, mark: str | None = None) -> Detail:
        """A checkpoint, and what its Diff tab compares it with: the marked checkpoint
        (any thread) or else its parent."""
        db = await self.ready()
        try:
            cp = await db.get(checkpoint_id)
        except CorruptRowError as exc:
            return Detail(None, None, "", [], error=str(exc))
        if cp is None:
            return Detail(None, None, "", [], error=f"checkpoint {checkpoint_id} no longer exists")
        base_id, kind = (
            (mark, "mark") if mark and mark != checkpoint_id else (cp.metadata.parent_checkpoint_id, "parent")
        )
        base: Checkpoint | None = None
        error = ""
        if base_id:
            try:
                base = await db.get(base_id)
            except CorruptRowError as exc:
                error = f"cannot compare: {exc}"
            if base is None and not error:
                error = f"the {kind} {base_id} no longer exists"
        changes = (await asyncio.to_thread(changes_between, base, cp)) if base is not None else []
        return Detail(cp, base, kind if base is not None else "", changes, error)

    async def change_token(self, thread_id: str | None) -> tuple[Any, Any]:
        """Something that changes when another writer adds rows anywhere (the highest row
        id) or changes the shown thread (its size and highest row id). Index lookups
        only, in one round trip."""
        return await self.db.change_token(thread_id)


# The Diff tab lists what the agent changed first; metadata (ids, step, time, which
# always differ from a parent) last.
SECTION_ORDER = {"messages": 0, "state": 1, "tools_result": 2, "metadata": 3}


def changes_between(base: Checkpoint, cp: Checkpoint) -> list[Any]:
    from agentctl.diff import diff_checkpoints

    changes = diff_checkpoints(base, cp, format_keys=False)
    return sorted(changes, key=lambda c: SECTION_ORDER.get(c.section, 2))
