"""What the write commands share: the safety copy of a SQLite file before a destructive
write, VACUUM after one, and the line said when Ctrl-C interrupts a command (checked
against the database: whether the write committed). Infrastructure beside the commands, so that no command module
imports another (tests/structure/test_layers.py)."""

import os
import stat
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agentctl.cli.context import CliState, run
from agentctl.cli.output import info, progress

LARGE_DB_BYTES = 32 * 1024 * 1024  # progress bars only for databases at least this big


def sqlite_backup(src: str, dest: str, *, force: bool = False) -> tuple[Path, int]:
    """agentctl.storage.backup.sqlite_backup, with a progress bar on a terminal for a
    large database: the file written and its size."""
    from agentctl.storage.backup import backup_target, sqlite_backup as backup

    size = os.path.getsize(src) if os.path.isfile(src) else 0
    written = backup_target(src, dest)
    with progress(f"backup {os.path.basename(src)}", None, enabled=size >= LARGE_DB_BYTES) as advance:
        n = backup(src, str(written), force=force, on_step=lambda: advance(0))
    # The copy is written through a private temporary file (0600): it gets the
    # database's own permission bits, so that who may read the database may read it.
    os.chmod(written, stat.S_IMODE(os.stat(src).st_mode))
    return written, n


def auto_backup(st: CliState, no_backup: bool) -> str | None:
    """Before a hard delete or purge on SQLite: copy the file aside (unless --no-backup)
    and say where on stderr."""
    path = st.sqlite_path()
    if no_backup or path is None:
        return None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    dest = f"{path}.{stamp}.bak"
    sqlite_backup(path, dest)
    info(f"agentctl: backup of {path} written to {dest} (skip with --no-backup)")
    return dest


def interrupted_line(st: CliState | None, what: str = "write") -> str:
    """What is true after Ctrl-C: nothing written before the write began; after it, what
    the op log says (the op that committed, or nothing). `what`: the command's name."""
    if st is None or not st.writing:
        return "interrupted; nothing was changed"
    before = st.op_before
    unknown = f"interrupted during the {what}; see `agentctl oplog` for whether it was committed"
    if before is None:
        return unknown

    async def newest():
        async with st.open() as store:
            return await store.history().oplog(1)

    try:
        ops = run(newest())
    except BaseException:  # noqa: BLE001 - a second Ctrl-C, or the database unusable now
        return unknown
    if not ops or ops[0].op_id <= before:
        return f"interrupted; the {what} was rolled back, nothing was changed"
    op = ops[0]
    if op.kind in ("undo", "purge"):
        return f"interrupted, but op {op.op_id} was written ({op.summary}); it was committed"
    return f"interrupted, but op {op.op_id} was written ({op.summary}); `agentctl undo {op.op_id}` reverts it"


def require_compact(store: Any) -> None:
    """Refuse --vacuum (exit 2, before anything is written) where the format has no VACUUM."""
    from agentctl.storage.contract import Store, Unsupported

    if type(store).compact is Store.compact:
        raise Unsupported(store.format.name, "--vacuum")


def run_vacuum(st: Any) -> dict[str, Any]:
    """The store's `compact` after a delete, its sizes said on stderr."""
    async def go():
        async with st.open(write=True) as store:
            return await store.compact()

    info("running VACUUM …")
    report = run(go())
    where = "file" if report.get("vacuumed") == "file" else "tables"
    info(f"vacuum: {where} size {_size(report['before'])} before, {_size(report['after'])} after")
    return report


def _size(n: Any) -> str:
    if n is None:
        return "unknown"
    n = int(n)
    value, unit = float(n), "B"
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            break
        value /= 1024
    return f"{n:,} B" if unit == "B" else f"{value:.1f} {unit} ({n:,} B)"
