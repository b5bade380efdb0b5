"""The commands of agentctl: which module of agentctl/cli/commands/ holds each, and its
summary, for the lazy root group (agentctl/cli/root.py).

A hand-kept table, like git's command list: `agentctl --help` lists the commands from
it and `agentctl show` imports only the module that holds `show`, so neither imports
every command module. A command's summary is its help up to the end of the first
sentence of its first paragraph (whitespace collapsed): the root help shortens that
exactly as it would the whole help (click's make_default_short_help reads no further).

After adding, renaming or moving a command, or changing the first sentence of its help,
edit the table; tests/cli/test_cli_registry.py compares it with the commands themselves
(names, order, modules, summaries) and says what differs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer

PACKAGE = "agentctl.cli.commands"

# name: (module in agentctl/cli/commands/, summary), in the order the root help lists
# them: Typer lists the commands before the groups.
COMMANDS: dict[str, tuple[str, str]] = {
    "log": ("inspect", "The checkpoints of a thread, newest first, one per line (like git log --oneline)."),
    "show": (
        "inspect",
        "One checkpoint: metadata, the messages as a chat transcript (the last 50 unless "
        "--messages), the state and tool results as JSON.",
    ),
    "diff": (
        "inspect",
        "Structural diff of two checkpoints: metadata, messages, state and tool results by "
        "JSON path (added / removed / changed, with old and new values).",
    ),
    "tree": (
        "inspect",
        "The checkpoint DAG of a thread and its branches: heads, branch points, merges and "
        "abandoned tips (what a rewind set aside) are labelled.",
    ),
    "compare": (
        "compare",
        "Where two runs parted: the first step at which their states differ, and the diff there.",
    ),
    "search": (
        "search",
        "Find text in messages, tool results and state; newest first, one hit per checkpoint "
        "and place, with the thread, step, where (the JSON path) and a snippet.",
    ),
    "rewind": ("history", "Make a checkpoint the head of its thread again."),
    "branch": (
        "history",
        "Start a new thread from a checkpoint (the writer's naming: THREAD-branch-NAME-XXXX).",
    ),
    "merge": (
        "history",
        "Merge a branch's head into a thread: a three-way merge of state and tool results "
        "from their common ancestor, the branch's new messages appended.",
    ),
    "prune": (
        "history",
        "Delete old checkpoints by a policy; a thread's head and its fork points (the parent of "
        "a branch, or of several checkpoints) are always kept, and a kept checkpoint whose parent "
        "goes gets its nearest kept ancestor as parent, or none (as the plan says).",
    ),
    "edit": (
        "edit",
        "Change the state at a checkpoint: a new checkpoint after REF that holds exactly the values given.",
    ),
    "run": ("run", "Run your own agent from a checkpoint, through its framework, on this database."),
    "oplog": (
        "ops",
        "The operations agentctl wrote (rewind, branch, merge, prune, delete, import, undo), "
        "newest first, and whether they were undone.",
    ),
    "undo": (
        "ops",
        "Undo an operation (default: the latest not yet undone): a rewind, branch, merge, prune, "
        "thread delete or import.",
    ),
    "redo": (
        "ops",
        "Re-apply an undone operation (default: the newest undone one), when nothing it touched "
        "changed since its undo.",
    ),
    "purge": (
        "ops",
        "Free for good what undo could still bring back (rows set aside by rewind --hard, "
        "prune, delete); then VACUUM on SQLite.",
    ),
    "stats": ("health", "Usage statistics."),
    "doctor": (
        "health",
        "Check the database: schema, duplicate steps in a thread, parents that do not exist, "
        "JSON that does not parse, parent cycles.",
    ),
    "export": (
        "transfer",
        "Write checkpoints as JSON Lines, one checkpoint's to_dict() per line, in thread and step order.",
    ),
    "import": ("transfer", "Import checkpoints from JSON Lines in one transaction (undoable)."),
    "backup": (
        "transfer",
        "Copy a SQLite database with SQLite's online backup API: a consistent copy even "
        "while agents write to it.",
    ),
    "tui": ("tui", "Open the terminal UI on the database."),
    "demo": (
        "tui",
        "Open the terminal UI on a temporary copy of the bundled sample database; your own "
        "databases are not touched.",
    ),
    "serve": (
        "tui",
        "Serve the terminal UI to a web browser (textual-serve: pip install 'agentctl[web]'), "
        "read-only unless --allow-writes, on localhost unless --host says otherwise.",
    ),
    "formats": (
        "formats",
        "The formats agentctl reads and writes, and what each can do; with --db, which "
        "format that database is (detected from its schema, or as --format forces it).",
    ),
    "help": (
        "helpcmd",
        "Show the help of agentctl, or of a command: `agentctl help threads delete` is "
        "`agentctl threads delete --help`.",
    ),
    "threads": ("threads", "List, inspect and delete threads."),
    "index": (
        "index",
        "The search index `search` uses when present: a side file next to a SQLite "
        "database, pg_trgm indexes on Postgres (build, status, drop).",
    ),
}

# The commands that are groups: their module's `app` (a typer.Typer). Every other
# module has `register(app)`, which adds its commands.
GROUPS = ("threads", "index")


def module_of(command: str) -> str:
    """The full name of the module that holds `command` (one of COMMANDS)."""
    return f"{PACKAGE}.{COMMANDS[command][0]}"


def modules() -> list[str]:
    """Every command module, once, in the order of the table."""
    return list(dict.fromkeys(module_of(name) for name in COMMANDS))


def register_module(app: typer.Typer, module_name: str) -> None:
    """Register the commands of one module (or the group it holds) on `app`."""
    module = importlib.import_module(module_name)
    for name in GROUPS:
        if module_of(name) == module_name:
            _keep_examples_in(module.app)
            app.add_typer(module.app, name=name)
            return
    module.register(app)
    _keep_examples_in(app)


def keep_examples(text: str | None) -> str | None:
    """Help text whose "Example:" paragraphs click prints as written (after its \\b
    marker), not re-wrapped: an example copied from a narrow terminal is still whole."""
    if not text:
        return text
    return "\n\n".join("\b\n" + p if p.lstrip().startswith("Example:") else p for p in text.split("\n\n"))


def _keep_examples_in(app: typer.Typer) -> None:
    """keep_examples on the help of `app`'s commands (and of a group's own), once."""
    import inspect

    if not getattr(app, "_examples_kept", False):
        app.info.help = (
            keep_examples(app.info.help if isinstance(app.info.help, str) else None) or app.info.help
        )
        app._examples_kept = True  # type: ignore[attr-defined]
    for info in app.registered_commands:
        if info.callback is not None and not getattr(info, "_examples_kept", False):
            info.help = keep_examples(
                info.help if isinstance(info.help, str) else inspect.getdoc(info.callback)
            )
            info._examples_kept = True  # type: ignore[attr-defined]


def summary(help_text: str | None) -> str:
    """A help text up to the end of the first sentence of its first paragraph,
    whitespace collapsed: what COMMANDS holds for a command with that help."""
    words: list[str] = []
    for word in (help_text or "").split("\n\n", 1)[0].split():
        words.append(word)
        if word.endswith("."):
            break
    return " ".join(words)
