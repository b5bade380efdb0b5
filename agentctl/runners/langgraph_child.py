"""The child process of `agentctl run` for LangGraph: runs the user's own graph, in the
user's interpreter, through LangGraph itself, on the user's database.

Standalone on purpose: it runs in an interpreter that may not have agentctl installed,
so it imports only the standard library, LangGraph and the user's code. agentctl starts
it as `PYTHON langgraph_child.py EVENTS_FD` and writes one JSON request on its stdin;
the child writes one JSON object per line to the file descriptor EVENTS_FD:

  {"event": "checkpoint", "id", "ns", "step", "source", "nodes": [...], "keys": [...], "next": [...]}
      (every checkpoint the run saves, a subgraph's too: `ns` is its checkpoint_ns, "" for
      the graph's own; `nodes`/`keys`: the nodes of that graph that ran since its last one)
  {"event": "done", "next": [...], "interrupts": [...], "head": id}
  {"event": "error", "type", "message", "node", "frames": [{"file", "line", "name", "code"}]}
  {"event": "setup", "message"}       (the agent or the framework cannot be loaded)
  {"event": "interrupted"}            (Ctrl-C)

Exit status: 0 done, 1 the user's code raised, 2 setup, 130 interrupted. What the user's
code prints goes to the child's stdout and stderr (agentctl points both at its stderr).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if os.path.dirname(os.path.abspath(__file__)) not in sys.path:  # python -P: no script directory
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
if TYPE_CHECKING:  # for the type checker: the same file, as a module of the package
    from agentctl.runners.childlib import SetupError, emit, load, start, user_frames
else:  # this file's sibling, never the agentctl package
    from childlib import SetupError, emit, load, start, user_frames


def _graph(obj: Any, saver: Any) -> Any:
    """A compiled graph of `obj` that writes through `saver`: a StateGraph is compiled,
    a compiled graph copied with the saver, a factory (langgraph.json allows one) called."""
    for _ in range(3):
        if hasattr(obj, "compile") and not hasattr(obj, "invoke"):
            return obj.compile(checkpointer=saver)
        if hasattr(obj, "invoke") and hasattr(obj, "copy"):
            return obj.copy(update={"checkpointer": saver})
        if callable(obj):
            obj = obj()
            continue
        break
    raise SetupError(f"the agent is a {type(obj).__name__}, not a LangGraph graph (StateGraph or compiled)")


def _saver(kind: str, target: str, stack: Any) -> Any:
    if kind == "sqlite":
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(target, check_same_thread=False)
        stack.callback(conn.close)
        return SqliteSaver(conn)
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    from langgraph.checkpoint.postgres import PostgresSaver

    # agentctl's DSN may carry `search_path=` (a server setting, as asyncpg takes it):
    # libpq takes it as `options`
    parts = urlsplit(target)
    query = dict(parse_qsl(parts.query))
    path = query.pop("search_path", None)
    if path:
        query["options"] = f"-csearch_path={path}"
    return stack.enter_context(PostgresSaver.from_conn_string(urlunsplit(parts._replace(query=urlencode(query)))))


def _node_of(exc: BaseException) -> str | None:
    for note in getattr(exc, "__notes__", None) or []:
        if note.startswith("During task with name '"):
            return note.split("'")[1]
    return None


_UNSET = object()


def _set_in(value: Any, path: list[Any], new: Any, where: str) -> Any:
    """A copy of `value` with `new` at `path` (_UNSET: removed); dicts, lists and
    pydantic models (LangChain's messages) along the way, the rest shared."""
    if not path:
        return new
    key, rest = path[0], path[1:]
    if isinstance(value, dict):
        if rest and key not in value:
            raise SetupError(f"{where}: no key {key!r}")
        out = dict(value)
        if rest:
            out[key] = _set_in(value[key], rest, new, where)
        elif new is _UNSET:
            if key not in out:
                raise SetupError(f"{where}: no key {key!r} to unset")
            del out[key]
        else:
            out[key] = new
        return out
    if isinstance(value, (list, tuple)):
        try:
            i = int(key)
            value[i]
        except (ValueError, IndexError):
            raise SetupError(f"{where}: no item {key!r} in a list of {len(value)}") from None
        items = list(value)
        if rest:
            items[i] = _set_in(items[i], rest, new, where)
        elif new is _UNSET:
            del items[i]
        else:
            items[i] = new
        return type(value)(items) if isinstance(value, tuple) else items
    if hasattr(value, "model_copy") and isinstance(key, str) and key in getattr(type(value), "model_fields", {}):
        if new is _UNSET:
            raise SetupError(f"{where}: a field of {type(value).__name__} cannot be unset")
        inner = getattr(value, key)
        return value.model_copy(update={key: _set_in(inner, rest, new, where) if rest else new})
    raise SetupError(f"{where}: cannot change {key!r} inside a {type(value).__name__}")


def _edit(graph: Any, config: dict[str, Any], edits: list[list[Any]], as_node: str | None) -> Any:
    """LangGraph's own update_state at the checkpoint of `config`, writing exactly the
    values given. `edits`: [path, value, "set" | "unset"]. A channel with a reducer gets
    LangGraph's Overwrite (a whole value set from JSON first goes through the reducer
    from empty, so that messages given as JSON become messages), a plain channel the value."""
    from langgraph.types import Overwrite

    state = graph.get_state(config)
    channels = getattr(graph, "channels", {}) or {}
    known = sorted(k for k in channels if not k.startswith(("__", "branch:")))
    updates: dict[str, Any] = {}
    from_json: set[str] = set()
    for path, value, how in edits:
        top = path[0]
        if top not in known:
            raise SetupError(f"the state has no key {top!r} (its keys: {', '.join(known)})")
        new = _UNSET if how == "unset" else value
        if len(path) == 1:
            if new is _UNSET:
                raise SetupError(f"{top!r} is a channel of the graph: it can be set, not unset")
            updates[top] = new
            from_json.add(top)
            continue
        current = updates.get(top, state.values.get(top))
        updates[top] = _set_in(current, path[1:], new, ".".join(map(str, path)))
    for top, value in list(updates.items()):
        ch = channels[top]
        operator = getattr(ch, "operator", None)
        if operator is None:
            continue
        if top in from_json:
            try:
                value = operator(ch.typ(), value)
            except Exception:  # no empty value to start from: the value as given
                pass
        updates[top] = Overwrite(value)
    return graph.update_state(config, updates, as_node=as_node)


def main() -> int:
    out, req = start()
    import contextlib

    with contextlib.ExitStack() as stack:
        try:
            try:
                import langgraph  # noqa: F401
                from langgraph.types import Command
            except ImportError as exc:
                raise SetupError(f"{sys.executable} cannot import LangGraph ({exc}); name the interpreter "
                                 "of your agent's environment with --python") from exc
            try:
                saver = _saver(req["kind"], req["target"], stack)
            except ImportError as exc:
                raise SetupError(f"{sys.executable} has no LangGraph saver for {req['kind']} ({exc})") from exc
            graph = _graph(load(req["agent"]), saver)
        except SetupError as exc:
            emit(out, {"event": "setup", "message": str(exc)})
            return 2
        configurable = {"thread_id": req["thread"], "checkpoint_ns": ""}
        if req.get("from"):
            configurable["checkpoint_id"] = req["from"]
        config = {"configurable": configurable}
        if req.get("mode") == "edit":
            try:
                new = _edit(graph, config, req["edits"], req.get("as_node"))
            except SetupError as exc:
                emit(out, {"event": "setup", "message": str(exc)})
                return 2
            except Exception as exc:  # LangGraph refused the update (e.g. an unknown --as-node)
                emit(out, {"event": "setup", "message": f"LangGraph refused the update: "
                                                         f"{type(exc).__name__}: {exc}"})
                return 2
            state = graph.get_state(new)
            emit(out, {"event": "edited", "id": new["configurable"]["checkpoint_id"],
                        "step": (state.metadata or {}).get("step"), "next": list(state.next)})
            return 0
        if "resume" in req:
            value: Any = Command(resume=req["resume"])
        else:
            value = req.get("input")
        ran: dict[Any, tuple[list[str], list[str]]] = {}  # per (sub)graph: the nodes and keys since its last checkpoint
        try:
            # a subgraph's checkpoints are streamed only with subgraphs=True, which runs every
            # node in LangGraph's thread pool: Ctrl-C then waits for the running node, so
            # it is asked for only when the graph has subgraphs
            nested = _has_subgraphs(graph)
            for item in graph.stream(value, config, stream_mode=["updates", "checkpoints"], subgraphs=nested):
                where, mode, chunk = item if nested else ((), *item)
                nodes, keys = ran.setdefault(where, ([], []))
                if mode == "updates":
                    for node, update in (chunk or {}).items():
                        if node == "__interrupt__":
                            continue
                        nodes.append(node)
                        if isinstance(update, dict):
                            keys.extend(k for k in update if k not in keys)
                    continue
                meta = chunk.get("metadata") or {}
                conf = chunk["config"]["configurable"]
                emit(out, {"event": "checkpoint", "id": conf["checkpoint_id"], "ns": conf.get("checkpoint_ns") or "",
                            "step": meta.get("step"), "source": meta.get("source"), "nodes": nodes,
                            "keys": keys, "next": list(chunk.get("next") or [])})
                ran[where] = ([], [])
            state = graph.get_state({"configurable": {"thread_id": req["thread"], "checkpoint_ns": ""}})
            interrupts = [getattr(i, "value", None) for t in state.tasks for i in (t.interrupts or ())]
            emit(out, {"event": "done", "next": list(state.next), "interrupts": interrupts,
                        "head": (state.config or {}).get("configurable", {}).get("checkpoint_id")})
            return 0
        except KeyboardInterrupt:
            emit(out, {"event": "interrupted"})
            return 130
        except Exception as exc:
            emit(out, {"event": "error", "type": type(exc).__name__, "message": str(exc),
                        "node": _node_of(exc), "frames": user_frames(exc)})
            return 1


def _has_subgraphs(graph: Any) -> bool:
    try:
        return any(True for _ in graph.get_subgraphs())
    except Exception:  # an older LangGraph: stream what it can
        return False


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # between the framework's steps, outside the run's own handler
        sys.exit(130)
