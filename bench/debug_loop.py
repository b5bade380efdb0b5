"""The debugger's loop, timed (issue 21's targets): `run` of a 10-step LangGraph graph
against the same graph's invoke in a bare `python -c`; `edit` of a LangGraph checkpoint
against its floor (the child's interpreter importing LangGraph and the graph); `compare`
of two 10,000-step runs against reading the same checkpoints through the store.

    python bench/debug_loop.py [--runs 5] [--steps 10000] [--keep DIR] [--only-compare] [--before CHECKOUT]
    python bench/debug_loop.py --edit-1m [--runs 5]    # edit on the 1M databases (below)
    python bench/debug_loop.py --only-async [--runs 5] # run of an async graph (below)
    python bench/debug_loop.py --only-js [--runs 5] [--node-modules DIR]   # a LangGraph.js graph (below)
    python bench/debug_loop.py --only-agno [--runs 5]  # run of an Agno agent (below)

`--only-async` (also part of the default): `run` of an async 10-step graph with a Runtime
context and a configurable value (tests/fixtures/apps/asyncctx, context limit 10: the
child goes through astream and AsyncSqliteSaver) against the same graph's `ainvoke` with
AsyncSqliteSaver in a bare `python -c`, interleaved; target <= 1.3x + 0.15 s.

`--only-js`: `run` of a 10-step LangGraph.js graph (graph.mjs in a project whose
node_modules is --node-modules, default the test rig's, tests/support/noderig.py: the
child is node running agentctl/runners/langgraph_child.mjs with SqliteSaver) against
`node` running a script that imports the same graph and invokes it with SqliteSaver,
interleaved; target <= 1.3x + 0.15 s.

`--only-agno` (also part of the default): `run` of an Agno agent (a scripted model, one
tool call: agentctl/runners/agno_child.py with agno's SqliteDb) on a session of an agno 3
file against a bare `python -c` running the same agent's `run` with SqliteDb, interleaved;
target <= 1.3x + 0.15 s. Needs agno (the test extras).

`--edit-1m`: `edit REF --set K=V --yes` (then `undo`, so the database is as before) on the
1M AgentOS database (`make_db.py sqlite bench/data/bench.db`) and the 1M LangGraph one
(`make_langgraph_db.py bench/data/langgraph.db`, edited without the graph: agentctl writes
the update checkpoint), REF from their .meta.json files, against `show REF --json` and the
`sqlite3` CLI reading REF's row; `--agentos-db` / `--langgraph-db` name other files.

Whole processes, interleaved, medians. Needs LangGraph (the test extras). Makes its
databases in a temporary directory (about 400 MB and 30 s for --steps 10000: make_db needs ten times the steps in rows).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

GRAPH = textwrap.dedent("""
    import operator
    from typing import Annotated, TypedDict

    from langgraph.graph import END, START, StateGraph


    class S(TypedDict):
        n: int
        log: Annotated[list, operator.add]


    g = StateGraph(S)
    g.add_node("step", lambda s: {"n": s["n"] + 1, "log": [s["n"]]})
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < 10 else END, ["step", END])
    graph = g
""")

BARE = textwrap.dedent("""
    import sqlite3, sys
    sys.path.insert(0, {dir!r})
    from langgraph.checkpoint.sqlite import SqliteSaver
    from ten import graph
    g = graph.compile(checkpointer=SqliteSaver(sqlite3.connect({db!r}, check_same_thread=False)))
    g.invoke({{"n": 0, "log": []}}, {{"configurable": {{"thread_id": {thread!r}}}}})
""")

BARE_ASYNC = textwrap.dedent("""
    import asyncio, sys
    sys.path.insert(0, {dir!r})
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from graph import Context, graph


    async def main():
        async with AsyncSqliteSaver.from_conn_string({db!r}) as saver:
            g = graph.copy(update={{"checkpointer": saver}})
            await g.ainvoke({{"n": 0}}, {{"configurable": {{"thread_id": {thread!r}, "user_id": "ada"}}}},
                            context=Context(limit=10))


    asyncio.run(main())
