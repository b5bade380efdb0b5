// The README's debugging story, told for LangGraph.js: the trip planner of
// sample_db/story/graph.py as a LangGraph.js graph (plain functions, no model).
//
// `planner` (LangGraph.js will not name a node as a key of the state: not `plan` here)
// picks the next city from the request, `search` looks for flights there, `book`
// books the first one. A request for "somewhere new" makes `plan` pick Atlantis, which has
// no flights: `book` fails two steps after the bad value was set. `agentctl edit` fixes the
// value at the step where it was set (through LangGraph.js's updateState), `agentctl run`
// runs on from there (in node).
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

const FLIGHTS = { Paris: ["AF1234 08:10", "AF1240 12:40"], Lisbon: ["TP561 09:05"] };

const Trip = Annotation.Root({
  request: Annotation(),
  plan: Annotation(),
  flights: Annotation(),
  booking: Annotation(),
});

function planner(state) {
  const city = state.request.includes("somewhere new") ? "Atlantis" : "Paris";
  return { plan: { next_city: city, nights: 3 } };
}

function search(state) {
  return { flights: FLIGHTS[state.plan.next_city] ?? [] };
}

function book(state) {
  if (!state.flights.length) throw new Error(`no flights to ${state.plan.next_city}`);
  return { booking: `booked ${state.flights[0]} to ${state.plan.next_city}` };
}

export const graph = new StateGraph(Trip)
  .addNode("planner", planner)
  .addNode("search", search)
  .addNode("book", book)
  .addEdge(START, "planner")
  .addEdge("planner", "search")
  .addEdge("search", "book")
  .addEdge("book", END)
  .compile();
