"""The flows and the crew the CrewAI fixtures are written with (imported by crewai_write.py
and by the round-trip checks run in the rig's venv): plain @start/@listen methods (no
model), and a crew whose agents' model is a scripted BaseLLM."""

from __future__ import annotations

import time
from typing import Any

from crewai import Agent, Crew, Task
from crewai.flow.flow import Flow, and_, listen, or_, router, start
from crewai.flow.persistence import persist
from crewai.llms.base_llm import BaseLLM
from pydantic import BaseModel

CKPT_EVENTS = ["method_execution_finished"]
#: each method waits a little, so CrewAI's checkpoint listener (a thread pool) writes one
#: row before the next method ends (rows in method order, parents set)
PAUSE = 0.4


class TripState(BaseModel):
    id: str = ""
    city: str = "Paris"
    steps: list[str] = []
    note: str = ""


class TripFlow(Flow[TripState]):
    @start()
    def plan(self) -> str:
        self.state.steps.append("plan")
        time.sleep(PAUSE)
        return f"plan {self.state.city}"

    @listen(plan)
    def book(self, prev: str) -> str:
        self.state.steps.append("book")
        time.sleep(PAUSE)
        return f"booked {self.state.city}"

    @listen(book)
    def report(self, prev: str) -> str:
        self.state.steps.append("report")
        time.sleep(PAUSE)
        return f"report {self.state.city} zephyrine"


class RouteState(BaseModel):
    id: str = ""
    budget: int = 100
    path: list[str] = []


class RoutedTrip(Flow[RouteState]):
    """A @router (cheap or fancy by the state's budget), a listener on or_ of the two
    routes, two more started by the router's first, and one on and_ of those two."""

    @start()
    def plan(self) -> str:
        self.state.path.append("plan")
        time.sleep(PAUSE)
        return "planned"

    @router(plan)
    def choose(self) -> str:
        self.state.path.append("choose")
        time.sleep(PAUSE)
        return "fancy" if self.state.budget >= 500 else "cheap"

    @listen(or_("cheap", "fancy"))
    def book(self) -> str:
        self.state.path.append(f"book-{'fancy' if self.state.budget >= 500 else 'cheap'}")
        time.sleep(PAUSE)
        return "booked"

    @listen(book)
    def hotel(self) -> str:
        self.state.path.append("hotel")
        time.sleep(PAUSE)
        return "hotel"

    @listen(book)
    def train(self) -> str:
        time.sleep(2 * PAUSE)  # (after hotel: the rows in one order)
        self.state.path.append("train")
        time.sleep(PAUSE)
        return "train"

    @listen(and_(hotel, train))
    def report(self) -> str:
        self.state.path.append("report")
        time.sleep(PAUSE)
        return f"report {self.state.budget} {'/'.join(self.state.path)}"


@persist()
class PersistedTrip(Flow[TripState]):
    @start()
    def plan(self) -> str:
        self.state.steps.append("plan")
        return f"plan {self.state.city}"

    @listen(plan)
    def book(self, prev: str) -> str:
        self.state.steps.append("book")
        return f"booked {self.state.city}"


class ScriptedLLM(BaseLLM):
    """A model that answers from a script (no network)."""

    answers: list[str] = []

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> str:
        n = len([m for m in self.answers if m.startswith("#")])
        self.answers.append("#")
        return f"Thought: done\nFinal Answer: answer {n} about zephyrine"

    def supports_function_calling(self) -> bool:
        return False


def make_crew() -> Crew:
    llm = ScriptedLLM(model="scripted")
    agent = Agent(
        role="Researcher", goal="find facts about {topic}", backstory="careful", llm=llm, verbose=False
    )
    t1 = Task(description="Research {topic}", expected_output="facts", agent=agent)
    t2 = Task(description="Summarise {topic}", expected_output="a summary", agent=agent)
    return Crew(agents=[agent], tasks=[t1, t2], verbose=False)
