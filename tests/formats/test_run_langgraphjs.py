"""`agentctl run` / `edit --agent` of a LangGraph.js graph: a child `node` process
(agentctl/runners/langgraph_child.mjs) runs the user's graph with LangGraph.js and its
saver as the user's project has them installed (here: a project written in tmp, its
node_modules the Node rig's). What it adds equals what LangGraph.js's own invoke /
updateState add on a copy of the database; undo gives the database back row for row."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from tests.formats.test_langgraph_writes import dump
from tests.support import noderig
from tests.support.noderig import served
from tests.support.rig import REPO, pg_execute, with_search_path
from tests.support.sampledb import cli, cli_json

node_modules = noderig.node_modules  # the fixture: npm ci once, from tests/node's lock file

GRAPH = textwrap.dedent("""
    import { StateGraph, Annotation, START, END, interrupt } from "@langchain/langgraph";

    const State = Annotation.Root({
      log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
      city: Annotation(),
      answer: Annotation(),
    });

    function plan(s) {
      if (s.city === "boom") throw new Error("no such city: " + s.city);
      return { log: ["plan " + s.city], city: s.city.toUpperCase() };
    }
    function ask(s) {
      const answer = interrupt({ question: "go to " + s.city + "?" });
      return { log: ["ask " + answer], answer };
    }
    function book(s) {
      return { log: ["book " + s.city + " " + s.answer] };
    }

    export const graph = new StateGraph(State)
      .addNode("plan", plan).addNode("ask", ask).addNode("book", book)
      .addEdge(START, "plan").addEdge("plan", "ask").addEdge("ask", "book").addEdge("book", END)
      .compile();

    // what the run was given besides its input: the Runtime context, a configurable value
    const Seen = Annotation.Root({ seen: Annotation() });
    export const given = new StateGraph(Seen)
      .addNode("look", (s, config) => ({ seen: { context: config.context ?? null, user: config.configurable?.user_id ?? null } }))
      .addEdge(START, "look").addEdge("look", END)
      .compile();

    // a loop of slow steps (Ctrl-C): not compiled, agentctl compiles it
    const Loop = Annotation.Root({ n: Annotation({ reducer: (a, b) => b, default: () => 0 }) });
    export const slow = new StateGraph(Loop)
      .addNode("tick", async (s) => { await new Promise((r) => setTimeout(r, 200)); return { n: s.n + 1 }; })
      .addEdge(START, "tick").addConditionalEdges("tick", (s) => (s.n < 100 ? "tick" : END));
""")

# a SQLite file, or a Postgres DSN whose search_path is the schema: LangGraph.js's saver on it
SAVER = textwrap.dedent("""
    async function openSaver(target) {
      if (!target.includes("://")) {
        const { SqliteSaver } = await import("@langchain/langgraph-checkpoint-sqlite");
        return SqliteSaver.fromConnString(target);
      }
      const { PostgresSaver } = await import("@langchain/langgraph-checkpoint-postgres");
      const url = new URL(target);
      const schema = url.searchParams.get("search_path");
      url.searchParams.delete("search_path");
      const saver = PostgresSaver.fromConnString(url.toString(), { schema });
      await saver.setup();
      return saver;
    }
    // nothing held open between calls (the node server lives on): agentctl's writes must not wait
    async function closeSaver(saver) {
      if (saver.end) await saver.end();
      else saver.db.close();
    }
""")

# LangGraph.js's own view of a thread: getStateHistory, oldest first, without ids and times
HISTORY = (
    textwrap.dedent("""
    import { pathToFileURL } from "node:url";
    export async function main([file, db, thread]) {
      const { graph } = await import(pathToFileURL(file).href);
      const saver = graph.checkpointer = await openSaver(db);
      try {
        const out = [];
        for await (const s of graph.getStateHistory({ configurable: { thread_id: thread } })) {
          out.unshift({ step: s.metadata.step, source: s.metadata.source, next: s.next, values: s.values,
                        id: s.config.configurable.checkpoint_id });
        }
        return out;
      } finally {
        await closeSaver(saver);
      }
    }
