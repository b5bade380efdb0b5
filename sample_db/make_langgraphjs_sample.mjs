// Write the LangGraph.js sample database with the real LangGraph.js (no model):
//
//   cd sample_db/story-js && npm install && node ../make_langgraphjs_sample.mjs [OUT]
//   (default OUT: sample_db/langgraphjs.db; tests/formats/test_langgraphjs_sample.py runs it
//   with the Node test rig's packages)
//
// Graphs of plain functions write through LangGraph.js's own SqliteSaver (JSON rows):
// - `refund-js`: a support agent loop (agent -> tools -> agent) with tool calls and tool
//   messages, a reducer channel (`notes`), Unicode, then an operator's updateState;
// - `refund-js-replay`: the same loop, then LangGraph.js's time travel: an updateState
//   fork of an older checkpoint, run on from there;
// - `deploy-js`: waits at an interrupt() for a human's approval (pending);
// - `research-js`: a compiled subgraph as a node (its checkpoints in the namespace
//   `researcher:<task id>`, the thread `research-js|researcher:...` in agentctl).
// The checkpoint ids are LangGraph.js's own (the time of the run): the rows differ from
// run to run, their shape does not. The file is left in rollback-journal mode (not WAL).
import { fileURLToPath } from "node:url";
import { existsSync, rmSync } from "node:fs";
import { StateGraph, Annotation, START, END, interrupt, Command, MessagesAnnotation } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";

const out = process.argv[2] ?? fileURLToPath(new URL("./langgraphjs.db", import.meta.url));
for (const suffix of ["", "-wal", "-shm", "-journal"]) if (existsSync(out + suffix)) rmSync(out + suffix);

const Support = Annotation.Root({
  ...MessagesAnnotation.spec,
  notes: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  refund_cents: Annotation({ reducer: (a, b) => b, default: () => 0 }),
});
const ORDERS = { "R-77": { item: "Kaffeemühle ☕", cents: 12999 } };

function agent(s) {
  const last = s.messages[s.messages.length - 1];
  if (last.getType() === "tool") {
    const order = JSON.parse(last.content);
    return { messages: [new AIMessage(`Erstattung über ${order.cents / 100} € für „${order.item}“ ist unterwegs.`)],
             refund_cents: order.cents, notes: ["refunded"] };
  }
  return { messages: [new AIMessage({ content: "", tool_calls: [
    { id: "call_lookup_1", name: "lookup_order", args: { order: "R-77" }, type: "tool_call" }] })],
           notes: ["looked up"] };
}
function tools(s) {
  const call = s.messages[s.messages.length - 1].tool_calls[0];
  return { messages: [new ToolMessage({ content: JSON.stringify(ORDERS[call.args.order]), tool_call_id: call.id,
                                        name: call.name })] };
}
const support = new StateGraph(Support)
  .addNode("agent", agent).addNode("tools", tools)
  .addEdge(START, "agent")
  .addConditionalEdges("agent", (s) => (s.messages[s.messages.length - 1].tool_calls?.length ? "tools" : END))
  .addEdge("tools", "agent");

const Deploy = Annotation.Root({
  service: Annotation(),
  approved: Annotation({ reducer: (a, b) => b, default: () => null }),
});
const deploy = new StateGraph(Deploy)
  .addNode("plan", (s) => ({ service: s.service + "@v2" }))
  .addNode("ask", (s) => ({ approved: interrupt({ question: `deploy ${s.service}?`, risk: "medium" }) }))
  .addNode("ship", (s) => ({ service: s.service + " (shipped)" }))
  .addEdge(START, "plan").addEdge("plan", "ask").addEdge("ask", "ship").addEdge("ship", END);

const Research = Annotation.Root({
  topic: Annotation(),
  findings: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
});
const researcher = new StateGraph(Research)
  .addNode("search", (s) => ({ findings: [`3 Quellen zu ${s.topic}`] }))
  .addNode("summarise", (s) => ({ findings: [`summary: ${s.findings.length} finding(s)`] }))
  .addEdge(START, "search").addEdge("search", "summarise").addEdge("summarise", END)
  .compile();
const research = new StateGraph(Research)
  .addNode("scope", (s) => ({ topic: s.topic.trim() }))
  .addNode("researcher", researcher)
  .addNode("report", (s) => ({ findings: [`report on ${s.topic} ✓`] }))
  .addEdge(START, "scope").addEdge("scope", "researcher").addEdge("researcher", "report").addEdge("report", END);

const saver = SqliteSaver.fromConnString(out);
const cfg = (thread, id) => ({ configurable: id ? { thread_id: thread, checkpoint_id: id } : { thread_id: thread } });
const ask = { messages: [new HumanMessage("Bestellung R-77 kam kaputt an, bitte erstatten 🙏")] };

const supportApp = support.compile({ checkpointer: saver });
await supportApp.invoke(ask, cfg("refund-js"));
await supportApp.updateState(cfg("refund-js"), { messages: [new HumanMessage("(operator) customer confirmed by phone")],
                                                 notes: ["operator ✎"] });

await supportApp.invoke(ask, cfg("refund-js-replay"));
let looked;
for await (const snap of supportApp.getStateHistory(cfg("refund-js-replay"))) {
  if (snap.next.includes("tools")) looked = snap.config;
}
const fork = await supportApp.updateState(looked, { notes: ["replayed"] });  // time travel: a fork
await supportApp.invoke(null, fork);

const deployApp = deploy.compile({ checkpointer: saver });
await deployApp.invoke({ service: "billing" }, cfg("deploy-js"));

await research.compile({ checkpointer: saver }).invoke({ topic: "  Zeitreisen in LangGraph.js " }, cfg("research-js"));

saver.db.pragma("journal_mode = DELETE");
saver.db.close();
console.log(out);
