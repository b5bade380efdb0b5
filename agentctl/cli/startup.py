"""The two start-up tricks of the command line, in one place (bench/README.md has the
figures behind them).

1. The cyclic garbage collector is paused while the CLI and the command's module are
   imported (`pause_gc`, from `agentctl.cli.main`): imports make no cyclic garbage, and
   the collector would walk the new objects again and again (about a tenth of the
   start-up). Once the command's module is imported (`end_start_up`, from the root
   callback), the start-up objects go to the collector's permanent generation
   (`gc.freeze`) and collection resumes, so a long command (the TUI) runs with it.

2. The fast exit (`leave`): when agentctl owns the whole process (the console script or
   `python -m agentctl`, not an interactive session), the process ends with `os._exit`
   after stdout and stderr are flushed and the atexit handlers have run. Freeing every
   module and object at interpreter shutdown took 30-60 ms of a 0.25 s `show` or `log`
   (2-5 ms with `os._exit`). When a flush fails, a thread other than a daemon is still
   running, or the exit code is not a number from 0 to 255, Python exits as usual.

   AGENTCTL_NO_FAST_EXIT=1 turns the fast exit off: the process then ends through the
   interpreter's normal shutdown (`sys.exit`), with the same output and exit code: for
   what needs the full teardown (object finalizers, leak checkers, coverage tools).
"""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

NO_FAST_EXIT_ENV = "AGENTCTL_NO_FAST_EXIT"

#: what main() needs to know when Ctrl-C escapes the app: whether a command began ("invoked")
STATE: dict[str, bool] = {}

_gc_paused = False


def pause_gc() -> None:
    """Pause the cyclic collector for the start-up (if it runs); `end_start_up` resumes it."""
    import gc

    global _gc_paused
    if gc.isenabled():
        gc.disable()
        _gc_paused = True


def end_start_up() -> None:
    """Called once the command's module is imported: the objects of the start-up
    (modules, functions, the app) go to the collector's permanent generation, so that
    it does not walk them again, and collection resumes if `pause_gc` paused it."""
    global _gc_paused
    if _gc_paused:
        import gc

        _gc_paused = False
        gc.freeze()
        gc.enable()


def fast_exit_enabled() -> bool:
    return os.environ.get(NO_FAST_EXIT_ENV, "") in ("", "0")


def leave(code: Any) -> NoReturn:
    """sys.exit(code), skipping the interpreter's teardown when that is safe (see the
    module's docstring)."""
    if (
        fast_exit_enabled()
        and _owns_process()
        and (code is None or type(code) is int)
        and 0 <= (code or 0) <= 255
    ):
        threading = sys.modules.get("threading")
        if threading is None or not any(
            t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()
        ):
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


def report(exc: BaseException) -> None:
    from agentctl.errors import redact_dsn
    from agentctl.text import inert

    sys.stderr.write("agentctl: " + inert(redact_dsn(str(exc)), one_line=True) + "\n")
