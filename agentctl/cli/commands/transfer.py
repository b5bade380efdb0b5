"""Moving data in and out: `export`, `import`, `backup`; and the safety copy taken
before destructive writes on SQLite."""

import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated, Any

import typer

from agentctl import deep
from agentctl.cli.complete import complete_thread
from agentctl.cli.context import CliState, run, state
from agentctl.cli.options import AcceptYesOpt, JsonOpt
from agentctl.cli.output import info, progress, say
from agentctl.cli.writes import finish, sqlite_backup
from agentctl.text import json_text, json_type_name


def register(app: typer.Typer) -> None:
    app.command("export")(export)
    app.command("import")(import_)
    app.command("backup")(backup)


# ---- files --------------------------------------------------------------------------


def new_file_mode() -> int:
    """The permission bits of a new file as open() would create it: 0666 less the umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def backup(
    ctx: typer.Context,
    dest: Annotated[str, typer.Argument(metavar="DEST", help="File (or directory) to write the copy to.")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite DEST if it exists.")] = False,
) -> None:
    """Copy a SQLite database with SQLite's online backup API: a consistent copy even
    while agents write to it. Refuses to overwrite DEST unless --force.

    Example: agentctl --db sample_db/checkpoints.db backup checkpoints-copy.db
    """
    from agentctl.errors import UsageError

    st = state(ctx)
    path = st.sqlite_path()
    if path is None:
        raise UsageError("backup works on SQLite files; for Postgres use pg_dump or `agentctl export`")

    async def check() -> Any:  # the source must be a checkpoint database
        async with st.open():
            return None

    run(check())
    written, n = sqlite_backup(path, dest, force=force)
    say(f"backed up {path} to {written} ({n} bytes)")


def check_output_path(output: str, *, force: bool) -> None:
    """Refuse, before anything is read or written, a file `-o` cannot be: a directory,
    one in a folder that does not exist, an existing file without --force."""
    from agentctl.errors import NotFoundError, UsageError

    if os.path.isdir(output):
        raise UsageError(
            f"{output} is a directory; name the file to write in it (-o {os.path.join(output, 'FILE')})"
        )
    parent = os.path.dirname(output) or "."
    if not os.path.isdir(parent):
        raise NotFoundError(f"cannot write {output}: no directory {parent}")
    if os.path.isfile(output) and not force:
        raise UsageError(f"{output} exists; use --force to overwrite it")


# ---- export -----------------------------------------------------------------------------


def export(
    ctx: typer.Context,
    threads: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[THREAD]...", help="Threads to export (default: all).", autocompletion=complete_thread
        ),
    ] = None,
    output: Annotated[str, typer.Option("--output", "-o", help="JSONL file to write; - for stdout.")] = "-",
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file if it exists.")] = False,
) -> None:
    """Write checkpoints as JSON Lines, one checkpoint's to_dict() per line, in thread
    and step order. `agentctl import` reads it back (also into the other backend).

    Example: agentctl --db sample_db/checkpoints.db export support-1042 -o support.jsonl
    """
    from agentctl.errors import AgentctlError, CorruptRowError
    from agentctl.refs import resolve_thread

    st = state(ctx)
    to_stdout = output == "-"
    # a device or a pipe (-o /dev/null, -o >(gzip > x.gz)) is written to as a shell's
    # redirection would, no --force needed; a regular file through a temporary file
    to_stream = not to_stdout and os.path.exists(output) and not os.path.isfile(output)
    if not to_stdout:
        check_output_path(output, force=force)

    def write_all(out: IO[str]) -> tuple[int, list[str]]:
        async def go() -> Any:
            written, bad = 0, []
            async with st.open() as store:
                tids = [await resolve_thread(store, t) for t in threads] if threads else None
                total = sum([await store.count(t) for t in tids]) if tids else await store.count()
                with progress("export", total, enabled=total >= 10_000) as advance:
                    async for item in store.iter_checkpoints(tids):
                        if isinstance(item, CorruptRowError):
                            bad.append(str(item))
                        else:
                            out.write(json_text(deep.dumps(item.to_dict(), ensure_ascii=False)) + "\n")
                            written += 1
                        advance(1)
            return written, bad

        return run(go())

    try:
        if to_stdout:
            written, bad = write_all(sys.stdout)
        elif to_stream:
            with open(output, "w", encoding="utf-8") as out:
                written, bad = write_all(out)
            info(f"exported {written} checkpoints to {output}")
        else:
            target = Path(output)
            try:
                fd, tmp = tempfile.mkstemp(prefix=".agentctl-export-", suffix=".jsonl", dir=target.parent)
            except OSError as exc:
                raise AgentctlError(f"cannot write {output}: {exc.strerror}") from None
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    written, bad = write_all(out)
                # mkstemp's file is 0600: the export gets what a new file gets (the umask),
                # or the mode of the file it replaces
                mode = stat.S_IMODE(os.stat(target).st_mode) if target.exists() else new_file_mode()
                os.chmod(tmp, mode)
                os.replace(tmp, target)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            info(f"exported {written} checkpoints to {output}")
    except BrokenPipeError:
        raise
    except OSError as exc:  # a full disk, a device that takes nothing (/dev/full)
        if to_stdout:
            raise  # the root says it: "cannot write the output"
        raise AgentctlError(f"cannot write {output}: {exc.strerror or exc}") from None
    if bad:
        for line in bad[:10]:
            info("agentctl: skipped " + line)
        raise AgentctlError(
            f"{len(bad)} row(s) could not be read and were not exported "
            "(see `agentctl doctor`); the rest were"
        )


# ---- import -----------------------------------------------------------------------------


def _read_jsonl(stream: IO[str], name: str, advance: Any) -> Iterator[Any]:
    from agentctl.errors import UsageError
    from agentctl.model import Checkpoint

    for lineno, line in enumerate(stream, 1):
        advance(len(line.encode("utf-8", "replace")))
        if not line.strip():
            continue
        try:
            d = deep.strict_loads(line)
            if not isinstance(d, dict):
                raise ValueError(f"a JSON {json_type_name(d)} where an object is expected")
            if not isinstance(d.get("metadata"), dict):
                raise ValueError(
                    f"metadata: a JSON {json_type_name(d.get('metadata'))} where an object is expected"
                )
            cp = Checkpoint.from_dict(d)
            if not isinstance(cp.metadata.step, int) or not cp.metadata.checkpoint_id:
                raise ValueError("step must be an integer and checkpoint_id non-empty")
            for field, value, kind in (
                ("messages", cp.messages, list),
                ("state", cp.state, dict),
                ("tools_result", cp.tools_result, dict),
            ):
                if not isinstance(value, kind):
                    expected = "an array" if kind is list else "an object"
                    raise ValueError(f"{field}: a JSON {json_type_name(value)} where {expected} is expected")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            detail = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise UsageError(f"{name}:{lineno}: not a checkpoint ({detail}); nothing was imported") from None
        yield cp


async def _would_create(st: CliState) -> bool:
    """Whether `--create` is about to make the database: a new SQLite file, or the
    table in a Postgres database that has none."""
    from agentctl.errors import SchemaError

    path = st.sqlite_path()
    if path is not None:
        return not os.path.lexists(path)
    try:
        async with st.open():
            return False
    except SchemaError as exc:
        return "no 'checkpoints' table" in str(exc)


async def _remove_created(st: CliState) -> None:
    """Undo what `--create` made (the new file; the table, if it is still empty)."""
    path = st.sqlite_path()
    if path is not None:
        for name in (path, path + "-wal", path + "-shm", path + "-journal"):
            if os.path.exists(name):
                os.remove(name)
        # no database, no op log to ask after Ctrl-C: nothing was changed, and that is
        # what the interrupted line says (not "see agentctl oplog", which cannot open it)
        st.writing = False
        return
    async with st.open(write=True) as store:
        await store.drop_if_empty()


def import_(
    ctx: typer.Context,
    file: Annotated[
        str, typer.Argument(metavar="FILE.jsonl", help="JSON Lines from `agentctl export`; - for stdin.")
    ],
    on_conflict: Annotated[
        str, typer.Option("--on-conflict", help="When a checkpoint id exists: skip | replace | error.")
    ] = "skip",
    create: Annotated[
        bool, typer.Option("--create", help="Create the database (file or table) if it does not exist.")
    ] = False,
    json_out: JsonOpt = False,
    yes: AcceptYesOpt = False,
) -> None:
    """Import checkpoints from JSON Lines in one transaction (undoable). With --create a
    new SQLite file or Postgres table is made, so a database can move between backends
    (e.g. --db postgresql://me@localhost/agents import --create support.jsonl).

    Example: agentctl --db sample_db/checkpoints.db export support-1042 -o support.jsonl && agentctl --db new.db import --create support.jsonl
    """
    from agentctl.errors import DatabaseNotFound, SchemaError, UsageError, not_a_file
    from agentctl.ops import Import

    if on_conflict not in ("skip", "replace", "error"):
        raise UsageError(f"unknown --on-conflict {on_conflict!r}; use skip, replace or error")
    st = state(ctx)
    problem = not_a_file(file) if file != "-" else None
    if problem == "does not exist":
        raise DatabaseNotFound(f"file not found: {file}")
    if problem:
        raise UsageError(f"{file} {problem}")
    size = os.path.getsize(file) if file != "-" else None

    async def go(stream: IO[str]) -> Any:
        made = create and await _would_create(st)
        try:
            return await load(stream)
        except BaseException:
            if made:  # a failed import leaves nothing behind, not even what --create made
                await _remove_created(st)
            raise

    async def load(stream: IO[str]) -> Any:
        try:
            async with st.history(create=create, need="import") as (store, history):
                with progress("import", size, enabled=(size or 0) >= 8 * 1024 * 1024) as advance:
                    return await Import(_read_jsonl(stream, file, advance), on_conflict).apply(store, history)
        except DatabaseNotFound as exc:
            raise DatabaseNotFound(f"{exc}; use --create to make a new database") from None
        except SchemaError as exc:
            if "no 'checkpoints' table" not in str(exc):
                raise
            raise SchemaError(f"{exc}; use --create to make the table") from None

    if file == "-":
        result = run(go(sys.stdin))
    else:
        with open(file, encoding="utf-8") as stream:
            result = run(go(stream))
    finish(result, json_out)