""")
    + SAVER
)

# LangGraph.js's own invoke / updateState on a database: the reference run
INVOKE = (
    textwrap.dedent("""
    import { pathToFileURL } from "node:url";
    import { Command } from "@langchain/langgraph";
    export async function main([file, db, thread, how, value, at]) {
      const { graph } = await import(pathToFileURL(file).href);
      const saver = graph.checkpointer = await openSaver(db);
      try {
        const config = { configurable: { thread_id: thread, ...(at ? { checkpoint_id: at } : {}) } };
        if (how === "input") await graph.invoke(JSON.parse(value), config);
        else if (how === "resume") await graph.invoke(new Command({ resume: JSON.parse(value) }), config);
        else if (how === "update") await graph.updateState(config, JSON.parse(value));
        else await graph.invoke(null, config);
      } finally {
        await closeSaver(saver);
      }
    }
""")
    + SAVER
)


@pytest.fixture
def project(tmp_path, node_modules):
    """A LangGraph.js project: graph.mjs, langgraph.json (node_version), node_modules."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "graph.mjs").write_text(GRAPH)
    (proj / "langgraph.json").write_text(
        json.dumps({"node_version": "20", "graphs": {"trip": "./graph.mjs:graph"}})
    )
    (proj / "node_modules").symlink_to(node_modules)
    return proj


