// LangGraph.js writes a small database through its own savers (run by
// tests/formats/test_langgraphjs_rig.py through tests/support/noderig.py's run_node):
//   node langgraph_write.mjs sqlite FILE
//   node langgraph_write.mjs postgres DSN SCHEMA
// A StateGraph without a model (greet -> reply), thread t1 run twice, t2 once. Prints
// getStateHistory of each thread as JSON: checkpoint and parent ids, step, the messages,
// and the count the saver's getTuple reads. Also a module: main(argv) returns that object
// (tests/node/serve.mjs runs it in one long-lived node; each call closes its saver).
import { realpathSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { StateGraph, Annotation, START, END } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { HumanMessage, AIMessage } from "@langchain/core/messages";

const State = Annotation.Root({
  messages: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  count: Annotation({ reducer: (a, b) => b, default: () => 0 }),
});
const graph = new StateGraph(State)
  .addNode("greet", (s) => ({ messages: [new AIMessage("hello " + s.count)], count: s.count + 1 }))
  .addNode("reply", (s) => ({ messages: [new AIMessage("world")], count: s.count + 1 }))
  .addEdge(START, "greet").addEdge("greet", "reply").addEdge("reply", END);

export async function main([kind, url, schema]) {
  const saver = kind === "sqlite" ? SqliteSaver.fromConnString(url) : PostgresSaver.fromConnString(url, { schema });
  try {
    if (kind !== "sqlite") await saver.setup();
    return await write(saver);
  } finally {  // nothing held open between calls
    if (kind === "sqlite") saver.db.close();
    else await saver.end();
  }
}

async function write(saver) {
  const app = graph.compile({ checkpointer: saver });
  const out = {};
  for (const thread of ["t1", "t2"]) {
    const config = { configurable: { thread_id: thread } };
    await app.invoke({ messages: [new HumanMessage("start " + thread)] }, config);
    if (thread === "t1") await app.invoke({ messages: [new HumanMessage("again")] }, config);
    const history = [];
    for await (const snap of app.getStateHistory(config)) {
      history.push({
        id: snap.config.configurable.checkpoint_id,
        parent: snap.parentConfig?.configurable?.checkpoint_id ?? null,
        step: snap.metadata.step,
        // the count the saver holds (getStateHistory fills a missing one with its default)
        count: (await saver.getTuple(snap.config)).checkpoint.channel_values.count ?? null,
        messages: (snap.values.messages ?? []).map((m) => [m.getType(), m.content]),
      });
    }
    out[thread] = history;
  }
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  console.log(JSON.stringify(await main(process.argv.slice(2))));
}
