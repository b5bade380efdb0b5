"""The child process of `agentctl run` for Agno: runs the user's own Agent, Team or
Workflow, in the user's interpreter, as `VAR.run(TEXT, session_id=THREAD)` (`arun` when
it has async tools, hooks or steps), its db pointed at the user's database.

Standalone on purpose (as langgraph_child.py, whose protocol it speaks): the standard
library, agno, the user's code and its sibling `childlib.py` only. The request:
{"kind", "target", "thread", "input": TEXT, "agent", "paths", "tables": [SESSIONS, RUNS],
"schema": the Postgres schema or None}. The component's `db` (and that of each member or
step agent that has one of its own) becomes agno's SqliteDb / PostgresDb on those tables.
Events on EVENTS_FD, once the run is saved (Agno saves a run when it ends, Ctrl-C's too):

  {"event": "checkpoint", "step": N, "id": the top-level run, "kind": role, "text": short text}
      (one per message of each run the run added: its members' runs' too, kind "NAME/role";
      a workflow's: its input, each step's output, its output)
  {"event": "done", "output": the run's content}
  {"event": "error", "type", "message", "agent", "frames": [...]}
  {"event": "setup", "message"}      {"event": "interrupted"}

Exit status: 0 done, 1 the user's code raised (or the run ended in Agno's ERROR status), 2
setup, 130 interrupted.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from typing import TYPE_CHECKING, Any

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:  # python -P: no script directory
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
if TYPE_CHECKING:  # for the type checker: the same file, as a module of the package
    from agentctl.runners.childlib import STOPPED, SetupError, emit, ended, instance, load, serve
else:  # this file's sibling, never the agentctl package
    from childlib import STOPPED, SetupError, emit, ended, instance, load, serve


def _component(obj: Any) -> Any:
    from agno.agent import Agent
    from agno.team import Team
    from agno.workflow import Workflow

    return instance(obj, (Agent, Team, Workflow), "an Agno Agent, Team or Workflow")


def _db(kind: str, target: str, tables: list[str], schema: str | None) -> Any:
    """Agno's own db on the user's database and the tables agentctl read (the runs table
    named where this agno has one: agno 2 keeps runs in the sessions table)."""
    sessions, runs = tables
    Db: Any
    if kind == "sqlite":
        from agno.db.sqlite import SqliteDb

        Db = SqliteDb
        args: dict[str, Any] = {"db_file": target}
    else:
        from urllib.parse import urlsplit, urlunsplit

        try:
            from agno.db.postgres import PostgresDb
        except ImportError as exc:
            raise SetupError(f"{sys.executable}: agno's PostgresDb cannot be imported ({exc})") from exc
        Db = PostgresDb
        parts = urlsplit(target)
        args = {
            "db_url": urlunsplit(("postgresql+psycopg", parts.netloc, parts.path, "", "")),
            "db_schema": schema or "public",
        }
    args["session_table"] = sessions
    if "runs_table" in inspect.signature(Db.__init__).parameters:
        args["runs_table"] = runs
    try:
        return Db(**args)
    except Exception as exc:  # a missing driver (psycopg), a bad URL
        raise SetupError(f"agno's {Db.__name__} on the database: {type(exc).__name__}: {exc}") from exc


def _parts(component: Any) -> list[Any]:
    """The component and the agents, teams and workflows inside it (members, steps)."""
    out, todo, seen = [], [component], set()
    while todo:
        c = todo.pop(0)
        if id(c) in seen or c is None:
            continue
        seen.add(id(c))
        out.append(c)
        todo += list(getattr(c, "members", None) or [])
        steps = getattr(c, "steps", None)
        for s in steps if isinstance(steps, (list, tuple)) else []:
            todo += [getattr(s, "agent", None), getattr(s, "team", None)]
            todo += list(getattr(s, "steps", None) or [])  # Parallel, Loop, Condition, Steps
    return out


def _is_async(fn: Any) -> bool:
    fn = getattr(fn, "entrypoint", fn)  # an agno Function
    return inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)


def _needs_arun(component: Any) -> bool:
    """Whether Agno's sync `run` would refuse this component: an async tool (a toolkit's
    too), hook or step function, or an async db of its own."""
    from agno.db.base import AsyncBaseDb

    for c in _parts(component):
        if isinstance(getattr(c, "db", None), AsyncBaseDb):
            return True
        fns = list(getattr(c, "pre_hooks", None) or []) + list(getattr(c, "post_hooks", None) or [])
        for t in getattr(c, "tools", None) or []:
            fns += (
                list(getattr(t, "functions", {}).values()) + list(getattr(t, "async_functions", {}).values())
                if hasattr(t, "functions")
                else [t]
            )
        steps = getattr(c, "steps", None)
        if callable(steps):
            fns.append(steps)
        for s in steps if isinstance(steps, (list, tuple)) else []:
            fns += [s, getattr(s, "executor", None)]
        if any(_is_async(f) for f in fns if f is not None):
            return True
    return False


def _point(component: Any, db: Any) -> None:
    """The component's db, and that of each part with a db of its own, is `db`."""
    component.db = db
    for c in _parts(component)[1:]:
        if getattr(c, "db", None) is not None:
            c.db = db


