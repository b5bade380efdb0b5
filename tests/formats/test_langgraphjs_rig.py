"""LangGraph.js's own savers write the database (through the Node rig,
tests/support/noderig.py); agentctl reads it: `threads list`, `log` and `show` give the
threads and checkpoints LangGraph.js's getStateHistory gives, on SQLite (SqliteSaver)
and on Postgres (PostgresSaver, in the rig's throwaway server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support import noderig
from tests.support.noderig import NODE_DIR, run_node, served
from tests.support.rig import REPO
from tests.support.sampledb import cli, cli_json

node_modules = noderig.node_modules  # the fixture: npm ci once, from tests/node's lock file

WRITER = NODE_DIR / "langgraph_write.mjs"
ROLES = {"human": "user", "ai": "assistant"}


@pytest.fixture(params=["sqlite", "postgres"])
def lgjs_db(request, tmp_path, node_modules) -> tuple[str, dict]:
    """(the database's URL, LangGraph.js's getStateHistory of each thread)."""
    if request.param == "sqlite":
        url = str(tmp_path / "langgraphjs.db")
        history = served(WRITER, "sqlite", url)
    else:
        url = request.getfixturevalue("pg_dsn")  # a fresh schema, named in search_path
        schema = parse_qs(urlsplit(url).query)["search_path"][0]
        history = served(WRITER, "postgres", request.getfixturevalue("pg_base_dsn"), schema)
    return url, history


def test_agentctl_reads_what_langgraphjs_wrote(lgjs_db):
    url, history = lgjs_db
    assert set(history) == {"t1", "t2"} and len(history["t1"]) == 8  # two runs of 3 steps + inputs

    threads = cli_json(url, "threads", "list")
    assert {t["thread_id"]: (t["checkpoints"], t["head_checkpoint_id"], t["head_step"]) for t in threads} == {
        thread: (len(h), h[0]["id"], h[0]["step"]) for thread, h in history.items()
    }

    for thread, h in history.items():
        log = cli_json(url, "log", thread)
        assert [(c["thread_id"], c["checkpoint_id"], c["parent_checkpoint_id"], c["step"]) for c in log] == [
            (thread, s["id"], s["parent"], s["step"]) for s in h
        ]
        for s in h:
            shown = cli_json(url, "show", s["id"])
            assert (shown["metadata"]["thread_id"], shown["metadata"]["checkpoint_id"]) == (thread, s["id"])
            assert [[m["role"], m["content"]] for m in shown["messages"]] == [
                [ROLES[kind], content] for kind, content in s["messages"]
            ]
            assert shown["state"].get("count") == s["count"]

        # the text the user sees: the ids in `log`, the head's messages in `show`
        r = cli(url, "log", thread)
        assert r.exit_code == 0, r.stderr
        assert [line.split()[0] for line in r.stdout.splitlines()] == [s["id"] for s in h]
        r = cli(url, "show", thread)
        assert r.exit_code == 0, r.stderr
        assert h[0]["id"] in r.stdout and "start " + thread in r.stdout and "world" in r.stdout


# plugins the child pytest has no use for: their imports (langsmith, hypothesis) were ~3.5 s
# of its ~4 s
QUIET_PLUGINS = [
    a
    for p in ("langsmith_plugin", "hypothesispytest", "benchmark", "textual-snapshot", "syrupy")
    for a in ("-p", f"no:{p}")
]


@pytest.mark.parametrize("require", ["", "1"])
def test_without_node_the_rig_skips_with_the_reason_unless_required(tmp_path, require):
    """No node on PATH: the test is skipped, saying why; under AGENTCTL_REQUIRE_NODE=1
    (CI) it fails instead. Nothing is installed either way."""
    env = {
        **os.environ,
        "PATH": str(tmp_path / "empty"),
        "AGENTCTL_REQUIRE_NODE": require,
        "AGENTCTL_TEST_NODE_CACHE": str(tmp_path / "cache"),
    }
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rsf",
            "-p",
            "no:cacheprovider",
            *QUIET_PLUGINS,
            f"{__file__}::test_agentctl_reads_what_langgraphjs_wrote",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "node and npm not found" in r.stdout, r.stdout[-2000:]
    if require:
        assert r.returncode == 1 and "2 errors" in r.stdout and "AGENTCTL_REQUIRE_NODE=1 but" in r.stdout
    else:
        assert r.returncode == 0 and "2 skipped" in r.stdout
    assert not (tmp_path / "cache").exists()


# LangGraph.js's saver on a file: a thread's checkpoints (list) and its head (getTuple)
READ_THREAD = """
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
const saver = SqliteSaver.fromConnString(process.argv[2]);
const config = { configurable: { thread_id: process.argv[3] } };
const ids = [];
for await (const t of saver.list(config)) ids.push(t.config.configurable.checkpoint_id);
const head = await saver.getTuple(config);
console.log(JSON.stringify({ ids, step: head.metadata.step, versions: head.checkpoint.channel_versions,
  messages: head.checkpoint.channel_values.messages.map((m) => [m.getType(), m.content, m.tool_calls?.length ?? 0]) }));
