// LangGraph.js's side of tests/formats/test_langgraphjs_writes.py: builds a database through
// its own savers, then reads and resumes what agentctl wrote.
//   node langgraph_timetravel.mjs sqlite FILE - OPS_JSON
//   node langgraph_timetravel.mjs postgres DSN SCHEMA OPS_JSON
// OPS_JSON: a list of {op, thread, checkpoint_id?, values?, as_node?, resume?}; op is
//   "build"   - thread t1: input, interrupt() answered, a second run, an updateState fork;
//               thread t2: input, left at its pending interrupt()
//   "history" - getStateHistory of the thread
//   "invoke"  - invoke(null | new Command({resume}), config) from the head or checkpoint_id
//   "update"  - updateState(config, values, as_node) (as_node "__copy__": its own fork;
//               overwrite: each value as new Overwrite(value))
// Prints the list of the ops' results as JSON.
import { StateGraph, Annotation, START, END, interrupt, Command, Overwrite } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { HumanMessage, AIMessage } from "@langchain/core/messages";

const [kind, url, schema, opsText] = process.argv.slice(2);
const State = Annotation.Root({
  messages: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  count: Annotation({ reducer: (a, b) => b, default: () => 0 }),
  note: Annotation({ reducer: (a, b) => b, default: () => "" }),
  tags: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),  // plain data, a reducer
});
const graph = new StateGraph(State)
  .addNode("greet", (s) => ({ messages: [new AIMessage("héllo " + s.count + " 你好")], count: s.count + 1, tags: ["g"] }))
  .addNode("ask", (s) => ({ note: String(interrupt("approve? ✓")) }))
  .addNode("reply", (s) => ({ messages: [new AIMessage("done: " + s.note)], count: s.count + 1, tags: ["r✓"] }))
  .addEdge(START, "greet").addEdge("greet", "ask").addEdge("ask", "reply").addEdge("reply", END);

let saver;
if (kind === "sqlite") {
  saver = SqliteSaver.fromConnString(url);
} else {
  saver = PostgresSaver.fromConnString(url, { schema });
  await saver.setup();
}
const app = graph.compile({ checkpointer: saver });
const cfg = (thread, id) => ({ configurable: id ? { thread_id: thread, checkpoint_id: id } : { thread_id: thread } });
// a state as JSON: messages as [type, content], interrupts by value (their ids name checkpoints)
const values = (v) => {
  const out = { ...v, messages: (v.messages ?? []).map((m) => [m.getType(), m.content]) };
  if (v.__interrupt__) out.__interrupt__ = v.__interrupt__.map((i) => i.value);
  return out;
};

async function history(thread) {
  const out = [];
  for await (const snap of app.getStateHistory(cfg(thread))) {
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
for (const op of JSON.parse(opsText)) {
  const config = cfg(op.thread, op.checkpoint_id);
  if (op.op === "build") {
    const t1 = cfg("t1"), t2 = cfg("t2");
    await app.invoke({ messages: [new HumanMessage("stärt t1 🚀")] }, t1);
    await app.invoke(new Command({ resume: "yes ✓" }), t1);
    await app.invoke({ messages: [new HumanMessage("again")] }, t1);
    await app.invoke(new Command({ resume: "oui" }), t1);
    const h = await history("t1");
    const greeted = h.find((s) => s.next.includes("ask") && s.step === 1);
    await app.updateState(cfg("t1", greeted.id), { note: "forked ✎" });  // an updateState fork
    await app.invoke({ messages: [new HumanMessage("start t2")] }, t2);
    results.push(null);
  } else if (op.op === "history") {
    results.push(await history(op.thread));
  } else if (op.op === "invoke") {
    const input = op.resume !== undefined ? new Command({ resume: op.resume }) : null;
    results.push(values(await app.invoke(input, config)));
  } else if (op.op === "update") {
    let vals = op.values ?? null;
    if (vals && op.overwrite) vals = Object.fromEntries(Object.entries(vals).map(([k, v]) => [k, new Overwrite(v)]));
    const next = await app.updateState(config, vals, op.as_node);
    results.push(next.configurable.checkpoint_id);
  }
}
if (kind !== "sqlite") await saver.end();
console.log(JSON.stringify(results));
