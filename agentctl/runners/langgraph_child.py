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
  {"event": "created"}                (mode "create": the saver's setup() made its tables)
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
    from agentctl.runners.childlib import SetupError, emit, frozen, load, start, user_frames
else:  # this file's sibling, never the agentctl package
    from childlib import SetupError, emit, frozen, load, start, user_frames


def _graph(obj: Any) -> Any:
    """A compiled graph of `obj` (without a saver yet): a StateGraph is compiled, a
    compiled graph taken as it is, a factory (langgraph.json allows one) called."""
    for _ in range(3):
        if hasattr(obj, "compile") and not hasattr(obj, "invoke"):
            return obj.compile()
        if hasattr(obj, "invoke") and hasattr(obj, "copy"):
            return obj
        if callable(obj):
            obj = obj()
            continue
        break
    raise SetupError(f"the agent is a {type(obj).__name__}, not a LangGraph graph (StateGraph or compiled)")


def _async_only(obj: Any, seen: set[int], depth: int = 0) -> bool:
    """Whether a runnable (a node, a writer, a branch, a sequence's step, a tool) can only
    be awaited: LangGraph's RunnableCallable of an `async def` has no sync function, a
    tool of a coroutine alone none either."""
    if obj is None or id(obj) in seen or depth > 8:
        return False
    seen.add(id(obj))
    if getattr(obj, "afunc", None) is not None and hasattr(obj, "func") and obj.func is None:
        return True
    if getattr(obj, "coroutine", None) is not None and hasattr(obj, "func") and obj.func is None:
        return True
    inner: list[Any] = list(getattr(obj, "steps", None) or ())
    inner += [
        getattr(obj, "path", None),
        getattr(obj, "bound", None),
        getattr(getattr(obj, "func", None), "__self__", None),
    ]
    inner += list((getattr(obj, "tools_by_name", None) or {}).values())
    return any(_async_only(x, seen, depth + 1) for x in inner if not isinstance(x, (str, bytes)))


def _is_async(graph: Any) -> bool:
    """Whether the graph (or a subgraph) has a node, an edge's router or a tool that
    is `async` only: such a graph runs through LangGraph's async API (astream), as
    `langgraph dev` runs it; any other graph through the sync one."""
    graphs = [graph]
    try:
        graphs += [g for _, g in graph.get_subgraphs(recurse=True)]
    except Exception:  # an older LangGraph: the graph's own nodes
        pass
    seen: set[int] = set()
    for g in graphs:
        for node in (getattr(g, "nodes", None) or {}).values():
            if any(
                _async_only(r, seen)
                for r in (getattr(node, "bound", None), *(getattr(node, "writers", None) or ()))
            ):
                return True
    return False


def _context(graph: Any, value: Any) -> Any:
    """`--context` JSON as the graph's context_schema takes it (a dataclass or a
    pydantic model built from the object, a TypedDict's dict as it is), as LangGraph
    and `langgraph dev` coerce it; SetupError when it does not fit."""
    if value is None:
        return None
    schema = getattr(graph, "context_schema", None) or getattr(
        getattr(graph, "builder", None), "context_schema", None
    )
    if schema is None or not isinstance(value, dict):
        return value
    import dataclasses

    name = getattr(schema, "__name__", repr(schema))
    try:
        if dataclasses.is_dataclass(schema) and isinstance(schema, type):
            return schema(**value)
        if hasattr(schema, "model_validate"):
            return schema.model_validate(value)
    except Exception as exc:
        raise SetupError(
            f"--context does not fit the graph's context_schema {name}: "
            f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        ) from None
    return value


def _pg_dsn(target: str) -> str:
    """agentctl's DSN may carry `search_path=` (a server setting, as asyncpg takes it):
    libpq takes it as `options`."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(target)
    query = dict(parse_qsl(parts.query))
    path = query.pop("search_path", None)
    if path:
        query["options"] = f"-csearch_path={path}"
    return urlunsplit(parts._replace(query=urlencode(query)))


def _saver(kind: str, target: str, stack: Any) -> Any:
    if kind == "sqlite":
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(target, check_same_thread=False)
        stack.callback(conn.close)
        return SqliteSaver(conn)
    from langgraph.checkpoint.postgres import PostgresSaver

    return stack.enter_context(PostgresSaver.from_conn_string(_pg_dsn(target)))


async def _async_saver(kind: str, target: str, stack: Any) -> Any:
    """LangGraph's async saver on the database (AsyncSqliteSaver, AsyncPostgresSaver), as
    `langgraph dev` runs an async graph with."""
    if kind == "sqlite":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        return await stack.enter_async_context(AsyncSqliteSaver.from_conn_string(target))
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    return await stack.enter_async_context(AsyncPostgresSaver.from_conn_string(_pg_dsn(target)))


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
    if (
        hasattr(value, "model_copy")
        and isinstance(key, str)
        and key in getattr(type(value), "model_fields", {})
    ):
        if new is _UNSET:
            raise SetupError(f"{where}: a field of {type(value).__name__} cannot be unset")
        inner = getattr(value, key)
        return value.model_copy(update={key: _set_in(inner, rest, new, where) if rest else new})
    raise SetupError(f"{where}: cannot change {key!r} inside a {type(value).__name__}")


def _updates(graph: Any, values: dict[str, Any], edits: list[list[Any]]) -> dict[str, Any]:
    """What LangGraph's update_state is given for `edits` ([path, value, "set" | "unset"])
    on a checkpoint holding `values`, writing exactly the values given: a channel with a
    reducer gets LangGraph's Overwrite (a whole value set from JSON first goes through the
    reducer from empty, so that messages given as JSON become messages), a plain channel
    the value."""
    from langgraph.types import Overwrite

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
        current = updates.get(top, values.get(top))
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
    return updates


class _Run:
    """One run's events, the same for the sync and the async API: `take(item)` for each
    item LangGraph streams, `done(state)`, `failed(exc)`."""

    def __init__(self, out: Any, nested: bool) -> None:
        self.out = out
        self.nested = nested
        self.ran: dict[
            Any, tuple[list[str], list[str]]
        ] = {}  # per (sub)graph: the nodes and keys since its last checkpoint

    def take(self, item: Any) -> None:
        where, mode, chunk = item if self.nested else ((), *item)
        nodes, keys = self.ran.setdefault(where, ([], []))
        if mode == "updates":
            for node, update in (chunk or {}).items():
                if node == "__interrupt__":
                    continue
                nodes.append(node)
                if isinstance(update, dict):
                    keys.extend(k for k in update if k not in keys)
            return
        meta = chunk.get("metadata") or {}
        conf = chunk["config"]["configurable"]
        emit(
            self.out,
            {
                "event": "checkpoint",
                "id": conf["checkpoint_id"],
                "ns": conf.get("checkpoint_ns") or "",
                "step": meta.get("step"),
                "source": meta.get("source"),
                "nodes": nodes,
                "keys": keys,
                "next": list(chunk.get("next") or []),
            },
        )
        self.ran[where] = ([], [])

    def done(self, state: Any) -> int:
        interrupts = [getattr(i, "value", None) for t in state.tasks for i in (t.interrupts or ())]
        emit(
            self.out,
            {
                "event": "done",
                "next": list(state.next),
                "interrupts": interrupts,
                "head": (state.config or {}).get("configurable", {}).get("checkpoint_id"),
            },
        )
        return 0

    def failed(self, exc: BaseException) -> int:
        """An exception of the run: the user's code's when a frame of it is on the
        traceback, else LangGraph's (or the runner's): "origin" says which."""
        frames = user_frames(exc)
        emit(
            self.out,
            {
                "event": "error",
                "type": type(exc).__name__,
                "message": str(exc),
                "node": _node_of(exc),
                "frames": frames,
                "origin": "agent" if frames else "LangGraph",
            },
        )
        return 1


def _edited(out: Any, new: dict[str, Any], state: Any) -> int:
    emit(
        out,
        {
            "event": "edited",
            "id": new["configurable"]["checkpoint_id"],
            "step": (state.metadata or {}).get("step"),
            "next": list(state.next),
        },
    )
    return 0


def _refused(out: Any, exc: BaseException) -> int:
    if isinstance(exc, SetupError):
        emit(out, {"event": "setup", "message": str(exc)})
    else:  # LangGraph refused the update (e.g. an unknown --as-node)
        emit(out, {"event": "setup", "message": f"LangGraph refused the update: {type(exc).__name__}: {exc}"})
    return 2


def _with_runtime(config: dict[str, Any], context: Any) -> dict[str, Any]:
    """`config` for update_state, carrying the graph's Runtime (its context) as a run does:
    LangGraph's update_state runs the node's edges, whose routers may take the Runtime."""
    try:
        from langgraph.runtime import Runtime
    except ImportError:  # an older LangGraph: no Runtime
        return config
    try:
        from langgraph._internal._constants import CONFIG_KEY_RUNTIME
    except ImportError:
        CONFIG_KEY_RUNTIME = "__pregel_runtime"
    return {
        **config,
        "configurable": {**config["configurable"], CONFIG_KEY_RUNTIME: Runtime(context=context)},
    }


def _value(req: dict[str, Any]) -> Any:
    from langgraph.types import Command

    return Command(resume=req["resume"]) if "resume" in req else req.get("input")


def _run_sync(out: Any, req: dict[str, Any], graph: Any, config: dict[str, Any], context: Any) -> int:
    import contextlib

    with contextlib.ExitStack() as stack:
        try:
            saver = _saver(req["kind"], req["target"], stack)
        except ImportError as exc:
            raise SetupError(f"{sys.executable} has no LangGraph saver for {req['kind']} ({exc})") from exc
        graph = graph.copy(update={"checkpointer": saver})
        if req.get("mode") == "edit":
            try:
                new = graph.update_state(
                    _with_runtime(config, context),
                    _updates(graph, graph.get_state(config).values, req["edits"]),
                    as_node=req.get("as_node"),
                )
            except Exception as exc:
                return _refused(out, exc)
            return _edited(out, new, graph.get_state(new))
        # a subgraph's checkpoints are streamed only with subgraphs=True, which runs every
        # node in LangGraph's thread pool: Ctrl-C then waits for the running node, so
        # it is asked for only when the graph has subgraphs
        run = _Run(out, _has_subgraphs(graph))
        try:
            for item in graph.stream(
                _value(req),
                config,
                context=context,
                stream_mode=["updates", "checkpoints"],
                subgraphs=run.nested,
            ):
                run.take(item)
            return run.done(graph.get_state(_head(config)))
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            return run.failed(exc)


async def _run_async(out: Any, req: dict[str, Any], graph: Any, config: dict[str, Any], context: Any) -> int:
    """The async graph's run: astream / aupdate_state with LangGraph's async saver."""
    import contextlib

    async with contextlib.AsyncExitStack() as stack:
        try:
            saver = await _async_saver(req["kind"], req["target"], stack)
        except ImportError as exc:
            raise SetupError(
                f"{sys.executable} has no LangGraph async saver for {req['kind']} ({exc})"
            ) from exc
        graph = graph.copy(update={"checkpointer": saver})
        if req.get("mode") == "edit":
            try:
                state = await graph.aget_state(config)
                new = await graph.aupdate_state(
                    _with_runtime(config, context),
                    _updates(graph, state.values, req["edits"]),
                    as_node=req.get("as_node"),
                )
            except Exception as exc:
                return _refused(out, exc)
            return _edited(out, new, await graph.aget_state(new))
        run = _Run(out, _has_subgraphs(graph))
        try:
            async for item in graph.astream(
                _value(req),
                config,
                context=context,
                stream_mode=["updates", "checkpoints"],
                subgraphs=run.nested,
            ):
                run.take(item)
            return run.done(await graph.aget_state(_head(config)))
        except Exception as exc:
            return run.failed(exc)


def _head(config: dict[str, Any]) -> dict[str, Any]:
    """The thread's head (config without checkpoint_id)."""
    conf = {k: v for k, v in config["configurable"].items() if k != "checkpoint_id"}
    return {"configurable": conf}