""")

ASYNC_APP = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "apps" / "asyncctx"


def async_run_bench(work: Path, runs: int) -> None:
    """`run` of the async 10-step graph against its ainvoke in a bare interpreter."""
    db = str(work / "async.db")
    from langgraph.checkpoint.sqlite import SqliteSaver

    SqliteSaver(sqlite3.connect(db)).setup()
    ours, bare = [], []
    for i in range(runs):
        ours.append(
            timed(
                agentctl(
                    db,
                    "run",
                    f"a{i}",
                    "--agent",
                    f"{ASYNC_APP / 'graph.py'}:graph",
                    "--input",
                    json.dumps({"n": 0}),
                    "--context",
                    json.dumps({"limit": 10}),
                    "--configurable",
                    'user_id="ada"',
                )
            )
        )
        bare.append(
            timed([sys.executable, "-c", BARE_ASYNC.format(dir=str(ASYNC_APP), db=db, thread=f"b{i}")])
        )
    o, b = statistics.median(ours), statistics.median(bare)
    print(
        f"run (async 10-step graph, context): agentctl {o:.3f} s, bare python -c ainvoke {b:.3f} s: "
        f"{o / b:.2f}x; target <= 1.3x + 0.15 s = {1.3 * b + 0.15:.3f} s: {'met' if o <= 1.3 * b + 0.15 else 'NOT met'}"
        f" (agentctl {min(ours):.3f}-{max(ours):.3f} s, ainvoke {min(bare):.3f}-{max(bare):.3f} s)"
    )


JS_GRAPH = textwrap.dedent("""
    import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
    const S = Annotation.Root({
      n: Annotation({ reducer: (a, b) => b, default: () => 0 }),
      log: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
    });
    export const graph = new StateGraph(S)
      .addNode("step", (s) => ({ n: s.n + 1, log: [s.n] }))
      .addEdge(START, "step")
      .addConditionalEdges("step", (s) => (s.n < 10 ? "step" : END))
      .compile();
""")

JS_BARE = textwrap.dedent("""
    import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
    import { graph } from "./graph.mjs";
    const [db, thread] = process.argv.slice(2);
    graph.checkpointer = SqliteSaver.fromConnString(db);
    await graph.invoke({ n: 0, log: [] }, { configurable: { thread_id: thread } });
""")


def js_run_bench(work: Path, runs: int, node_modules: str | None) -> None:
    """`run` of a 10-step LangGraph.js graph against node invoking it directly."""
    if node_modules is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from tests.support.noderig import install

        node_modules = str(install() / "node_modules")  # npm ci once, as the tests do
    project = work / "js"
    project.mkdir(exist_ok=True)
    (project / "graph.mjs").write_text(JS_GRAPH)
    (project / "bare.mjs").write_text(JS_BARE)
    if not (project / "node_modules").exists():
        (project / "node_modules").symlink_to(node_modules)
    db = str(work / "js.db")
    timed(
        agentctl(db, "run", "warm", "--agent", f"{project / 'graph.mjs'}:graph", "--input", "{}")
    )  # + tables
    ours, bare = [], []
    for i in range(runs):
        ours.append(
            timed(
                agentctl(
                    db,
                    "run",
                    f"a{i}",
                    "--agent",
                    f"{project / 'graph.mjs'}:graph",
                    "--input",
                    json.dumps({"n": 0, "log": []}),
                )
            )
        )
        bare.append(timed(["node", str(project / "bare.mjs"), db, f"b{i}"]))
    o, b = statistics.median(ours), statistics.median(bare)
    print(
        f"run (LangGraph.js 10-step graph): agentctl {o:.3f} s, bare node invoke {b:.3f} s: "
        f"{o / b:.2f}x; target <= 1.3x + 0.15 s = {1.3 * b + 0.15:.3f} s: {'met' if o <= 1.3 * b + 0.15 else 'NOT met'}"
        f" (agentctl {min(ours):.3f}-{max(ours):.3f} s, node {min(bare):.3f}-{max(bare):.3f} s)"
    )


AGNO_AGENT = textwrap.dedent('''
    import sys

    sys.path.insert(0, {root!r})
    from agno.agent import Agent

    from tests.scripts.agno_model import Scripted


    def count(run_context=None) -> str:
        """Add one to the counter in the session state."""
        run_context.session_state["count"] = run_context.session_state.get("count", 0) + 1
        return "count is %d" % run_context.session_state["count"]


    agent = Agent(model=Scripted(script=[{{"tool": "count"}}, "counted"]), id="chat", name="Chat", tools=[count],
                  add_history_to_context=True, session_state={{"count": 0}})
''')

AGNO_BARE = textwrap.dedent("""
    import sys
    sys.path.insert(0, {dir!r})
    from agno.db.sqlite import SqliteDb
    from agno_agent import agent
    agent.db = SqliteDb(db_file={db!r})
    agent.run("hello", session_id={thread!r})
