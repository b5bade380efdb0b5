// LangGraph.js's side of tests/formats/test_langgraphjs_writes.py: builds a database through
// its own savers, then reads and resumes what agentctl wrote.
//   node langgraph_timetravel.mjs sqlite FILE - OPS_JSON
//   node langgraph_timetravel.mjs postgres DSN SCHEMA OPS_JSON
// OPS_JSON: a list of {op, thread, checkpoint_id?, values?, as_node?, resume?}; op is
//   "build"   - thread t1: input, interrupt() answered, a second run, an updateState fork;
//               thread t2: input, left at its pending interrupt()
//   "build_sub" - thread s1 of the graph with a compiled subgraph (`inner`, its checkpoints
//               in namespace "inner:<task id>"): a run answered inside the subgraph, a
//               second run left at the subgraph's pending interrupt()
// ops on a thread whose name starts with "s" use the subgraph's graph
//   "history" - getStateHistory of the thread
//   "substate" - getState of the thread's head with its subgraphs' states ({subgraphs: true})
//   "invoke"  - invoke(null | new Command({resume}), config) from the head or checkpoint_id
//   "update"  - updateState(config, values, as_node) (as_node "__copy__": its own fork;
//               overwrite: each value as new Overwrite(value))
// Prints the list of the ops' results as JSON. Also a module: main(argv) returns that list
// (tests/node/serve.mjs runs it in one long-lived node; each call opens and closes its saver).
import { realpathSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { StateGraph, Annotation, START, END, interrupt, Command, Overwrite } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { HumanMessage, AIMessage } from "@langchain/core/messages";

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

// a parent graph with a compiled subgraph as its node `inner` (a reducer channel on both)
const Inner = Annotation.Root({
  count: Annotation({ reducer: (a, b) => b, default: () => 0 }),
  tags: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  note: Annotation({ reducer: (a, b) => b, default: () => "" }),
});
const inner = new StateGraph(Inner)
  .addNode("think", (s) => ({ count: s.count + 10, tags: ["think ✓"] }))
  .addNode("check", (s) => ({ note: String(interrupt("inner ok? " + s.count)), tags: ["checked"] }))
  .addEdge(START, "think").addEdge("think", "check").addEdge("check", END)
  .compile();
const outer = new StateGraph(State)
  .addNode("greet", (s) => ({ messages: [new AIMessage("sub " + s.count)], count: s.count + 1 }))
  .addNode("inner", inner)
  .addNode("reply", (s) => ({ messages: [new AIMessage("done: " + s.note)], count: s.count + 1, tags: ["r"] }))
  .addEdge(START, "greet").addEdge("greet", "inner").addEdge("inner", "reply").addEdge("reply", END);

const cfg = (thread, id) => ({ configurable: id ? { thread_id: thread, checkpoint_id: id } : { thread_id: thread } });
// a state as JSON: messages as [type, content], interrupts by value (their ids name checkpoints)
const values = (v) => {
  const out = { ...v, messages: (v.messages ?? []).map((m) => [m.getType(), m.content]) };
  if (v.__interrupt__) out.__interrupt__ = v.__interrupt__.map((i) => i.value);
  return out;
};

export async function main([kind, url, schema, opsText]) {
  const saver = kind === "sqlite" ? SqliteSaver.fromConnString(url) : PostgresSaver.fromConnString(url, { schema });
  try {
    if (kind !== "sqlite") await saver.setup();
    return await run(saver, JSON.parse(opsText));
  } finally {  // nothing held open between calls: agentctl's writes must not wait on it
    if (kind === "sqlite") saver.db.close();
    else await saver.end();
  }
}

async function run(saver, ops) {
  const flat = graph.compile({ checkpointer: saver });
  const sub = outer.compile({ checkpointer: saver });
  let app = flat;

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
  for (const op of ops) {
    const config = cfg(op.thread, op.checkpoint_id);
    app = op.op === "build_sub" || op.thread?.startsWith("s") ? sub : flat;
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
    } else if (op.op === "build_sub") {
      const s1 = cfg("s1");
      await app.invoke({ messages: [new HumanMessage("stärt s1")] }, s1);
      await app.invoke(new Command({ resume: "ja ✓" }), s1);
      await app.invoke({ messages: [new HumanMessage("again s1")] }, s1);
      results.push(null);
    } else if (op.op === "history") {
      results.push(await history(op.thread));
    } else if (op.op === "substate") {  // the head's state with its subgraphs' (their namespaces' heads)
      const snap = await app.getState(cfg(op.thread), { subgraphs: true });
      results.push({ values: values(snap.values), next: snap.next,
                     tasks: snap.tasks.map((t) => [t.name, t.state?.values ? values(t.state.values) : null,
                                                    t.state?.next ?? null]) });
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
  return results;
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  console.log(JSON.stringify(await main(process.argv.slice(2))));
}