def _runs(db: Any, thread: str) -> list[dict[str, Any]]:
    """The session's runs as Agno reads them (the legacy array merged with the runs
    table), members' too, in Agno's order."""
    from agno.db.base import SessionType

    session = db.get_session(session_id=thread, session_type=SessionType.AGENT, deserialize=False)
    if isinstance(session, dict):
        runs = session.get("runs")
    else:
        runs = [r.to_dict() for r in (getattr(session, "runs", None) or [])]
    return [r for r in runs or [] if isinstance(r, dict)]


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=repr)
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:79] + "…"


def _lines(run: dict[str, Any], who: str = "") -> list[tuple[str, str]]:
    """(kind, text) of a run's messages (not the system prompt, not the history it was
    given); a workflow run's input, each step's output, its output."""
    pre = f"{who}/" if who else ""
    if "step_executor_runs" in run or "step_results" in run:
        out = [("user", _short(run.get("input") or ""))]
        for s in run.get("step_executor_runs") or []:
            if isinstance(s, dict):
                out.append(
                    (
                        f"{s.get('agent_name') or s.get('team_name') or 'step'}/assistant",
                        _short(s.get("content") or ""),
                    )
                )
        return out + [("assistant", _short(run.get("content") or ""))]
    out = []
    for m in run.get("messages") or []:
        if not isinstance(m, dict) or m.get("role") == "system" or m.get("from_history"):
            continue
        text = m.get("content") or ""
        calls = [c.get("function") or {} for c in m.get("tool_calls") or [] if isinstance(c, dict)]
        if calls and not text:
            text = " ".join(f"{c.get('name')}({c.get('arguments', '')})" for c in calls)
        out.append((pre + str(m.get("role")), _short(text)))
    return out


def _said(out: Any, runs: list[dict[str, Any]], before: set[str]) -> None:
    """A checkpoint event per message of the runs not in `before`; a team run's members'
    (saved before it) where their answers come back to it: before its first tool message."""
    tops = [r for r in runs if not r.get("parent_run_id")]
    for n, top in enumerate(tops, 1):
        members = [
            r for r in runs if r.get("parent_run_id") == top["run_id"] and r.get("run_id") not in before
        ]
        if top["run_id"] in before and not members:
            continue
        lines = _lines(top) if top["run_id"] not in before else []
        inner = [
            line
            for r in members
            for line in _lines(r, str(r.get("agent_name") or r.get("team_name") or r.get("agent_id") or ""))
        ]
        at = next((i for i, (kind, _) in enumerate(lines) if kind == "tool"), len(lines))
        for kind, text in lines[:at] + inner + lines[at:]:
            emit(out, {"event": "checkpoint", "step": n, "id": top["run_id"], "kind": kind, "text": text})


def _prepare(req: dict[str, Any]) -> tuple[Any, Any]:
    os.environ.setdefault("AGNO_TELEMETRY", "false")  # no network call of its own unless the user asks
    component = _component(load(req["agent"]))
    db = _db(req["kind"], req["target"], req["tables"], req.get("schema"))
    _point(component, db)
    return component, db


def _run(out: Any, req: dict[str, Any], component: Any, db: Any) -> int:
    thread, name = req["thread"], getattr(component, "name", None) or getattr(component, "id", None)
    before = {r["run_id"] for r in _runs(db, thread)}
    result: Any = None
    failure: BaseException | None = None
    try:
        if _needs_arun(component):
            import asyncio

            result = asyncio.run(component.arun(req["input"], session_id=thread))
        else:
            result = component.run(req["input"], session_id=thread)
    except KeyboardInterrupt:  # (Agno catches it in its run: the run is saved as CANCELLED)
        STOPPED.append(True)
    except Exception as exc:  # the user's bug (or the model's): shown with the user's frames
        failure = exc
    finally:
        _said(out, _runs(db, thread), before)
    if STOPPED:
        emit(out, {"event": "interrupted"})
        return 130
    status = str(getattr(getattr(result, "status", None), "value", getattr(result, "status", "")))
    if failure is None and status.upper() == "ERROR":  # Agno caught it and saved the run as ERROR
        emit(
            out,
            {
                "event": "error",
                "type": "AgnoRunError",
                "message": _short(getattr(result, "content", "")),
                "agent": name,
                "frames": [],
            },
        )
        return 1
    return ended(out, failure, name, getattr(result, "content", None))


if __name__ == "__main__":
    serve("Agno", "agno", _prepare, _run)