""")


def agno_run_bench(work: Path, runs: int) -> None:
    """`run` of an Agno agent (one tool call) against its `run` in a bare interpreter."""
    root = str(Path(__file__).resolve().parent.parent)
    (work / "agno_agent.py").write_text(AGNO_AGENT.format(root=root))
    db = str(work / "agno.db")
    env = dict(os.environ, AGNO_TELEMETRY="false")
    # agno makes its tables (the first run, not timed)
    subprocess.run(
        [sys.executable, "-c", AGNO_BARE.format(dir=str(work), db=db, thread="warm")], check=True, env=env
    )
    ours, bare = [], []
    for i in range(runs):
        ours.append(
            timed(
                agentctl(
                    db, "run", f"a{i}", "--agent", f"{work / 'agno_agent.py'}:agent", "--input", "hello"
                ),
                env=env,
            )
        )
        bare.append(
            timed([sys.executable, "-c", AGNO_BARE.format(dir=str(work), db=db, thread=f"b{i}")], env=env)
        )
    o, b = statistics.median(ours), statistics.median(bare)
    print(
        f"run (Agno agent, one tool call): agentctl {o:.3f} s, bare python -c agent.run {b:.3f} s: "
        f"{o / b:.2f}x; target <= 1.3x + 0.15 s = {1.3 * b + 0.15:.3f} s: {'met' if o <= 1.3 * b + 0.15 else 'NOT met'}"
        f" (agentctl {min(ours):.3f}-{max(ours):.3f} s, agent.run {min(bare):.3f}-{max(bare):.3f} s; "
        f"load {os.getloadavg()[0]:.1f})"
    )


FLOOR_EDIT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {dir!r})
    from langgraph.checkpoint.sqlite import SqliteSaver
    from ten import graph
    graph.compile()
""")


def timed(cmd: list[str], **kw) -> float:
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:6])}... failed: {r.stderr.strip()[-400:]}")
    return time.perf_counter() - t


def agentctl(db: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "agentctl", "--db", db, *args]


def make_long_runs(path: str, steps: int) -> None:
    """An AgentOS database with two runs of `steps` checkpoints each that part at 90%."""

    subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("make_db.py")),
            "sqlite",
            path,
            "--threads",
            "10",
            "--checkpoints",
            str(steps * 10),
            "--long-steps",
            str(steps),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    conn = sqlite3.connect(path)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(checkpoints)") if r[1] != "id"]
    select = ", ".join(
        "'copy-' || checkpoint_id"
        if c == "checkpoint_id"
        else "CASE WHEN parent_id IS NULL THEN NULL ELSE 'copy-' || parent_id END"
        if c == "parent_id"
        else "'long-copy'"
        if c == "thread_id"
        else f"CASE WHEN step >= {int(steps * 0.9)} THEN json_set(state_blob, '$.edited', 1) ELSE state_blob END"
        if c == "state_blob"
        else c
        for c in cols
    )
    conn.execute(
        f"INSERT INTO checkpoints ({', '.join(cols)}) SELECT {select} FROM checkpoints "
        "WHERE thread_id = 'long-thread'"
    )
    conn.commit()
    conn.close()


def meta_of(db: str) -> dict:
    for path in (Path(db).with_suffix(".meta.json"), Path(db + ".meta.json")):
        if path.exists():
            return json.loads(path.read_text())
    raise SystemExit(
        f"{db}: no .meta.json next to it (made by bench/make_db.py / make_langgraph_db.py --meta)"
    )


