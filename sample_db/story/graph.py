"""The README's debugging story: a small trip-planning graph (plain Python, no model).

`plan` picks the next city from the request, `search` looks for flights there, `book`
books the first one. A request for "somewhere new" makes `plan` pick Atlantis, which has
no flights: `book` fails two steps after the bad value was set. `agentctl edit` fixes the
value at the step where it was set, `agentctl run` runs on from there.
"""

from typing import TypedDict

from langgraph.graph import END, START, StateGraph

FLIGHTS = {"Paris": ["AF1234 08:10", "AF1240 12:40"], "Lisbon": ["TP561 09:05"]}


class Trip(TypedDict, total=False):
    request: str
    plan: dict
    flights: list
    booking: str


def plan(state: Trip) -> Trip:
    city = "Atlantis" if "somewhere new" in state["request"] else "Paris"
    return {"plan": {"next_city": city, "nights": 3}}


def search(state: Trip) -> Trip:
    return {"flights": FLIGHTS.get(state["plan"]["next_city"], [])}


def book(state: Trip) -> Trip:
    if not state["flights"]:
        raise LookupError(f"no flights to {state['plan']['next_city']}")
    return {"booking": f"booked {state['flights'][0]} to {state['plan']['next_city']}"}


builder = StateGraph(Trip)
builder.add_node("plan", plan)
builder.add_node("search", search)
builder.add_node("book", book)
builder.add_edge(START, "plan")
builder.add_edge("plan", "search")
builder.add_edge("search", "book")
builder.add_edge("book", END)
graph = builder