def _create_tables(out: Any, req: dict[str, Any]) -> int:
    """LangGraph's own saver's setup() on a database without its tables (a run with an
    input on a new database, as `langgraph dev` would make them): {"event": "created"}."""
    import contextlib

    with contextlib.ExitStack() as stack:
        try:
            _saver(req["kind"], req["target"], stack).setup()
        except ImportError as exc:
            raise SetupError(f"{sys.executable} has no LangGraph saver for {req['kind']} ({exc})") from exc
        except Exception as exc:
            raise SetupError(
                f"LangGraph's saver could not create its tables: {type(exc).__name__}: {exc}"
            ) from exc
    emit(out, {"event": "created"})
    return 0


def main() -> int:
    out, req = start()
    try:
        try:
            import langgraph  # noqa: F401
        except ImportError as exc:
            raise SetupError(
                f"{sys.executable} cannot import LangGraph ({exc}); name the interpreter "
                "of your agent's environment with --python"
            ) from exc
        if req.get("mode") == "create":
            return _create_tables(out, req)
        graph = _graph(load(req["agent"]))
        context = _context(graph, req.get("context"))
        configurable = {**(req.get("configurable") or {}), "thread_id": req["thread"], "checkpoint_ns": ""}
        if req.get("from"):
            configurable["checkpoint_id"] = req["from"]
        config = {"configurable": configurable}
        if _is_async(graph):
            import asyncio

            return asyncio.run(_run_async(out, req, graph, config, context))
        return _run_sync(out, req, graph, config, context)
    except SetupError as exc:
        emit(out, {"event": "setup", "message": str(exc)})
        return 2
    except KeyboardInterrupt:
        emit(out, {"event": "interrupted"})
        return 130


def _has_subgraphs(graph: Any) -> bool:
    try:
        return any(True for _ in graph.get_subgraphs())
    except Exception:  # an older LangGraph: stream what it can
        return False


if __name__ == "__main__":
    try:
        sys.exit(frozen(main()))
    except KeyboardInterrupt:  # between the framework's steps, outside the run's own handler
        sys.exit(130)