def timed_cpu(cmd: list[str], **kw) -> tuple[float, float]:
    """(wall, user + system CPU) seconds of a process: on a shared machine the CPU time
    is what the process itself costs, the wall time also waits for the other jobs."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = timed(cmd, **kw)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def edit_1m(runs: int, agentos_db: str, langgraph_db: str) -> None:
    """`edit` (then `undo`) on the 1M databases, whole processes, against reading REF."""
    cases = []
    if os.path.exists(agentos_db):
        ref = meta_of(agentos_db)["sample_checkpoint"]
        cases.append(
            (
                "AgentOS",
                agentos_db,
                ref,
                ["--set", 'status="done"'],
                f"SELECT state_blob FROM checkpoints WHERE checkpoint_id = '{ref}'",
            )
        )
    if os.path.exists(langgraph_db):
        m = meta_of(langgraph_db)
        ref, thread = m["sample_checkpoint"], m["sample_thread"]
        # the worst case of a lookup by id: a checkpoint of the thread that sorts last in
        # the key (agentctl's scan of the key's index stops at the first match)
        last = (
            sqlite3.connect(langgraph_db)
            .execute(
                "SELECT checkpoint_id FROM checkpoints WHERE thread_id = (SELECT MAX(thread_id) FROM checkpoints) "
                "AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1"
            )
            .fetchone()[0]
        )
        for name, cid in (("LangGraph, REF an id", ref), ("LangGraph, REF an id in the last thread", last)):
            # no index on checkpoint_id alone: its thread comes from a scan of the key's index
            cases.append(
                (
                    name,
                    langgraph_db,
                    cid,
                    ["--set", "turns=3"],
                    "SELECT checkpoint FROM checkpoints WHERE (thread_id, checkpoint_ns, checkpoint_id) IN "
                    f"(SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints WHERE checkpoint_id = '{cid}')",
                )
            )
        cases.append(
            (
                "LangGraph, REF a thread (its head)",
                langgraph_db,
                thread,
                ["--set", "turns=3"],
                f"SELECT checkpoint FROM checkpoints WHERE thread_id = '{thread}' AND checkpoint_ns = '' "
                "ORDER BY checkpoint_id DESC LIMIT 1",
            )
        )
    if not cases:
        raise SystemExit(f"neither {agentos_db} nor {langgraph_db} exists (see bench/README.md)")
    here = Path(__file__).resolve().parent

    def med(pairs: list[tuple[float, float]]) -> str:
        return (
            f"{statistics.median(p[0] for p in pairs):.3f} s "
            f"(CPU {statistics.median(p[1] for p in pairs):.3f} s)"
        )

    start = [timed_cpu(agentctl(cases[0][1], "--version")) for _ in range(runs)]
    print(f"the process floor: agentctl --version {med(start)}")
    for name, db, ref, sets, sql in cases:
        edits, undos, shows, reads, starts = [], [], [], [], []
        for _ in range(runs):
            edits.append(
                timed_cpu(agentctl(db, "edit", ref, *sets, "--yes"), cwd=here)
            )  # no langgraph.json there
            undos.append(timed_cpu(agentctl(db, "undo")))
            shows.append(timed_cpu(agentctl(db, "show", ref, "--json")))
            reads.append(timed_cpu(["sqlite3", db, sql]))
            starts.append(timed_cpu(agentctl(db, "--version")))
        e = statistics.median(p[0] for p in edits)
        floor = statistics.median(p[0] for p in reads) + statistics.median(p[0] for p in starts)
        print(
            f"edit ({name}, 1M): {med(edits)}; undo {med(undos)}; show REF --json {med(shows)}; "
            f"sqlite3 reading the row {med(reads)}; floor (that read + agentctl --version {med(starts)}) "
            f"{floor:.3f} s: edit {e / floor:.2f}x the floor; target < 0.3 s: {'met' if e < 0.3 else 'NOT met'}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--keep", help="make the databases in DIR (kept) instead of a temporary one")
    ap.add_argument("--edit-1m", action="store_true", help="only edit on the 1M databases")
    ap.add_argument("--agentos-db", default="bench/data/bench.db")
    ap.add_argument("--langgraph-db", default="bench/data/langgraph.db")
    ap.add_argument(
        "--before",
        metavar="CHECKOUT",
        help="also time compare with another checkout's agentctl "
        "(its root on PYTHONPATH), interleaved: the before of a change",
    )
    ap.add_argument("--only-compare", action="store_true", help="time compare only")
    ap.add_argument("--only-async", action="store_true", help="time the async graph's run only")
    ap.add_argument("--only-js", action="store_true", help="time the LangGraph.js graph's run only")
    ap.add_argument("--only-agno", action="store_true", help="time the Agno agent's run only")
    ap.add_argument("--node-modules", metavar="DIR", help="LangGraph.js's packages (default: the test rig's)")
    args = ap.parse_args()
    if args.edit_1m:
        edit_1m(args.runs, os.path.abspath(args.agentos_db), os.path.abspath(args.langgraph_db))
        return
    work = Path(args.keep or tempfile.mkdtemp(prefix="agentctl-loop-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.only_async:
        return async_run_bench(work, args.runs)
    if args.only_js:
        return js_run_bench(work, args.runs, args.node_modules)
    if args.only_agno:
        return agno_run_bench(work, args.runs)
    if args.only_compare:
        long_db = str(work / "long.db")
        if not os.path.exists(long_db):
            make_long_runs(long_db, args.steps)
        return compare_bench(long_db, args.steps, args.runs, args.before)
    (work / "ten.py").write_text(GRAPH)
    db = str(work / "ten.db")
    from langgraph.checkpoint.sqlite import SqliteSaver

    SqliteSaver(sqlite3.connect(db)).setup()
    ours, bare = [], []
    for i in range(args.runs):
        ours.append(
            timed(
                agentctl(
                    db,
                    "run",
                    f"a{i}",
                    "--agent",
                    str(work / "ten.py") + ":graph",
                    "--input",
                    json.dumps({"n": 0, "log": []}),
                )
            )
        )
        bare.append(timed([sys.executable, "-c", BARE.format(dir=str(work), db=db, thread=f"b{i}")]))
    o, b = statistics.median(ours), statistics.median(bare)
    print(
        f"run (10-step graph): agentctl {o:.3f} s, bare python -c invoke {b:.3f} s: "
        f"{o / b:.2f}x; target <= 1.3x + 0.15 s = {1.3 * b + 0.15:.3f} s: {'met' if o <= 1.3 * b + 0.15 else 'NOT met'}"
    )

    async_run_bench(work, args.runs)
    agno_run_bench(work, args.runs)

    edits, floors = [], []
    for i in range(args.runs):
        edits.append(
            timed(
                agentctl(
                    db, "edit", f"a{i}", "--set", "n=3", "--agent", str(work / "ten.py") + ":graph", "--yes"
                )
            )
        )
        floors.append(timed([sys.executable, "-c", FLOOR_EDIT.format(dir=str(work))]))
    e, f = statistics.median(edits), statistics.median(floors)
    print(
        f"edit (LangGraph, through the user's graph): {e:.3f} s; floor (python importing LangGraph and "
        f"the graph, nothing else) {f:.3f} s: {e / f:.2f}x the floor; target < 0.3 s: "
        f"{'met' if e < 0.3 else 'under the floor' if f >= 0.3 else 'NOT met'}"
    )

    long_db = str(work / "long.db")
    if not os.path.exists(long_db):
        make_long_runs(long_db, args.steps)
    compare_bench(long_db, args.steps, args.runs, args.before)


# The floor of `compare`: a bare interpreter reading, with the sqlite3 module, the rows
# compare needs (both runs' parent links, messages and state texts), decoding nothing.
FLOOR_COMPARE = textwrap.dedent("""
    import sqlite3
    c = sqlite3.connect({db!r})
    for t in ("long-thread", "long-copy"):
        c.execute("SELECT checkpoint_id, parent_id, step, messages_blob, state_blob "
                  "FROM checkpoints WHERE thread_id = ?", (t,)).fetchall()
