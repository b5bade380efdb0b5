"""What the children of `agentctl run` share (standalone: the standard library only).

A child script (`langgraph_child.py`, `openai_child.py`) runs as `PYTHON SCRIPT EVENTS_FD`
in the user's interpreter, which may not have agentctl installed: Python puts the
script's directory first on sys.path, so the child imports this file as a sibling
module (`childlib`), never the agentctl package.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import signal
import sys
import traceback
from typing import Any

__all__ = [
    "SetupError",
    "emit",
    "package_module",
    "load",
    "user_frames",
    "on_sigint",
    "STOPPED",
    "start",
    "serve",
    "serve_async",
    "instance",
    "ended",
    "frozen",
]


class SetupError(Exception):
    pass


def emit(out: Any, event: dict[str, Any]) -> None:
    out.write(json.dumps(event, default=repr) + "\n")
    out.flush()


def package_module(path: str) -> tuple[str, str] | None:
    """(the directory to import from, the dotted module name) of a file inside a package
    (its directory has an `__init__.py`; the package's root found by walking up them),
    else None: a file on its own."""
    folder, base = os.path.split(os.path.abspath(path))
    parts = [os.path.splitext(base)[0]]
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        folder, name = os.path.split(folder)
        if not name.isidentifier():
            return None
        parts.insert(0, name)
    return (folder, ".".join(parts)) if len(parts) > 1 else None


def load(agent: dict[str, Any]) -> Any:
    """The object `agent` names: {"file": PATH, "var": NAME} or {"module": M, "var": NAME}.
    A file inside a package is imported as its package's module (`pkg.sub.graph`, its
    package's root's parent first on sys.path), so that it can import its own package,
    relatively or not, as `langgraph dev` and `adk run` import it."""
    var = agent["var"]
    if "file" in agent:
        path = agent["file"]
        where = path
        inside = package_module(path)
        if inside is not None:
            if inside[0] not in sys.path:
                sys.path.insert(0, inside[0])
            try:
                module = importlib.import_module(inside[1])
            except Exception as exc:
                raise SetupError(
                    f"importing {path} (as {inside[1]}) raised {type(exc).__name__}: {exc}"
                ) from exc
        else:
            name = "agentctl_user_code_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise SetupError(f"cannot load {path}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except Exception as exc:
                raise SetupError(f"loading {path} raised {type(exc).__name__}: {exc}") from exc
    else:
        try:
            module = importlib.import_module(agent["module"])
        except Exception as exc:
            raise SetupError(f"importing {agent['module']} raised {type(exc).__name__}: {exc}") from exc
        where = agent["module"]
    if not hasattr(module, var):
        names = sorted(n for n in vars(module) if not n.startswith("_"))[:12]
        raise SetupError(f"{where} has no {var!r} (it has: {', '.join(names)})")
    return getattr(module, var)


def user_frames(exc: BaseException) -> list[dict[str, Any]]:
    """The traceback's frames in the user's own files: not the framework's, not a library's,
    not the standard library's, not the child's."""
    import sysconfig

    skip = {
        os.path.realpath(p)
        for p in {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
        if p
    }
    here = os.path.dirname(os.path.realpath(__file__))
    out = []
    for fs in traceback.extract_tb(exc.__traceback__):
        path = os.path.realpath(fs.filename)
        if (
            os.path.dirname(path) == here
            or any(path.startswith(s + os.sep) for s in skip)
            or "site-packages" in path
            or fs.filename.startswith("<")
        ):
            continue
        out.append({"file": fs.filename, "line": fs.lineno, "name": fs.name, "code": fs.line or ""})
    return out


#: not empty once Ctrl-C came (a framework that catches the KeyboardInterrupt, as Agno
#: does, ends its run quietly: the child tells it so)
STOPPED: list[bool] = []


def on_sigint(signum: int, frame: Any) -> None:
    """The first Ctrl-C stops the run; later ones are ignored while it winds down (the
    framework's clean-up must not be cut short by a second KeyboardInterrupt)."""
    STOPPED.append(True)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def start() -> tuple[Any, dict[str, Any]]:
    """The child's start: Ctrl-C handled, (the events pipe, the request on stdin), the
    request's paths first on sys.path."""
    signal.signal(signal.SIGINT, on_sigint)
    out = os.fdopen(int(sys.argv[1]), "w", buffering=1)
    req = json.loads(sys.stdin.readline())
    for p in reversed(req.get("paths") or []):
        sys.path.insert(0, p)
    return out, req


def serve(framework: str, module: str, prepare: Any, run: Any, before: Any = None) -> None:
    """A child's whole life: the request, `before(req)` (what must come before the
    framework's import), `module` imported (else a setup error naming `framework`),
    `prepare(req)` -> args (SetupError: exit 2), then `run(out, req, *args)`'s exit
    status (Ctrl-C: "interrupted", 130)."""

    def main() -> int:
        out, req = start()
        try:
            if before is not None:
                before(req)
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise SetupError(
                    f"{sys.executable} cannot import {framework} ({exc}); name the interpreter of "
                    "your agent's environment with --python"
                ) from exc
            args = prepare(req)
        except SetupError as exc:
            emit(out, {"event": "setup", "message": str(exc)})
            return 2
        try:
            return int(run(out, req, *args))
        except KeyboardInterrupt:
            emit(out, {"event": "interrupted"})
            return 130

    try:
        sys.exit(frozen(main()))
    except KeyboardInterrupt:  # outside the run's own handler
        sys.exit(130)


def frozen(code: int) -> int:
    """`code`, once the heap the run leaves is out of the collector's reach (gc.freeze):
    the child exits next, and Python's last collections would walk every object the
    framework made (~0.3 s of CPU after a LangGraph run) to free memory the exit frees
    anyway. The exit is otherwise the same: threads joined, atexit handlers run, the
    modules cleared, each object released as its last reference goes (what only a
    reference cycle holds is left to the exit, whose finalizers Python does not promise
    to run for objects alive then)."""
    import gc

    gc.freeze()
    return code


def serve_async(framework: str, module: str, prepare: Any, run: Any) -> None:
    """`serve` of an asyncio child: `run` is a coroutine function, run by asyncio.run."""
    import asyncio

    serve(framework, module, prepare, lambda out, req, *args: asyncio.run(run(out, req, *args)))


def instance(obj: Any, cls: type | tuple[type, ...], what: str) -> Any:
    """`obj` if it is a `cls`, else what the factory `obj` returns (a factory may return
    a factory, a few times); SetupError naming `what` otherwise."""
    for _ in range(3):
        if isinstance(obj, cls):
            return obj
        if callable(obj) and not isinstance(obj, type):
            obj = obj()
            continue
        break
    raise SetupError(f"the agent is a {type(obj).__name__}, not {what} (or a function returning one)")


def ended(out: Any, failure: BaseException | None, agent: Any, output: Any) -> int:
    """A run's last event and exit status: the user's error, with their own frames (1), or
    "done" with its output (a scalar as it is, else its repr; 0)."""
    if failure is not None:
        emit(
            out,
            {
                "event": "error",
                "type": type(failure).__name__,
                "message": str(failure),
                "agent": agent,
                "frames": user_frames(failure),
            },
        )
        return 1
    emit(
        out,
        {
            "event": "done",
            "output": output if isinstance(output, (str, int, float, bool, type(None))) else repr(output),
        },
    )
    return 0
