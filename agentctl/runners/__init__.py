"""Running the user's own agent (`agentctl run`): where its code is, which interpreter
runs it, and the child process that does (headless: no rich, no textual).

agentctl never imports the user's code: a child process in the user's interpreter runs a
standalone script of this package (`langgraph_child.py`: the standard library, the
framework and the user's code only), which attaches the framework's own saver to the
database and streams one JSON line per new checkpoint back on a pipe. What the user's
code prints goes to agentctl's stderr (stdout carries agentctl's data only).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentctl.errors import UsageError, not_a_file

__all__ = [
    "require_runtime",
    "Runtime",
    "RUNNERS",
    "Agent",
    "find_agent",
    "pick_python",
    "pick_node",
    "pick_interpreter",
    "child_argv",
    "ChildRun",
    "ChildOutcome",
    "run_child",
]


@dataclass(frozen=True)
class Runtime:
    """What `run` and `edit` need to know of a framework they drive."""

    script: str  # the child script (beside this file)
    graph_input: bool  # --input is the graph's input as JSON (else the user's message, TEXT)
    replays: bool  # --from REF and --resume (LangGraph's replay and Command(resume=...))
    unit: str  # what a run saves, for messages
    #: --input: "optional" (LangGraph's graph input), "object" (optional, a JSON object: a
    #: CrewAI flow's inputs), "required" (an SDK's message), "none" (a CrewAI resume: the
    #: inputs are the checkpoint's)
    input: str = "optional"
    #: --resume, --context, --configurable (LangGraph's)
    graph_options: bool = False
    #: THREAD may be a checkpoint; a thread alone runs from its newest one (a CrewAI resume)
    from_head: bool = False


#: the formats `run` can drive
RUNNERS = {
    "langgraph": Runtime(
        "langgraph_child.py", graph_input=True, replays=True, unit="checkpoint(s)", graph_options=True
    ),
    "openai-agents": Runtime(
        "openai_child.py", graph_input=False, replays=False, unit="item(s)", input="required"
    ),
    "adk": Runtime("adk_child.py", graph_input=False, replays=False, unit="item(s)", input="required"),
    "agno": Runtime("agno_child.py", graph_input=False, replays=False, unit="message(s)", input="required"),
    "crewai": Runtime(
        "crewai_child.py", graph_input=False, replays=True, unit="checkpoint(s)", input="none", from_head=True
    ),
    "crewai-flows": Runtime(
        "crewai_child.py", graph_input=True, replays=False, unit="state(s)", input="object"
    ),
}

CONFIG_NAME = "langgraph.json"
#: a LangGraph.js graph's file (run by node, in langgraph_child.mjs)
JS_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts")
TS_SUFFIXES = (".ts", ".mts", ".cts")
NODE_SCRIPT = "langgraph_child.mjs"


def require_runtime(fmt: str, command: str) -> None:
    """Exit 2 unless agentctl can run the agents of this format (`command`: run, edit)."""
    if fmt not in RUNNERS:
        raise UsageError(
            f"{command} needs the agent's framework, and agentctl runs none for the {fmt} format "
            f"({command} works on {', '.join(sorted(RUNNERS))} databases)"
        )


@dataclass
class Agent:
    """The user's agent: what the child loads ({"file", "var"} or {"module", "var"}), the
    directories it puts first on sys.path, and how to name it to the user."""

    target: dict[str, str]
    label: str
    paths: list[str] = field(default_factory=list)
    #: "python", or "node" for a LangGraph.js graph (a .js/.mjs/.cjs/.ts file, or a
    #: langgraph.json with "node_version"), whose packages resolve from `project`
    runtime: str = "python"
    project: str | None = None

    def request(self) -> dict[str, Any]:
        """What a child's request says of the agent (start_request's, edit's)."""
        out: dict[str, Any] = {"agent": self.target, "paths": self.paths}
        if self.runtime == "node":
            out.update(runtime="node", project=self.project)
        return out


def _spec(text: str, base: Path, what: str) -> dict[str, str]:
    """FILE.py:VAR or module:var (a path relative to `base`)."""
    where, sep, var = text.rpartition(":")
    if not sep or not where or not var:
        raise UsageError(f"{what} {text!r} is not FILE.py:VAR or module:var")
    if where.endswith((".py", *JS_SUFFIXES)) or "/" in where or os.sep in where:
        path = (base / where).resolve()
        if not path.is_file():
            raise UsageError(f"{what} {text!r}: no file {path}")
        return {"file": str(path), "var": var}
    return {"module": where, "var": var}


