"""The child process of `agentctl run` for CrewAI: resumes the user's flow (or crew) from
a checkpoint through `Flow.from_checkpoint` / `Crew.from_checkpoint` with CrewAI's own
SqliteProvider on the user's file, or kicks a `@persist` flow off with its id and CrewAI's
own SQLiteFlowPersistence on it, in the user's interpreter.

Standalone on purpose (as langgraph_child.py, whose protocol it speaks): the standard
library, crewai, the user's code and its sibling `childlib.py` only (no SQL of its own:
CrewAI's events say what it wrote). The request: {"mode": "resume" | "kickoff", "target":
the SQLite file, "thread", "from": the checkpoint (resume), "entity": "flow" | "crew",
"on_events": the checkpoint's own config's, "steps": the thread's rows, "state": its
newest state (kickoff), "input" (kickoff: the flow's inputs, its "id" the thread),
"agent", "paths"}. Events on EVENTS_FD, one per row CrewAI writes:

  {"event": "checkpoint", "id", "step", "nodes": [the method], "source": the branch}   (resume)
  {"event": "checkpoint", "ref": "UUID@N", "step", "nodes": [the method], "keys": [changed]}  (kickoff)
  {"event": "done", "output": what kickoff returned}
  {"event": "error", "type", "message", "agent", "frames": [...]}
  {"event": "setup", "message"}      {"event": "interrupted"}

CrewAI needs SQLite >= 3.45 for its checkpoints (jsonb): an older `sqlite3` is replaced by
`pysqlite3` when that is installed (pysqlite3-binary), else a resume is a setup error.
Exit status: 0 done, 1 the user's code raised, 2 setup, 130 interrupted.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING, Any

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:  # python -P: no script directory
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
if TYPE_CHECKING:  # for the type checker: the same file, as a module of the package
    from agentctl.runners.childlib import SetupError, emit, instance, load, serve, user_frames
else:  # this file's sibling, never the agentctl package
    from childlib import SetupError, emit, instance, load, serve, user_frames

#: the SQLite CrewAI's checkpoints need (jsonb)
JSONB_SQLITE = (3, 45, 0)


def current_sqlite(req: dict[str, Any]) -> None:
    """Before crewai is imported: a `sqlite3` new enough for CrewAI (pysqlite3 put in its
    place when the interpreter's is older); SetupError for a resume without one."""
    import sqlite3

    if sqlite3.sqlite_version_info >= JSONB_SQLITE:
        return
    try:
        import pysqlite3.dbapi2 as newer
    except ImportError:
        newer = None
    if newer is not None and newer.sqlite_version_info >= JSONB_SQLITE:
        sys.modules["sqlite3"] = newer
        return
    if req.get("mode") == "resume":
        raise SetupError(
            f"CrewAI's checkpoints need SQLite >= 3.45 (jsonb) and {sys.executable} links SQLite "
            f"{sqlite3.sqlite_version}: install pysqlite3-binary there (it is used in place of "
            "sqlite3), or name a Python with a newer SQLite with --python"
        )


def _class(obj: Any, base: type, what: str) -> type:
    """The class to restore or kick off: `obj` itself (a subclass of `base`), or the class
    of an instance (or of what a factory returns)."""
    if isinstance(obj, type):
        if issubclass(obj, base):
            return obj
        raise SetupError(f"the agent is the class {obj.__name__}, not {what}")
    return type(instance(obj, base, what))


def prepare(req: dict[str, Any]) -> tuple[Any]:
    from crewai import Crew
    from crewai.flow.flow import Flow

    obj = load(req["agent"])
    if req.get("entity") == "crew":
        return (_class(obj, Crew, "a crewai Crew (the checkpoint is a crew's)"),)
    return (_class(obj, Flow, "a crewai Flow class"),)


class Progress:
    """One event per row CrewAI writes, as it writes it: its checkpoint listener's
    CheckpointCompletedEvent (the id; the method that finished last), or the flow
    persistence's save_state (wrapped on the instance: the flow's id, the method, the
    state's keys it changed); steps counted on from the thread's (`steps`, agentctl's)."""

    def __init__(self, out: Any, req: dict[str, Any]) -> None:
        self.out, self.req = out, req
        self.lock = threading.Lock()
        self.steps: dict[str, int] = {req["thread"]: int(req.get("steps") or 0)}
        self.states: dict[str, Any] = {req["thread"]: req.get("state")}
        self.method: str | None = None

    def _next(self, thread: str) -> int:
        self.steps[thread] = self.steps.get(thread, 0) + 1
        return self.steps[thread]

    def listen(self) -> None:
        from crewai.events.event_bus import crewai_event_bus
        from crewai.events.types.checkpoint_events import CheckpointCompletedEvent
        from crewai.events.types.flow_events import MethodExecutionFinishedEvent

        @crewai_event_bus.on(MethodExecutionFinishedEvent)
        def finished(source: Any, event: Any) -> None:
            self.method = str(getattr(event, "method_name", "") or "") or None

        @crewai_event_bus.on(CheckpointCompletedEvent)
        def saved(source: Any, event: Any) -> None:
            with self.lock:
                branch = str(event.branch or self.req["thread"])
                emit(
                    self.out,
                    {
                        "event": "checkpoint",
                        "id": event.checkpoint_id,
                        "step": self._next(branch),
                        "nodes": [self.method] if self.method else [],
                        "source": branch,
                    },
                )

    def wrap(self, persistence: Any) -> Any:
        save = persistence.save_state

        def save_state(flow_uuid: str, method_name: str, state_data: Any) -> None:
            save(flow_uuid, method_name, state_data)
            state = state_data.model_dump(mode="json") if hasattr(state_data, "model_dump") else state_data
            with self.lock:
                before, self.states[flow_uuid] = self.states.get(flow_uuid), state
                keys = (
                    sorted(k for k in set(state) | set(before) if state.get(k) != before.get(k))
                    if isinstance(state, dict) and isinstance(before, dict)
                    else []
                )
                step = self._next(flow_uuid)
                emit(
                    self.out,
                    {
                        "event": "checkpoint",
                        "ref": f"{flow_uuid}@{step}",
                        "step": step,
                        "nodes": [method_name],
                        "keys": keys,
                    },
                )

        object.__setattr__(persistence, "save_state", save_state)  # this instance's (its class unchanged)
        return persistence


def _output(value: Any) -> Any:
    raw = getattr(value, "raw", value)  # a crew's CrewOutput: its text
    return raw if isinstance(raw, (str, int, float, bool, type(None))) else repr(raw)


def run(out: Any, req: dict[str, Any], cls: Any) -> int:
    from crewai.events.event_bus import crewai_event_bus

    progress = Progress(out, req)
    progress.listen()
    failure: BaseException | None = None
    result: Any = None
    try:
        result = _start(req, cls, progress)
    except Exception as exc:  # the user's bug (or the model's): shown with the user's frames
        failure = exc
    finally:
        crewai_event_bus.flush()  # the checkpoint listener's pool: its rows written, said
    if failure is not None:
        emit(
            out,
            {
                "event": "error",
                "type": type(failure).__name__,
                "message": str(failure),
                "agent": getattr(cls, "__name__", None),
                "frames": user_frames(failure),
            },
        )
        return 1
    emit(out, {"event": "done", "output": _output(result)})
    return 0


def _start(req: dict[str, Any], cls: Any, progress: Progress) -> Any:
    target = req["target"]
    if req["mode"] == "kickoff":  # @persist: its persistence pointed at the file, kicked off with the id
        from crewai.flow.persistence.sqlite import SQLiteFlowPersistence

        flow = cls(persistence=progress.wrap(SQLiteFlowPersistence(target)))
        return flow.kickoff(inputs={**(req.get("input") or {}), "id": req["thread"]})
    from crewai.state.checkpoint_config import CheckpointConfig
    from crewai.state.provider.sqlite_provider import SqliteProvider

    def config(**kw: Any) -> Any:
        events = req.get("on_events")
        return CheckpointConfig(
            location=target, provider=SqliteProvider(), **({"on_events": events} if events else {}), **kw
        )

    # as kickoff(from_checkpoint=...) does (crewai.state.checkpoint_config.apply_checkpoint)
    restored = cls.from_checkpoint(config(restore_from=f"{target}#{req['from']}"))
    restored.checkpoint = config()
    return restored.kickoff()


if __name__ == "__main__":
    serve("CrewAI", "crewai", prepare, run, before=current_sqlite)
