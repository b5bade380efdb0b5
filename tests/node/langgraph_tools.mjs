// LangGraph.js's side of tests/formats/test_langgraphjs_tools.py, on tools_graph.mjs's graph
// (FILE, copied into a project beside the rig's node_modules):
//   node langgraph_tools.mjs FILE TARGET OPS_JSON
// TARGET: a SQLite file, or a Postgres DSN whose search_path names the schema.
// OPS_JSON: a list of {op, thread, checkpoint_id?, values?, as_node?, resume?, input?}; op is
//   "build"   - thread t: "weather in Paris" (a tool call, the ToolMessage, the answer),
//               then "book Paris", left at the tool's pending interrupt();
//               thread u: "weather in Oslo", done
//   "history" - getStateHistory of the thread
//   "invoke"  - invoke(input | null | new Command({resume}), config) from the head or checkpoint_id
//   "update"  - updateState(config, values, as_node) (as_node "__copy__": its own fork;
//               overwrite: each value as new Overwrite(value), as agentctl's edit sets it)
// Prints the list of the ops' results as JSON. Messages are [type, content, tool_calls,
// tool_call_id] (a ToolNode's ToolMessage gets a random id: ids left out). Also a module:
// main(argv) returns that list (tests/node/serve.mjs runs it in one long-lived node; each
// call opens and closes its saver).
import { realpathSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { Command, Overwrite } from "@langchain/langgraph";
import { HumanMessage } from "@langchain/core/messages";

const cfg = (thread, id) => ({ configurable: id ? { thread_id: thread, checkpoint_id: id } : { thread_id: thread } });
const human = (id, content) => ({ messages: [new HumanMessage({ id, content })] });
const values = (v) => {
  const out = { ...v, messages: (v.messages ?? []).map((m) => [m.getType(), m.content, m.tool_calls ?? null,
                                                               m.tool_call_id ?? null]) };
  if (v.__interrupt__) out.__interrupt__ = v.__interrupt__.map((i) => i.value);
  return out;
};

export async function main([file, target, opsText]) {
  const { graph } = await import(pathToFileURL(file).href);
  const pg = target.includes("://");
  let saver;
  if (!pg) {
    const { SqliteSaver } = await import("@langchain/langgraph-checkpoint-sqlite");
    saver = SqliteSaver.fromConnString(target);
  } else {
    const { PostgresSaver } = await import("@langchain/langgraph-checkpoint-postgres");
    const url = new URL(target);
    const schema = url.searchParams.get("search_path");
    url.searchParams.delete("search_path");
    saver = PostgresSaver.fromConnString(url.toString(), { schema });
  }
  try {
    if (pg) await saver.setup();
    graph.checkpointer = saver;
    return await run(graph, JSON.parse(opsText));
  } finally {  // nothing held open between calls: agentctl's writes must not wait on it
    if (pg) await saver.end();
    else saver.db.close();
  }
}

async function run(graph, ops) {
  async function history(thread) {
    const out = [];
    for await (const snap of graph.getStateHistory(cfg(thread))) {
      out.push({
        id: snap.config.configurable.checkpoint_id,
        parent: snap.parentConfig?.configurable?.checkpoint_id ?? null,
        step: snap.metadata.step, source: snap.metadata.source, next: snap.next,
        interrupts: snap.tasks.flatMap((t) => (t.interrupts ?? []).map((i) => i.value)),
        values: values(snap.values),
      });
    }
    return out;
  }

  const results = [];
  for (const op of ops) {
    const config = cfg(op.thread, op.checkpoint_id);
    if (op.op === "build") {
      await graph.invoke(human("h1", "weather in Paris"), cfg("t"));
      await graph.invoke(human("h2", "book Paris"), cfg("t"));
      await graph.invoke(human("h3", "weather in Oslo"), cfg("u"));
      results.push(null);
    } else if (op.op === "history") {
      results.push(await history(op.thread));
    } else if (op.op === "invoke") {
      const input = op.resume !== undefined ? new Command({ resume: op.resume })
        : op.input !== undefined ? human(op.input[0], op.input[1]) : null;
      results.push(values(await graph.invoke(input, config)));
    } else if (op.op === "update") {
      let vals = op.values ?? null;
      if (vals && op.overwrite) vals = Object.fromEntries(Object.entries(vals).map(([k, v]) => [k, new Overwrite(v)]));
      const next = await graph.updateState(config, vals, op.as_node);
      results.push(next.configurable.checkpoint_id);
    }
  }
  return results;
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  console.log(JSON.stringify(await main(process.argv.slice(2))));
}