def find_agent(
    agent: str | None, config: str | None, cwd: str | None = None, fmt: str = "langgraph"
) -> Agent:
    """The agent `--agent` names: FILE.py:VAR, module:var, or (LangGraph) a graph of
    langgraph.json (the one in the current directory, or `config`); without `--agent`,
    langgraph.json's only graph. Its `dependencies` go on the path, as `langgraph dev`
    puts them."""
    here = Path(cwd or os.getcwd())
    if fmt == "adk" and agent and ":" not in agent:  # an agents folder, as `adk run DIR` takes it
        folder = (here / agent).resolve()
        if not folder.is_dir():
            raise UsageError(f"--agent {agent}: no agents folder {folder} (give DIR or FILE.py:VAR)")
        return Agent(target={"dir": str(folder)}, label=agent)
    if fmt != "langgraph" and not (agent and ":" in agent):
        raise UsageError(
            f"name the agent of this {fmt} database with --agent "
            + ("DIR or " if fmt == "adk" else "")
            + "FILE.py:VAR (or module:var)"
        )
    if agent and ":" in agent:
        target = _spec(agent, here, "--agent")
        if target.get("file", "").endswith(JS_SUFFIXES):
            return Agent(target=target, label=agent, runtime="node", project=str(Path(target["file"]).parent))
        return Agent(
            target=target,
            label=agent,
            paths=[str(Path(target["file"]).parent)] if "file" in target else [str(here)],
        )
    path = Path(config).expanduser() if config else here / CONFIG_NAME
    problem = not_a_file(str(path))
    if problem:
        if config:
            raise UsageError(
                f"--config {config}: no such file"
                if problem == "does not exist"
                else f"--config {config} {problem}"
            )
        raise UsageError(
            f"no {CONFIG_NAME} in {here}; name the agent with --agent FILE.py:VAR "
            f"(or module:var), or give --config PATH"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable JSON file ({exc})") from None
    graphs = data.get("graphs") if isinstance(data, dict) else None
    if not isinstance(graphs, dict) or not graphs:
        raise UsageError(f'{path} names no graphs (a "graphs" object: name -> "./file.py:var")')
    if agent is None:
        if len(graphs) != 1:
            raise UsageError(
                f"{path} names {len(graphs)} graphs; choose one with --agent ({', '.join(sorted(graphs))})"
            )
        agent = next(iter(graphs))
    if agent not in graphs:
        raise UsageError(f"{path} has no graph {agent!r} (it has: {', '.join(sorted(graphs))})")
    entry = graphs[agent]
    if isinstance(entry, dict):  # {"path": "./x.py:g", ...} in newer files
        entry = entry.get("path")
    if not isinstance(entry, str):
        raise UsageError(f'{path}: graph {agent!r} is not "./file.py:var"')
    base = path.parent.resolve()
    deps = data.get("dependencies") or []
    paths = [
        str((base / d).resolve())
        for d in deps
        if isinstance(d, str) and not d.startswith(("http", "git+")) and (base / d).is_dir()
    ]
    target = _spec(entry, base, f"{path.name} graph {agent!r}")
    if "node_version" in data or target.get("file", "").endswith(
        JS_SUFFIXES
    ):  # LangGraph.js's langgraph.json
        if "file" not in target:
            raise UsageError(
                f'{path}: graph {agent!r} of a LangGraph.js project is "./file.ts:graph" (a file)'
            )
        return Agent(target=target, label=agent, runtime="node", project=str(base))
    if "file" in target and str(Path(target["file"]).parent) not in paths:
        paths.append(str(Path(target["file"]).parent))
    return Agent(target=target, label=agent, paths=paths)


def pick_python(python: str | None) -> str:
    """The interpreter that runs the user's agent: --python, AGENTCTL_PYTHON, the active
    virtual environment's, else agentctl's own."""
    chosen = python or os.environ.get("AGENTCTL_PYTHON")
    if not chosen and os.environ.get("VIRTUAL_ENV"):
        venv = Path(os.environ["VIRTUAL_ENV"]) / "bin" / "python"
        if venv.exists():
            chosen = str(venv)
    if not chosen:
        return sys.executable
    from shutil import which

    found = which(chosen) if os.sep not in chosen else (chosen if os.access(chosen, os.X_OK) else None)
    if not found:
        raise UsageError(f"--python {chosen}: no such interpreter")
    return found


def pick_node(node: str | None) -> str:
    """The node that runs a LangGraph.js agent: --node, AGENTCTL_NODE, else `node` on PATH."""
    from shutil import which

    chosen = node or os.environ.get("AGENTCTL_NODE") or "node"
    found = which(chosen) if os.sep not in chosen else (chosen if os.access(chosen, os.X_OK) else None)
    if not found:
        if node or os.environ.get("AGENTCTL_NODE"):
            raise UsageError(
                f"--node {chosen}: no such program" if node else f"AGENTCTL_NODE={chosen}: no such program"
            )
        raise UsageError("a LangGraph.js graph needs node (none on PATH); give --node PATH")
    return found


def pick_interpreter(agent: Agent, python: str | None, node: str | None = None) -> str:
    """The program that runs `agent`: node for a LangGraph.js graph, else the Python."""
    return pick_node(node) if agent.runtime == "node" else pick_python(python)


def _tsx(project: str) -> Path | None:
    """The project's tsx (its ESM loader), in node_modules walked up from `project`."""
    folder = Path(project)
    for d in (folder, *folder.parents):
        manifest = d / "node_modules" / "tsx" / "package.json"
        if manifest.is_file():
            try:
                exports = json.loads(manifest.read_text(encoding="utf-8")).get("exports")
            except (OSError, ValueError):
                return None
            entry = exports.get(".") if isinstance(exports, dict) else exports
            while isinstance(entry, dict):
                entry = entry.get("import") or entry.get("default")
            return manifest.parent / (entry if isinstance(entry, str) else "dist/loader.mjs")
    return None


def child_argv(fmt: str, interpreter: str, request: dict[str, Any], fd: int) -> list[str]:
    """The child's command line: `PYTHON SCRIPT FD`, or `NODE [--import TSX] SCRIPT FD` for
    a LangGraph.js graph (a TypeScript one through the project's own tsx: exit 2 without)."""
    if request.get("runtime") != "node":
        return [interpreter, str(Path(__file__).with_name(RUNNERS[fmt].script)), str(fd)]
    script = str(Path(__file__).with_name(NODE_SCRIPT))
    file = str((request.get("agent") or {}).get("file") or "")
    if not file.endswith(TS_SUFFIXES):
        return [interpreter, script, str(fd)]
    loader = _tsx(str(request.get("project") or Path(file).parent))
    if loader is None:
        raise UsageError(
            f"{Path(file).name} is TypeScript: node runs it through the project's tsx, and "
            f"{request.get('project')} has none; install it there: npm install -D tsx"
        )
    return [interpreter, "--import", loader.as_uri(), script, str(fd)]


class ChildRun:
    """The child process running the user's agent; iterate for its events."""

    def __init__(self, fmt: str, python: str, request: dict[str, Any]) -> None:
        # what the user's code prints goes to our stderr; a stderr with no file behind it
        # (an in-process test runner's, the TUI's) gets it when the child is done
        self._spill: Any = None
        try:
            err: Any = sys.stderr.fileno()
            if err < 0:  # a stand-in's (the TUI's print capture says -1, which is subprocess.PIPE)
                raise ValueError(err)
        except (AttributeError, OSError, ValueError):
            import tempfile

            self._spill = err = tempfile.TemporaryFile()
        read_fd, write_fd = os.pipe()
        try:
            argv = child_argv(fmt, python, request, write_fd)
        except UsageError:
            os.close(read_fd)
            os.close(write_fd)
            raise
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=err, stderr=err, pass_fds=(write_fd,), close_fds=True
            )
        except OSError as exc:
            os.close(read_fd)
            os.close(write_fd)
            raise UsageError(f"cannot start {python}: {exc.strerror or exc}") from None
        os.close(write_fd)
        self.events = os.fdopen(read_fd, "r", encoding="utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
        self.proc.stdin.close()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for line in self.events:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                yield event

    def wait(self, timeout: float | None = None) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGKILL)
            return self.proc.wait()
        finally:
            self.events.close()
            if self._spill is not None:
                self._spill.seek(0)
                sys.stderr.write(self._spill.read().decode("utf-8", "replace"))
                self._spill.close()
                self._spill = None

    def interrupt(self) -> None:
        """Ctrl-C reached agentctl: make sure the child got it too (it may run in its
        own session when agentctl is driven by another program)."""
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGINT)
            except ProcessLookupError:
                pass


