"""agentctl on an ADK app shaped like real ones (issue 32.7): an LlmAgent whose model is
a scripted BaseLlm (no network), a tool, before/after callbacks writing `user:`, `app:`
and session state, run by ADK's Runner with DatabaseSessionService (SQLite and
Postgres). After agentctl's rewind, what `show --json` gives as the transcript is the
conversation ADK builds for the model (the LlmRequest.contents the scripted model
receives when ADK resumes on the rewound session): the rewound events are not in it
(they stay in the thread, tagged "rewound", a fork in `tree`)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import pytest

pytest.importorskip("google.adk")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.events._rewind_events import _apply_rewinds  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.tools.tool_context import ToolContext  # noqa: E402
from google.genai import types  # noqa: E402

import tests.formats.test_format_adk as fa  # noqa: E402
from tests.support.sampledb import cli, cli_json  # noqa: E402

adk_db = fa.adk_db  # the fixture: (agentctl's URL, a DatabaseSessionService) on SQLite and on Postgres

#: the contents of every request the scripted model got, in order
SEEN: list[list[types.Content]] = []


class Scripted(BaseLlm):
    """Asks the tool for the city the user names, then answers from its result."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: Any, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        SEEN.append([c.model_copy(deep=True) for c in llm_request.contents])
        part = llm_request.contents[-1].parts[-1]
        if part.function_response:
            r = part.function_response.response
            reply = types.Part(text=f"{r['city']}: {r['temp']} degrees")
        else:
            city = part.text.split()[-1].rstrip("?")
            reply = types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": city}))
        yield LlmResponse(content=types.Content(role="model", parts=[reply]))


def get_weather(city: str, tool_context: ToolContext) -> dict:
    """The weather in a city."""
    tool_context.state["cities"] = tool_context.state.get("cities", []) + [city]
    return {"city": city, "temp": len(city) * 3}


def count_visit(callback_context: Any) -> None:
    callback_context.state["user:visits"] = callback_context.state.get("user:visits", 0) + 1


def note_turn(callback_context: Any) -> None:
    callback_context.state["app:turns"] = callback_context.state.get("app:turns", 0) + 1
    callback_context.state["last_city"] = callback_context.state.get("cities", ["?"])[-1]


AGENT = LlmAgent(
    name="weather",
    model=Scripted(),
    tools=[get_weather],
    instruction="Answer briefly.",
    before_agent_callback=count_visit,
    after_agent_callback=note_turn,
)


async def turn(svc: Any, text: str) -> None:
    runner = Runner(app_name="app", agent=AGENT, session_service=svc)
    async for _ in runner.run_async(
        user_id="u1", session_id="s1", new_message=types.Content(role="user", parts=[types.Part(text=text)])
    ):
        pass


def content_parts(contents: list[types.Content]) -> list[tuple]:
    """(role, kind, value) of each part of the contents a model gets."""
    out = []
    for c in contents:
        for p in c.parts or []:
            if p.function_call:
                out.append((c.role, "call", p.function_call.name, p.function_call.args))
            elif p.function_response:
                out.append((c.role, "response", p.function_response.name, p.function_response.response))
            elif p.text is not None:
                out.append((c.role, "text", p.text))
    return out


def message_parts(messages: list[dict]) -> list[tuple]:
    """The same of agentctl's transcript (`show --json`'s messages): the role ADK gives
    the model (user, model; a function response is the user's), events without content
    (state-only ones) left out, as ADK leaves them out."""
    out: list[tuple] = []
    for m in messages:
        if m["role"] == "tool":
            out.append(("user", "response", m["name"], m["content"]))
            continue
        role = "user" if m["role"] == "user" else "model"
        if m.get("content"):
            out.append((role, "text", m["content"]))
        for call in m.get("tool_calls") or []:
            out.append((role, "call", call["name"], call["arguments"]))
    return out


async def test_after_a_rewind_show_is_the_conversation_adk_gives_the_model(adk_db):
    url, svc = adk_db
    await svc.create_session(app_name="app", user_id="u1", session_id="s1", state={"units": "C"})
    for city in ("Paris", "Rome", "Oslo"):
        await turn(svc, f"weather in {city}?")
    tid = "app/u1/s1"
    before = await svc.get_session(app_name="app", user_id="u1", session_id="s1")
    per_turn = len(before.events) // 3
    assert len(before.events) == 3 * per_turn and per_turn >= 5  # user, callbacks, call, response, answer

    # rewind to the end of the first turn: ADK's own rewind event, the later two turns marked
    r = cli(url, "rewind", f"{tid}@{per_turn}", "--yes")
    assert r.exit_code == 0, r.stderr
    assert f"marks {2 * per_turn} later checkpoint(s) rewound" in r.stdout and "branch" not in r.stdout, (
        r.stdout
    )
    rewound = await svc.get_session(app_name="app", user_id="u1", session_id="s1")
    live = _apply_rewinds(rewound.events)
    assert [e.id for e in live] == [e.id for e in before.events[:per_turn]]
    head = cli_json(url, "show", tid, "--json")
    assert head["state"] == rewound.state
    assert message_parts(head["messages"]) == [
        ("user", "text", "weather in Paris?"),
        ("model", "call", "get_weather", {"city": "Paris"}),
        ("user", "response", "get_weather", {"city": "Paris", "temp": 15}),
        ("model", "text", "Paris: 15 degrees"),
    ]
    assert [t["args"] for t in head["tools_result"].values()] == [{"city": "Paris"}]
    # tree: the rewind event hangs under the step it rewound to; the rewound range is a fork
    tree = cli_json(url, "tree", tid, "--json")
    nodes = {n["step"]: n for n in tree["nodes"]}
    rewind_step = 3 * per_turn + 1
    assert nodes[rewind_step]["parent_id"] == nodes[per_turn]["id"] and "rewind" in nodes[rewind_step]["tags"]
    assert [s for s, n in sorted(nodes.items()) if "rewound" in n["tags"]] == list(
        range(per_turn + 1, rewind_step)
    )
    text = cli(url, "--no-color", "tree", tid).stdout
    assert f"fork ({2 * per_turn} checkpoints, not on the head's line)" in text, text

    # ADK resumes on the rewound session: what its model gets is agentctl's transcript
    SEEN.clear()
    await turn(svc, "weather in Lima?")
    after = await svc.get_session(app_name="app", user_id="u1", session_id="s1")
    assert len(SEEN) == 2  # the call, then the answer
    new = after.events[len(rewound.events) :]
    asked = [e for e in new if e.content and e.content.parts[0].text == "weather in Lima?"][0]
    responded = [e for e in new if e.get_function_responses()][0]
    steps = {e.id: n for n, e in enumerate(after.events, 1)}
    for contents, event in zip(SEEN, (asked, responded), strict=False):
        shown = cli_json(url, "show", f"{tid}@{steps[event.id]}", "--json")
        assert message_parts(shown["messages"]) == content_parts(contents)
    head = cli_json(url, "show", tid, "--json")
    assert head["state"] == after.state and after.state["cities"] == ["Paris", "Lima"]
    assert "Rome" not in str(head["messages"]) and "Oslo" not in str(head["messages"])
    assert [t["args"] for t in head["tools_result"].values()] == [{"city": "Paris"}, {"city": "Lima"}]
    # the rewound events stay in the thread, each tagged
    log = cli_json(url, "log", tid, "--json")
    assert sum("rewound" in m["tags"] for m in log) == 2 * per_turn
