"""Naming checkpoints and threads on the command line (headless: no rich, no textual).

A checkpoint reference is, in the order tried:

1. a full checkpoint id;
2. a thread id: the thread's head;
3. `THREAD~N`: the head's N-th ancestor, following the head's own line of parents
   inside the thread (`THREAD~` is `THREAD~1`); a fork replayed inside the thread is not
   on the head's line, so `~N` never lands on an abandoned checkpoint (a row that records
   no parent is followed by the row before it in thread order);
4. `THREAD@STEP`: the checkpoint of the thread at that step. When forks inside the thread
   share the step, the one on the head's line of parents (the head itself included); when
   none or several are, the reference is ambiguous (AmbiguousReference listing each
   candidate's id, step, source and parent: exit 2);
5. a unique prefix of a checkpoint id (an ambiguous prefix lists the candidates).

Nothing matching raises CheckpointNotFound / ThreadNotFound naming the closest ids.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, Any

from agentctl.errors import (
    AmbiguousReference,
    CheckpointNotFound,
    ThreadNotFound,
    UsageError,
)
from agentctl.model import CheckpointMetadata

if TYPE_CHECKING:
    from agentctl.storage.contract import Store

__all__ = ["resolve", "resolve_thread", "closest_checkpoints", "closest_threads", "check_branch_name"]

_TILDE = re.compile(r"^(?P<thread>.+)~(?P<n>\d*)$")
_AT = re.compile(r"^(?P<thread>.+)@(?P<step>-?\d+)$")
MAX_CANDIDATES = 10

# A branch name becomes part of a thread id (THREAD-branch-NAME-XXXX), which is typed on
# command lines and may end up in a file name: no spaces or control characters, not the
# reference syntax's @ and ~, no path separators and no "..".
BRANCH_NAME_MAX = 64
_BRANCH_BAD = re.compile(r"[\s@~/\\\x00-\x1f\x7f-\x9f]")


def check_branch_name(name: Any) -> str:
    """`name` if it is a valid branch name, else UsageError saying why. The one rule
    of the CLI's `branch`, the TUI's branch dialog and `CheckpointEngine.branch`."""
    text = name if isinstance(name, str) else str(name)
    why = None
    if not text:
        why = "it is empty"
    elif len(text) > BRANCH_NAME_MAX:
        why = f"it is longer than {BRANCH_NAME_MAX} characters"
    elif (bad := _BRANCH_BAD.search(text)) is not None:
        ch = bad.group()
        why = "it contains a space" if ch == " " else f"it contains {ch!r}"
    elif ".." in text:
        why = "it contains '..'"
    if why is not None:
        raise UsageError(
            f"bad branch name {text!r}: {why} (no spaces, control characters, "
            f"'@', '~', '/', '\\' or '..'; at most {BRANCH_NAME_MAX} characters)"
        )
    return text


def _checked(store: Store, ref: str, not_found: Any) -> str:
    """`ref` stripped, or an AgentctlError for text no database can hold: lone
    surrogates (undecodable bytes in argv) and, on Postgres, NUL characters."""
    ref = (ref or "").strip()
    try:
        ref.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"reference {ref!r} is not valid UTF-8 text") from None
    if "\x00" in ref and not store.stores_nul:
        raise not_found(ref)
    return ref


def _storable_step(store: Store, n: int) -> bool:
    """Whether a step number fits the step column (INTEGER: 32 bits on Postgres, 64 on
    SQLite); a larger one names nothing, and the drivers reject it as a parameter."""
    bits = store.step_bits
    return -(2**bits) <= n < 2**bits


async def _thread_exists(store: Store, thread: str) -> bool:
    found = await store.find_thread_ids(thread, limit=1)
    return bool(found) and found[0] == thread


async def _head(store: Store, thread: str) -> CheckpointMetadata | None:
    page = await store.read_thread(thread, limit=1, offset=0, descending=True)
    return page[0] if page else None


async def _near_ids(finder: Any, ref: str, want: int = 40) -> list[str]:
    """Ids sharing ever shorter prefixes with `ref` (indexed prefix scans, no full read)."""
    seen: dict[str, None] = {}
    lengths = sorted({len(ref), len(ref) * 3 // 4, len(ref) // 2, len(ref) // 4, 0}, reverse=True)
    for n in lengths:
        for cid in await finder(ref[:n], limit=want):
            seen.setdefault(cid, None)
        if len(seen) >= want:
            break
    return list(seen)


def _closest(ref: str, candidates: list[str], n: int = 3) -> list[str]:
    return difflib.get_close_matches(ref, candidates, n=n, cutoff=0.4)


async def closest_checkpoints(store: Store, ref: str, n: int = 3) -> list[str]:
    return _closest(ref, await _near_ids(store.find_checkpoint_ids, ref), n)


async def closest_threads(store: Store, ref: str, n: int = 3) -> list[str]:
    return _closest(ref, await _near_ids(store.find_thread_ids, ref), n)


async def resolve(store: Store, ref: str) -> CheckpointMetadata:
    """The checkpoint a reference names (see the module docstring)."""
    ref = _checked(store, ref, CheckpointNotFound)
    if not ref:
        raise UsageError("empty checkpoint reference")
    meta = await store.get_metadata(ref)
    if meta is not None:
        return meta
    if await _thread_exists(store, ref):
        head = await _head(store, ref)
        if head is not None:
            return head

    m = _TILDE.match(ref)
    if m and await _thread_exists(store, m["thread"]):
        thread, back = m["thread"], int(m["n"] or 1)
        line = await _head_line(store, thread, back)
        if len(line) > back:
            return line[back]
        raise CheckpointNotFound(
            ref, [f"{thread}~{len(line) - 1} (the oldest of the head's line of {len(line)})"] if line else []
        )

    m = _AT.match(ref)
    if m:
        thread, step = m["thread"], int(m["step"])
        if not await _thread_exists(store, thread):
            raise ThreadNotFound(thread, await closest_threads(store, thread))
        if _storable_step(store, step):
            found = await _at_step(store, ref, thread, step)
            if found is not None:
                return found
        raise CheckpointNotFound(ref, await _nearest_steps(store, thread, step))

    candidates = await store.find_checkpoint_ids(ref, limit=MAX_CANDIDATES + 1)
    if len(candidates) == 1:
        meta = await store.get_metadata(candidates[0])
        if meta is not None:
            return meta
    if len(candidates) > 1:
        shown = candidates[:MAX_CANDIDATES]
        if len(candidates) > MAX_CANDIDATES:
            shown = shown + ["…"]
        raise AmbiguousReference(ref, shown)
    near = await _near_ids(store.find_checkpoint_ids, ref)
    near += [t for t in await _near_ids(store.find_thread_ids, ref) if t not in near]
    raise CheckpointNotFound(ref, _closest(ref, near, n=4))


async def _head_line(store: Store, thread: str, back: int | None = None) -> list[CheckpointMetadata]:
    """The thread's head and its ancestors inside the thread, newest first: the first
    `back` + 1 of them (None: all). A row that records no parent (a writer that keeps
    none) is followed by the row before it in thread order. The newest rows of a thread
    without forks are that line, so one page of `back` + 1 rows answers; a line that
    leaves the page (a fork inside the thread) reads the whole thread once."""
    if back is not None and back >= 2**62:
        back = None
    want = None if back is None else back + 1
    rows = await store.read_thread(thread, limit=want or 2**62, offset=0, descending=True)
    whole = want is None or len(rows) < want
    while True:
        at = {r.checkpoint_id: i for i, r in enumerate(rows)}
        line = rows[:1]
        seen = {r.checkpoint_id for r in line}
        left_page = False
        while line and (want is None or len(line) < want):
            parent = line[-1].parent_checkpoint_id
            i = at[line[-1].checkpoint_id] + 1 if not parent else at.get(parent)
            if i is None or i >= len(rows):
                left_page = not whole
                break
            nxt = rows[i]
            if nxt.checkpoint_id in seen:
                break
            line.append(nxt)
            seen.add(nxt.checkpoint_id)
        if not left_page:
            return line
        rows = await store.read_thread(thread, limit=2**62, offset=0, descending=True)
        whole = True


def _describe(meta: CheckpointMetadata) -> str:
    source = ",".join(meta.tags) or "-"
    return (
        f"{meta.checkpoint_id} (step {meta.step}, source {source}, parent {meta.parent_checkpoint_id or '-'})"
    )


async def _at_step(store: Store, ref: str, thread: str, step: int) -> CheckpointMetadata | None:
    """The checkpoint `THREAD@STEP` names: the thread's only one at the step, else the
    one on the head's line of parents; AmbiguousReference when that does not decide."""
    found = await store.all_at_step(thread, step, MAX_CANDIDATES + 1)
    if len(found) <= 1:
        return found[0] if found else None
    head = await _head(store, thread)
    if head is not None and head.step == step and head.checkpoint_id in {m.checkpoint_id for m in found}:
        return head
    on_line = [m for m in await _head_line(store, thread) if m.step == step]
    if len(on_line) == 1:
        return on_line[0]
    shown = [_describe(m) for m in found[:MAX_CANDIDATES]]
    if len(found) > MAX_CANDIDATES:
        shown.append("…")
    raise AmbiguousReference(ref, shown)


async def _nearest_steps(store: Store, thread: str, step: int) -> list[str]:
    """The thread's first and last steps, as references."""
    first = await store.read_thread(thread, limit=1, offset=0)
    last = await _head(store, thread)
    return list(dict.fromkeys(f"{thread}@{m.step}" for m in first + ([last] if last else [])))


async def resolve_thread(store: Store, ref: str) -> str:
    """The thread a reference names: a thread id, a unique thread-id prefix, or any
    checkpoint reference (its thread)."""
    ref = _checked(store, ref, ThreadNotFound)
    if not ref:
        raise UsageError("empty thread name")
    found = await store.find_thread_ids(ref, limit=MAX_CANDIDATES + 1)
    if found and found[0] == ref:
        return ref
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        shown = found[:MAX_CANDIDATES] + (["…"] if len(found) > MAX_CANDIDATES else [])
        raise AmbiguousReference(ref, shown)
    meta = await store.get_metadata(ref)
    if meta is not None:
        return meta.thread_id
    if _TILDE.match(ref) or _AT.match(ref):
        try:
            return (await resolve(store, ref)).thread_id
        except (CheckpointNotFound, ThreadNotFound):
            pass
    raise ThreadNotFound(ref, await closest_threads(store, ref))
