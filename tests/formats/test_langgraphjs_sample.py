"""The LangGraph.js sample database (sample_db/langgraphjs.db, written by the real
LangGraph.js through sample_db/make_langgraphjs_sample.mjs): agentctl reads it without
node; the script, run again with the Node rig's packages, writes a database of the same
shape; LangGraph.js's own saver reads the committed file."""

from __future__ import annotations

import json
import re
import shutil

from tests.support import noderig
from tests.support.noderig import run_node, served
from tests.support.rig import REPO
from tests.support.sampledb import cli, cli_json

node_modules = noderig.node_modules  # the fixture: npm ci once, from tests/node's lock file

SAMPLE = REPO / "sample_db" / "langgraphjs.db"
SCRIPT = REPO / "sample_db" / "make_langgraphjs_sample.mjs"
THREADS = ["deploy-js", "refund-js", "refund-js-replay", "research-js"]


def test_the_langgraphjs_sample_reads(tmp_path):
    db = str(tmp_path / "lgjs.db")
    shutil.copyfile(SAMPLE, db)
    r = cli(db, "formats")
    assert r.exit_code == 0 and "written by: LangGraph.js\n" in r.stderr, r.stderr
    assert sorted(t["thread_id"] for t in cli_json(db, "threads", "list")) == THREADS
    sub = cli_json(db, "threads", "list", "--prefix", "research-js|")
    assert len(sub) == 1 and sub[0]["thread_id"].startswith("research-js|researcher:")
    # tool calls and tool messages, a reducer channel, Unicode, the operator's updateState
    refund = cli_json(db, "show", "refund-js")
    assert refund["metadata"]["tags"] == ["update"] and refund["state"]["refund_cents"] == 12999
    assert [m["role"] for m in refund["messages"]] == ["user", "assistant", "tool", "assistant", "user"]
    assert refund["messages"][1]["tool_calls"][0]["name"] == "lookup_order"
    assert "Kaffeemühle ☕" in refund["messages"][3]["content"]
    assert refund["state"]["notes"] == ["looked up", "refunded", "operator ✎"]
    # LangGraph.js's time travel: an updateState fork of an older checkpoint, run on
    replay = cli_json(db, "log", "refund-js-replay")
    assert [c["step"] for c in replay] == [4, 3, 2, 3, 2, 1, 0, -1]
    assert cli_json(db, "show", "refund-js-replay")["state"]["notes"] == ["looked up", "replayed", "refunded"]
    # the pending interrupt()
    deploy = cli_json(db, "show", "deploy-js")
    assert deploy["tools_result"]["__interrupt__"][0]["value"][0]["value"] == {
        "question": "deploy billing@v2?",
        "risk": "medium",
    }
    assert cli(db, "doctor").exit_code == 0
    # a write in LangGraph.js's form (JSON rows), undone
    r = cli(db, "rewind", "deploy-js~1", "--yes")
    assert r.exit_code == 0 and cli(db, "undo").exit_code == 0, r.stderr


def _shape(db: str) -> dict:
    """Each thread's checkpoint count, head step and head state, message ids (and the
    metadata's, the subgraph's parent checkpoint id) left out."""
    out = {}
    for t in cli_json(db, "threads", "list") + cli_json(db, "threads", "list", "--prefix", "research-js|"):
        name = re.sub(r":[0-9a-f-]{36}$", ":<task>", t["thread_id"])
        state = cli_json(db, "show", t["thread_id"])["state"]
        state.pop("__metadata__", None)
        for m in state.get("messages", []):
            m.pop("id", None)
        out[name] = (t["checkpoints"], t["head_step"], state)
    return out


# LangGraph.js's saver reads a database: each thread's checkpoints (list) and its head (getTuple)
READ = """
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
export async function main([file, threads]) {
  const saver = SqliteSaver.fromConnString(file);
  try {
    const out = {};
    for (const thread of JSON.parse(threads)) {
      const config = { configurable: { thread_id: thread } };
      let n = 0;
      for await (const _ of saver.list(config)) n += 1;
      const head = await saver.getTuple(config);
      out[thread] = [n, head.metadata.step, Object.keys(head.checkpoint.channel_values).sort()];
    }
    return out;
  } finally {
    saver.db.close();
  }
}
"""


def test_the_sample_is_what_the_script_writes_and_langgraphjs_reads_it(tmp_path, node_modules):
    made = tmp_path / "made.db"
    run_node(SCRIPT, str(made), timeout=300)
    shape = _shape(str(SAMPLE))
    assert _shape(str(made)) == shape and len(shape) == 5
    committed = tmp_path / "committed.db"
    shutil.copyfile(SAMPLE, committed)
    reads = [served(READ, str(db), json.dumps(THREADS)) for db in (committed, made)]
    assert reads[0] == reads[1] and reads[0]["refund-js"][:2] == [6, 4]