"""


def test_the_bench_generator_writes_what_langgraphjs_reads(tmp_path, node_modules):
    """bench/make_langgraph_db.py --js (the 1M-checkpoint bench file's generator) writes
    LangGraph.js's SqliteSaver layout: LangGraph.js lists each checkpoint agentctl logs
    and reads the head's messages (tool calls, tool messages) as agentctl shows them."""
    db = str(tmp_path / "lgjs.db")
    r = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "make_langgraph_db.py"),
            db,
            "--js",
            "--threads",
            "5",
            "--checkpoints",
            "300",
            "--long-steps",
            "60",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["written_by"] == "LangGraph.js"
    assert cli(db, "formats").stderr.endswith("written by: LangGraph.js\n")
    got = json.loads(run_node(READ_THREAD, db, "long-thread").stdout)
    assert got["ids"] == [c["checkpoint_id"] for c in cli_json(db, "log", "long-thread", "--all")]
    assert len(got["ids"]) == 30 and all(isinstance(v, int) for v in got["versions"].values())
    shown = cli_json(db, "show", "long-thread")
    assert shown["metadata"]["step"] == got["step"] == 28  # --long-steps at most a tenth: 30
    assert [[ROLES.get(k, k), c, n] for k, c, n in got["messages"]] == [
        [m["role"], m["content"], len(m.get("tool_calls") or [])] for m in shown["messages"]
    ]
    assert {k for k, _, _ in got["messages"]} == {"ai", "tool"}


# a served script: prints on stdout and stderr (not an answer), returns its args; or throws
NOISY = """
export async function main(args) {
  console.log("not an answer");
  process.stdout.write("{\\"ok\\": 1}\\n");
  console.error("nor this");
  if (args[0] === "throw") throw new Error("thrown ✗ " + args[1]);
  if (args[0] === "sleep") await new Promise((r) => setTimeout(r, 30000));
  return { args, pid: process.pid };
}
"""


def test_the_node_server_answers_each_call_and_survives_an_error(node_modules):
    """served(): what a script prints cannot pass for its answer; a script's error fails the
    test with node's message; the same node (one per worker) answers the next call; a call
    past its timeout fails (the node killed) and a new node answers the next."""
    first = served(NOISY, "a", "é ✓")
    assert first["args"] == ["a", "é ✓"]
    with pytest.raises(pytest.fail.Exception, match="thrown ✗ x"):
        served(NOISY, "throw", "x")
    assert served(NOISY, "b") == {"args": ["b"], "pid": first["pid"]}
    with pytest.raises(pytest.fail.Exception, match="node server died"):
        served(NOISY, "sleep", timeout=0.5)
    again = served(NOISY, "c")
    assert again["args"] == ["c"] and again["pid"] != first["pid"]