@dataclass
class ChildOutcome:
    """How a child ended: its last event that is not a checkpoint (or a "setup" event when
    it said nothing), its exit status, and whether Ctrl-C stopped it."""

    event: dict[str, Any]
    code: int
    interrupted: bool

    @property
    def kind(self) -> str:
        return "interrupted" if self.interrupted else str(self.event.get("event"))


def run_child(
    fmt: str, python: str, request: dict[str, Any], on_checkpoint: Any = None, on_start: Any = None
) -> ChildOutcome:
    """Run a child to its end, `on_checkpoint(event)` for each checkpoint (or item) it
    saves, as it comes. Ctrl-C meanwhile raises nothing here: the child stops the run (it
    gets the terminal's SIGINT too, and is sent one in case it runs in another session)
    and says what it saved; its events are read on to its end. `on_start(child)`: the
    ChildRun once started (a program that is not the main thread's, the TUI, stops it
    with `child.interrupt()`)."""
    child = ChildRun(fmt, python, request)
    if on_start is not None:
        on_start(child)
    last: dict[str, Any] = {"event": "setup", "message": f"{python} ended without a word"}
    interrupted = False

    def on_sigint(signum: int, frame: Any) -> None:
        nonlocal interrupted
        interrupted = True
        child.interrupt()

    try:
        previous = signal.signal(signal.SIGINT, on_sigint)
    except ValueError:  # not the main thread (an embedding program's): its own handling
        previous = None
    try:
        for event in child:
            if event.get("event") != "checkpoint":
                last = event
            elif on_checkpoint is not None:
                on_checkpoint(event)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        code = child.wait(10)
    # 130: the child's own handler; -SIGINT: the signal came before the child set one up
    # (Python still starting): stopped all the same, not "ended without a word"
    interrupted = interrupted or last.get("event") == "interrupted" or code in (130, -signal.SIGINT)
    if not interrupted and last.get("event") == "setup":
        raise UsageError(str(last.get("message")))
    return ChildOutcome(last, code, interrupted)
