"""The flows and the crew the CrewAI fixtures are written with (imported by crewai_write.py
and by the round-trip checks run in the rig's venv): plain @start/@listen methods (no
model), and a crew whose agents' model is a scripted BaseLLM."""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel

from crewai import Agent, Crew, Task
from crewai.flow.flow import Flow, listen, start
from crewai.flow.persistence import persist
from crewai.llms.base_llm import BaseLLM

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

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None,
             available_functions: Any = None, from_task: Any = None, from_agent: Any = None,
             response_model: Any = None) -> str:
        n = len([m for m in self.answers if m.startswith("#")])
        self.answers.append("#")
        return f"Thought: done\nFinal Answer: answer {n} about zephyrine"

    def supports_function_calling(self) -> bool:
        return False


def make_crew() -> Crew:
    llm = ScriptedLLM(model="scripted")
    agent = Agent(role="Researcher", goal="find facts about {topic}", backstory="careful", llm=llm,
                  verbose=False)
    t1 = Task(description="Research {topic}", expected_output="facts", agent=agent)
    t2 = Task(description="Summarise {topic}", expected_output="a summary", agent=agent)
    return Crew(agents=[agent], tasks=[t1, t2], verbose=False)
