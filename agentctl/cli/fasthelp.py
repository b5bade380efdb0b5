"""The root help (`agentctl`, `agentctl --help`, `agentctl -h`) without importing Typer.

The bytes Typer writes for these three command lines, and their exit codes, are stored
in agentctl/cli/helptext.py (regenerate: `python -m agentctl.cli.genhelp`;
tests/test_cli_startup.py fails when it differs from what Typer renders). They are
served only when Typer would write the very same: the program name is `agentctl`, no
shell completion is asked for, and click wraps at 78 columns, which it does when
`shutil.get_terminal_size()` reports 80 columns or more (not a terminal: 80, or
$COLUMNS). Anything else returns None and Typer renders the help itself.
"""

import os
import sys

ROOT_HELP_ARGS = ((), ("--help",), ("-h",))


def serve(argv: list[str]) -> int | None:
    """Write the stored root help for `argv` and return the exit code, or return None
    (nothing written) when Typer must handle the command line."""
    args = tuple(argv[1:])
    if args not in ROOT_HELP_ARGS or not argv or os.name != "posix":
        return None
    # click's _detect_program_name: a script (not `python -m`), named agentctl
    if getattr(sys.modules.get("__main__"), "__package__", None) not in (None, ""):
        return None
    if os.path.basename(argv[0]) != "agentctl" or "_AGENTCTL_COMPLETE" in os.environ:
        return None
    import shutil

    if shutil.get_terminal_size().columns < 80:
        return None
    from agentctl.cli import helptext

    code, out, err = helptext.ROOT[" ".join(args)]
    stream = sys.stdout if out else sys.stderr
    text = out or err
    if stream is None or not text.isascii():
        return None
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:  # as Typer does: quietly, exit code 1
        if stream is sys.stdout:
            from agentctl.cli import _silence_stdout

            _silence_stdout()
            return 1
        raise
    return code
