// A LangGraph.js graph with tool calls (tests/formats/test_langgraphjs_tools.py): a scripted
// model (`agent`: an AIMessage with tool_calls for a human's request, its answer after a
// ToolMessage) and LangGraph.js's prebuilt ToolNode (`tools`) routed by toolsCondition;
// the tool `book` asks first (interrupt() inside the tool). Exported compiled, without a
// checkpointer: the driver and agentctl's node runner give it theirs.
import { StateGraph, Annotation, MessagesAnnotation, START, END, interrupt } from "@langchain/langgraph";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import { tool } from "@langchain/core/tools";
import { AIMessage } from "@langchain/core/messages";
import { z } from "zod";

const weather = tool(async ({ city }) => `sunny in ${city} ☀`, {
  name: "weather", description: "the weather of a city", schema: z.object({ city: z.string() }),
});
const book = tool(async ({ city }) => {
  const ok = interrupt({ book: city });
  return ok === "yes" ? `booked ${city} ✓` : `not booked: ${ok}`;
}, { name: "book", description: "book a trip (asks first)", schema: z.object({ city: z.string() }) });

const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  calls: Annotation({ reducer: (a, b) => b, default: () => 0 }),
});

// a scripted model: a tool call for a human's request, an answer after a tool's result
function agent(s) {
  const last = s.messages[s.messages.length - 1];
  const n = s.calls + 1;
  if (last.getType() === "tool") return { messages: [new AIMessage({ id: `ai-${n}`, content: `done: ${last.content}` })], calls: n };
  const text = String(last.content);
  const city = text.split(" ").pop();
  const name = text.startsWith("book") ? "book" : "weather";
  return { messages: [new AIMessage({ id: `ai-${n}`, content: "", tool_calls: [{ id: `call-${n}`, name, args: { city } }] })], calls: n };
}

export const graph = new StateGraph(State)
  .addNode("agent", agent)
  .addNode("tools", new ToolNode([weather, book]))
  .addEdge(START, "agent")
  .addConditionalEdges("agent", toolsCondition, ["tools", END])
  .addEdge("tools", "agent")
  .compile();