def _agentctl(db, *args, cwd=REPO, env=None):
    return subprocess.run(
        [sys.executable, "-m", "agentctl", "--db", str(db), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def history(project, db, thread="t"):
    return served(HISTORY, str(project / "graph.mjs"), str(db), thread)


def invoke(project, db, how, value=None, at=None, thread="t"):
    served(INVOKE, str(project / "graph.mjs"), str(db), thread, how, json.dumps(value), *([at] if at else []))


def same(h):
    return [{k: v for k, v in s.items() if k != "id"} for s in h]


@pytest.fixture(params=["sqlite", "postgres"])
def two_dbs(request, tmp_path):
    """(the database agentctl runs on, the reference's): two SQLite files, or two fresh
    schemas of the rig's Postgres (search_path in the DSN; the second made by the saver)."""
    if request.param == "sqlite":
        yield tmp_path / "run.db", tmp_path / "ref.db"
        return
    url = request.getfixturevalue("pg_dsn")
    ref_schema = "r_" + os.urandom(6).hex()
    base = request.getfixturevalue("pg_base_dsn")
    yield url, with_search_path(base, ref_schema)
    pg_execute(base, f"DROP SCHEMA IF EXISTS {ref_schema} CASCADE")


def test_run_and_resume_add_what_langgraphjs_invoke_adds(project, two_dbs):
    db, ref = two_dbs
    # a new database: LangGraph.js's saver makes its tables; the run stops at interrupt()
    r = _agentctl(db, "run", "t", "--agent", f"{project / 'graph.mjs'}:graph", "--input", '{"city": "paris"}')
    assert r.returncode == 0, r.stderr
    assert "created LangGraph.js's checkpoint tables" in r.stderr
    lines = r.stdout.splitlines()
    assert (
        len(lines) == 4 and lines[2].split()[:2] == ["step", "1"] and "plan  changed: log, city" in lines[2]
    )
    assert 'waiting at ask; interrupt: {"question": "go to PARIS?"}' in lines[-1]
    invoke(project, ref, "input", {"city": "paris"})
    assert same(history(project, db)) == same(history(project, ref)) and len(history(project, db)) == 3

    # --resume: Command({resume}); the graph found through langgraph.json (node_version)
    r = _agentctl(db, "run", "t", "--resume", '"yes"', "--json", cwd=project)
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert [e["event"] for e in events] == ["checkpoint", "checkpoint", "done"]
    assert [e["nodes"] for e in events[:2]] == [["ask"], ["book"]] and events[-1]["checkpoints"] == 2
    invoke(project, ref, "resume", "yes")
    h = history(project, db)
    assert same(h) == same(history(project, ref))
    assert h[-1]["values"] == {
        "log": ["plan paris", "ask yes", "book PARIS yes"],
        "city": "PARIS",
        "answer": "yes",
    }
    assert [e["id"] for e in events[:2]] == [s["id"] for s in h[-2:]]

    # undo, twice: the thread's rows go, every one
    for _ in range(2):
        assert cli(str(db), "undo").exit_code == 0
    assert history(project, db) == [] and cli_json(str(db), "threads", "list") == []


def test_from_forks_as_langgraphjs_replay_does_and_undo_takes_back_exactly_the_run(project, tmp_path):
    db, ref = tmp_path / "run.db", tmp_path / "ref.db"
    invoke(project, db, "input", {"city": "rome"})
    invoke(project, db, "resume", "no")
    at = history(project, db)[1]["id"]  # step 0: plan next
    shutil.copyfile(db, ref)
    before = dump(str(db), None)

    r = _agentctl(db, "run", "t", "--from", at, "--agent", f"{project / 'graph.mjs'}:graph")
    assert r.returncode == 0, r.stderr
    invoke(project, ref, "none", at=at)
    assert same(history(project, db)) == same(history(project, ref))
    assert history(project, db)[-1]["next"] == ["ask"]
    assert cli_json(str(db), "oplog")[0]["summary"].startswith(f"run t from {at} with ")

    r = cli(str(db), "undo")
    assert r.exit_code == 0, r.stderr
    assert dump(str(db), None) == before


def test_context_and_configurable_reach_the_js_graph(project, tmp_path):
    db = tmp_path / "run.db"
    r = _agentctl(
        db,
        "run",
        "t",
        "--agent",
        f"{project / 'graph.mjs'}:given",
        "--input",
        "{}",
        "--context",
        '{"model": "m1"}',
        "--configurable",
        'user_id="ada"',
    )
    assert r.returncode == 0, r.stderr
    assert cli_json(str(db), "show", "t")["state"]["seen"] == {"context": {"model": "m1"}, "user": "ada"}


def test_an_exception_in_the_users_node_shows_the_users_frames(project, tmp_path):
    db = tmp_path / "run.db"
    r = _agentctl(db, "run", "t", "--agent", f"{project / 'graph.mjs'}:graph", "--input", '{"city": "boom"}')
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "your agent raised Error in node 'plan': no such city: boom" in r.stderr
    assert f'File "{project / "graph.mjs"}", line 11, in plan' in r.stderr
    assert 'throw new Error("no such city: " + s.city);' in r.stderr
    assert "node_modules" not in r.stderr and "node:internal" not in r.stderr
    assert "the run saved 2 checkpoint(s) before the error" in r.stderr


def test_edit_through_the_js_graph_writes_what_updatestate_writes(project, tmp_path):
    db, ref = tmp_path / "run.db", tmp_path / "ref.db"
    invoke(project, db, "input", {"city": "oslo"})
    shutil.copyfile(db, ref)
    before = dump(str(db), None)
    r = _agentctl(db, "edit", "t", "--set", 'city="BERGEN"', "--set", 'log=["x"]', "--yes", cwd=project)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("edited t: new checkpoint ")
    # the reducer channel is overwritten, not appended to
    invoke(project, ref, "update", {"city": "BERGEN"})
    expect = history(project, ref)[-1]
    got = history(project, db)[-1]
    assert got["values"] == {**expect["values"], "log": ["x"]} and got["source"] == "update"
    assert got["next"] == expect["next"] == ["ask"]
    assert cli(str(db), "undo").exit_code == 0
    assert dump(str(db), None) == before


def without_tsx(project) -> None:
    """The project's node_modules without tsx (the rig's has it): a link to each other package."""
    rig = (project / "node_modules").resolve()
    (project / "node_modules").unlink()
    (project / "node_modules").mkdir()
    for entry in rig.iterdir():
        if entry.name not in ("tsx", ".bin"):
            (project / "node_modules" / entry.name).symlink_to(entry)


def test_typescript_without_tsx_and_a_missing_node_are_one_line_exit_2(project, tmp_path):
    db = tmp_path / "run.db"
    invoke(project, db, "input", {"city": "lima"})
    before = dump(str(db), None)
    without_tsx(project)
    shutil.copyfile(project / "graph.mjs", project / "agent.ts")
    for args, env, words in [
        (["--agent", f"{project / 'agent.ts'}:graph"], None, "npm install -D tsx"),
        (
            ["--agent", f"{project / 'graph.mjs'}:graph", "--node", "/nonexistent"],
            None,
            "--node /nonexistent: no such program",
        ),
        (
            ["--agent", f"{project / 'graph.mjs'}:graph"],
            {"AGENTCTL_NODE": "/nonexistent/node"},
            "AGENTCTL_NODE=/nonexistent/node: no such program",
        ),
    ]:
        r = _agentctl(db, "run", "t", *args, env=env)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr.startswith("agentctl: ") and words in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert dump(str(db), None) == before and cli_json(str(db), "oplog") == []


#: the graph in TypeScript (types node cannot run alone), as src/agent.ts of a project
TS_GRAPH = GRAPH.replace(
    "function plan(s) {", "type Trip = { city: string };\nfunction plan(s: Trip): Record<string, unknown> {"
)


def test_a_typescript_graph_of_langgraph_json_runs_and_edits_through_the_projects_tsx(project, tmp_path):
    """A langgraph.json entry `./src/agent.ts:graph`: `run` and `edit --agent` run it in
    node through the project's own tsx (the rig's, tests/node/package.json), on the node
    named by AGENTCTL_NODE and by --node (a good one, seen to run): what they add is what
    LangGraph.js's own resume and updateState add on a copy; each undoes row for row."""
    (project / "src").mkdir()
    (project / "src" / "agent.ts").write_text(TS_GRAPH)
    (project / "langgraph.json").write_text(
        json.dumps({"node_version": "20", "graphs": {"trip": "./src/agent.ts:graph"}})
    )
    assert (project / "node_modules" / "tsx" / "package.json").is_file()
    seen = tmp_path / "node-ran"
    good = tmp_path / "bin" / "my-node"
    good.parent.mkdir()
    good.write_text(f'#!/bin/sh\necho "$@" >> {seen}\nexec {shutil.which("node")} "$@"\n')
    good.chmod(0o755)
    db, ref, ref_edit = tmp_path / "run.db", tmp_path / "ref.db", tmp_path / "ref-edit.db"
    invoke(project, db, "input", {"city": "oslo"})
    shutil.copyfile(db, ref)
    shutil.copyfile(db, ref_edit)
    before = dump(str(db), None)

    r = _agentctl(db, "run", "t", "--resume", '"yes"', cwd=project, env={"AGENTCTL_NODE": str(good)})
    assert r.returncode == 0, r.stderr
    assert "tsx" in seen.read_text()  # the good node ran, with the project's tsx
    invoke(project, ref, "resume", "yes")
    assert same(history(project, db)) == same(history(project, ref))
    assert history(project, db)[-1]["values"]["log"] == ["plan oslo", "ask yes", "book OSLO yes"]
    assert cli(str(db), "undo").exit_code == 0 and dump(str(db), None) == before

    seen.unlink()
    r = _agentctl(
        db,
        "edit",
        "t",
        "--set",
        'city="BERGEN"',
        "--agent",
        "trip",
        "--node",
        str(good),
        "--yes",
        cwd=project,
    )
    assert r.returncode == 0, r.stderr
    assert "tsx" in seen.read_text()
    invoke(project, ref_edit, "update", {"city": "BERGEN"})
    assert same(history(project, db)) == same(history(project, ref_edit))
    assert cli(str(db), "undo").exit_code == 0 and dump(str(db), None) == before


def test_ctrl_c_stops_the_js_run_and_what_it_saved_stays_undoable(project, tmp_path):
    db = tmp_path / "run.db"

    def saved() -> int:
        try:
            return sqlite3.connect(db).execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
        except sqlite3.Error:
            return 0

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentctl",
            "--db",
            str(db),
            "run",
            "t",
            "--agent",
            f"{project / 'graph.mjs'}:slow",
            "--input",
            "{}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while saved() < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (out, err)
    assert "interrupted: the run saved" in err and "agentctl undo" in err
    n = saved()
    assert 4 <= n < 100 and len(out.splitlines()) == n
    assert cli(str(db), "undo").exit_code == 0
    assert saved() == 0


def test_the_readme_story_plays_for_the_langgraphjs_project(tmp_path, node_modules):
    """sample_db/story-js/story.sh (after `npm install` there: here the rig's packages):
    the run fails in `book`, the edit through updateState fixes plan.next_city, the run
    books, compare finds where the runs parted, two undos give back the failed run."""
    project = tmp_path / "story-js"
    for name in ("story", "story-js"):  # story-js/story.sh plays story/story.sh's commands
        shutil.copytree(
            REPO / "sample_db" / name,
            tmp_path / name,
            ignore=shutil.ignore_patterns("story.db*", "node_modules", "package-lock.json"),
        )
    (project / "node_modules").symlink_to(node_modules)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "agentctl").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m agentctl "$@"\n')
    (bin_dir / "agentctl").chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    r = subprocess.run(
        ["sh", str(project / "story.sh")], capture_output=True, text=True, env=env, timeout=300
    )
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "your agent raised Error in node 'book': no flights to Atlantis" in out
    assert f'File "{project / "graph.mjs"}", line 31, in book' in out
    assert "edited trip: new checkpoint " in out and "ran trip: 2 new checkpoint(s)" in out
    assert 'state\t/plan/next_city\tchanged\t"Atlantis"\t"Paris"' in out
    assert out.count("undid operation") == 2
    log = cli_json(str(project / "story.db"), "log", "trip")
    assert [c["step"] for c in log] == [2, 1, 0, -1]
