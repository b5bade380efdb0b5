"""The `agentctl` command line (Typer).

Errors are handled in one place (`AgentctlGroup.invoke`, and `main` as a backstop): an
AgentctlError prints one line on stderr, `agentctl: <message>`, and exits with its code;
a traceback only with AGENTCTL_DEBUG=1.

This module imports no Typer: `main` serves the root help (`agentctl`, `--help`, `-h`)
from agentctl/cli/fasthelp.py when the output is the same as Typer's, and otherwise runs
the app of agentctl/cli/root.py (`agentctl.cli.app`, loaded on first use), whose commands
are imported when they are looked up.
"""

import os
import sys
from typing import Any, NoReturn

_LAZY = ("app", "AgentctlGroup", "EXIT_CODES_HELP")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from agentctl.cli import root

        return getattr(root, name)
    raise AttributeError(f"module 'agentctl.cli' has no attribute {name!r}")


def report(exc: BaseException) -> None:
    from agentctl.errors import redact_dsn
    from agentctl.text import inert

    sys.stderr.write("agentctl: " + inert(redact_dsn(str(exc)), one_line=True) + "\n")


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test's buffer)
        pass


_START_UP_GC_PAUSED = False


def end_start_up() -> None:
    """Called once the command's module is imported: the objects of the start-up
    (modules, functions, the app) go to the collector's permanent generation, so that
    it does not walk them again, and collection resumes if `main` paused it."""
    global _START_UP_GC_PAUSED
    if _START_UP_GC_PAUSED:
        import gc

        _START_UP_GC_PAUSED = False
        gc.freeze()
        gc.enable()


def main() -> None:
    import gc

    global _START_UP_GC_PAUSED
    if gc.isenabled():  # imports make no cyclic garbage; the collector would walk them
        gc.disable()    # again and again (about a tenth of the start-up)
        _START_UP_GC_PAUSED = True
    from agentctl.cli import fasthelp

    code = fasthelp.serve(sys.argv)
    if code is not None:
        _exit(code)

    from agentctl.cli.root import app
    from agentctl.errors import AgentctlError

    try:
        app()
    except AgentctlError as exc:  # raised outside a command (e.g. during completion)
        if os.environ.get("AGENTCTL_DEBUG") == "1":
            raise
        report(exc)
        _exit(int(exc.exit_code))
    except SystemExit as exc:  # how Typer ends every run
        _exit(exc.code)
    _exit(0)


def _exit(code: Any) -> NoReturn:
    """sys.exit(code), skipping the interpreter's teardown when agentctl owns the whole
    process (the console script or `python -m agentctl`, not an interactive session) and
    nothing is left to do: freeing every module and object took 30-60 ms of a 0.25 s
    `show` or `log` (2-5 ms with os._exit). stdout and stderr are flushed and the atexit handlers run
    first; when a flush fails, or a thread other than a daemon is still running, Python
    exits as usual (and reports as it always did)."""
    if _owns_process() and (code is None or type(code) is int) and 0 <= (code or 0) <= 255:
        threading = sys.modules.get("threading")
        if threading is None or not any(t.is_alive() and not t.daemon for t in threading.enumerate()
                                         if t is not threading.main_thread()):
            import atexit

            run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)  # CPython's
            if run_exitfuncs is not None and _flushed():
                run_exitfuncs()
                if _flushed():
                    os._exit(code or 0)
    sys.exit(code)


def _owns_process() -> bool:
    if sys.flags.interactive or hasattr(sys, "ps1"):
        return False
    entry = sys.modules.get("__main__")
    spec = getattr(entry, "__spec__", None)
    if spec is not None:  # python -m agentctl
        return spec.name == "agentctl.__main__"
    return os.path.basename(getattr(entry, "__file__", None) or "") == "agentctl"  # the console script


def _flushed() -> bool:
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except Exception:  # noqa: BLE001 - Python's own exit reports it, as before
        return False
    return True