""")


def compare_bench(long_db: str, steps: int, runs: int, before: str | None) -> None:
    """compare of the two runs (this checkout, and `before`'s when given), its fixed cost
    (a checkpoint compared with itself: start, imports, open) and the floor above."""
    root = (
        sqlite3.connect(long_db)
        .execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'long-thread' AND parent_id IS NULL"
        )
        .fetchone()[0]
    )
    # `python -m` puts the working directory first on sys.path: each checkout runs from its root
    here = str(Path(__file__).resolve().parent.parent)
    env_here = {**os.environ, "PYTHONPATH": here}
    env_before = {**os.environ, "PYTHONPATH": before} if before else None
    cmp_t: list[tuple[float, float]] = []
    before_t: list[tuple[float, float]] = []
    fixed_t: list[tuple[float, float]] = []
    floor_t: list[tuple[float, float]] = []
    for _ in range(runs):
        cmp_t.append(
            timed_cpu(
                agentctl(long_db, "compare", "long-thread", "long-copy", "--json"), env=env_here, cwd=here
            )
        )
        if env_before:
            before_t.append(
                timed_cpu(
                    agentctl(long_db, "compare", "long-thread", "long-copy", "--json"),
                    env=env_before,
                    cwd=before,
                )
            )
        fixed_t.append(timed_cpu(agentctl(long_db, "compare", root, root, "--json"), env=env_here, cwd=here))
        floor_t.append(timed_cpu([sys.executable, "-c", FLOOR_COMPARE.format(db=long_db)]))

    def med(pairs: list[tuple[float, float]]) -> str:
        return (
            f"{statistics.median(p[0] for p in pairs):.3f} s "
            f"(CPU {statistics.median(p[1] for p in pairs):.3f} s)"
        )

    c, f = (statistics.median(p[0] for p in v) for v in (cmp_t, floor_t))
    cc, fc = (statistics.median(p[1] for p in v) for v in (cmp_t, floor_t))
    was = f"; before ({before}) {med(before_t)}" if before_t else ""
    print(
        f"compare (two {steps:,}-step runs, parting at 90%): {med(cmp_t)}{was}; its fixed cost (a root "
        f"compared with itself: start, imports, open) {med(fixed_t)}; floor (a bare python reading the rows "
        f"compare needs with sqlite3, no decoding) {med(floor_t)}: {c / f:.2f}x the floor (CPU {cc / fc:.2f}x); "
        f"target < 0.5 s: {'met' if c < 0.5 else 'under the floor' if f >= 0.5 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
