"""`agentctl compare` on replays of LLM apps written by the frameworks' real packages:
every model call makes new message, tool-call, item, event and run ids, which compare
pairs by place and leaves out of the verdict (`--exact` compares them); steps are the
checkpoints' own; a branch of an SDK session (its first items copies of the line before
its fork point) parts where its own steps first differ."""

from __future__ import annotations

import uuid

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langchain_core")
pytest.importorskip("agents")
pytest.importorskip("google.adk")

import tests.formats.test_format_adk as fa  # noqa: E402
import tests.formats.test_langgraph_writes as lgw  # noqa: E402
from tests.formats.test_langgraph_writes import cfg  # noqa: E402
from tests.support.sampledb import cli, cli_json  # noqa: E402

lg = lgw.lg  # the fixture: an empty LangGraph database on SQLite and on Postgres
adk_db = fa.adk_db  # the fixture: (agentctl's URL, a DatabaseSessionService) on SQLite and on Postgres


def _chat_app(saver, answers: list[str]):
    """A LangGraph agent: a scripted chat model (new message, run and tool-call ids at
    every call, as a real model's) calling a `lookup` tool once, then answering with the
    next of `answers`."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    @tool
    def lookup(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    class Scripted(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            if not isinstance(messages[-1], ToolMessage):
                msg = AIMessage(
                    content="",
                    tool_calls=[
                        {"name": "lookup", "args": {"city": "Paris"}, "id": f"call_{uuid.uuid4().hex[:12]}"}
                    ],
                )
            else:
                msg = AIMessage(content=answers.pop(0))
            return ChatResult(generations=[ChatGeneration(message=msg)])

    model = Scripted()

    def agent(state):
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([lookup]))
    g.add_edge(START, "agent")
    g.add_conditional_edges(
        "agent", lambda s: "tools" if s["messages"][-1].tool_calls else END, ["tools", END]
    )
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=saver)


def _replay(graph, thread: str, step: int) -> tuple[str, str]:
    """LangGraph's own replay of the thread from its checkpoint at `step`: (the head
    before, the head after)."""
    before = graph.get_state(cfg(thread)).config["configurable"]["checkpoint_id"]
    at = [s for s in graph.get_state_history(cfg(thread)) if s.metadata["step"] == step][-1]
    graph.invoke(None, at.config)
    return before, graph.get_state(cfg(thread)).config["configurable"]["checkpoint_id"]


def test_a_replay_of_an_unchanged_llm_app_does_not_part_unless_exact(lg):
    url, saver = lg
    graph = _chat_app(saver, ["It is sunny in Paris.", "It is sunny in Paris."])
    graph.invoke({"messages": [("user", "Weather in Paris?")]}, cfg("t"))
    original, replay = _replay(graph, "t", 0)  # from the user's message: the model runs again
    # the frameworks' own view: the same contents but for the ids the model call made
    old = graph.get_state({"configurable": {"thread_id": "t", "checkpoint_id": original}}).values["messages"]
    new = graph.get_state(cfg("t")).values["messages"]
    assert [(m.type, m.content) for m in old] == [(m.type, m.content) for m in new]
    assert old[1].id != new[1].id and old[1].tool_calls[0]["id"] != new[1].tool_calls[0]["id"]
    assert new[2].tool_call_id == new[1].tool_calls[0]["id"]
    out = cli_json(url, "compare", original, replay)
    assert out["first_divergent_step"] is None and out["changes"] == [] and out["exact"] is False
    assert (out["a_steps"], out["b_steps"]) == (0, 0)
    r = cli(url, "compare", original, replay)
    assert r.exit_code == 0 and "do not part" in r.stdout
    # --exact: the ids part them, at the model's first call (B's step one on: the fork copy)
    exact = cli_json(url, "compare", original, replay, "--exact")
    assert exact["first_divergent_step"] == exact["b_step"] == 2 and exact["a_step"] == 1
    assert {c["path"] for c in exact["changes"]} == {"/messages/1/id", "/messages/1/tool_calls/0/id"}
    a_meta = [
        s
        for s in graph.get_state_history(cfg("t"))
        if s.config["configurable"]["checkpoint_id"] == exact["a"]
    ][0]
    b_meta = [
        s
        for s in graph.get_state_history(cfg("t"))
        if s.config["configurable"]["checkpoint_id"] == exact["b"]
    ][0]
    assert (a_meta.metadata["step"], b_meta.metadata["step"]) == (1, 2)


def test_a_replay_that_answers_otherwise_parts_with_the_checkpoints_own_steps(lg):
    url, saver = lg
    graph = _chat_app(saver, ["It is sunny in Paris.", "Paris: sunny."])
    graph.invoke({"messages": [("user", "Weather in Paris?")]}, cfg("t"))
    original, replay = _replay(graph, "t", 0)
    out = cli_json(url, "compare", original, replay)
    steps = {
        s.config["configurable"]["checkpoint_id"]: s.metadata["step"]
        for s in graph.get_state_history(cfg("t"))
    }
    # the answer (the model's second call) is what differs; the tool call's new ids are not
    assert (out["a_step"], out["b_step"]) == (steps[out["a"]], steps[out["b"]]) == (3, 4)
    assert out["first_divergent_step"] == 4
    changed = [c for c in out["changes"] if c["op"] == "changed"]
    assert [(c["old"], c["new"]) for c in changed] == [("It is sunny in Paris.", "Paris: sunny.")], out[
        "changes"
    ]
    r = cli(url, "compare", original, replay)
    assert r.stdout.startswith(f"parted at step 4: A {out['a']} (step 3), B {out['b']} (step 4);"), r.stdout


# ---- the OpenAI Agents SDK: a scripted Model, the SDK's own Runner and SQLiteSession ----


def _openai_agent():
    """An `Agent` whose scripted model calls `lookup` for the user's last message, then
    answers with its output; new item and call ids at every call, as a real model's."""
    from agents import Agent, function_tool
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    @function_tool
    def lookup(query: str) -> str:
        """Look something up."""
        return f"found: {query}"

    class Scripted(Model):
        async def get_response(self, system_instructions, input, *args, **kwargs):
            last = input[-1]
            if last.get("type") == "function_call_output":
                out = ResponseOutputMessage(
                    id=f"msg_{uuid.uuid4().hex}",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[
                        ResponseOutputText(type="output_text", text=str(last["output"]), annotations=[])
                    ],
                )
            else:
                text = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
                out = ResponseFunctionToolCall(
                    id=f"fc_{uuid.uuid4().hex}",
                    call_id=f"call_{uuid.uuid4().hex}",
                    name="lookup",
                    arguments=f'{{"query": "{text}"}}',
                    type="function_call",
                    status="completed",
                )
            return ModelResponse(output=[out], usage=Usage(), response_id=f"resp_{uuid.uuid4().hex}")

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    return Agent(name="helper", instructions="help", model=Scripted(), tools=[lookup])


async def _openai_turns(path: str, session_id: str, inputs: list[str]) -> list:
    from agents import Runner, SQLiteSession

    session = SQLiteSession(session_id, path)
    try:
        for text in inputs:
            await Runner.run(_openai_agent(), text, session=session)
        return await session.get_items()
    finally:
        session.close()


def _branch(path: str, ref: str, name: str) -> str:
    r = cli(path, "branch", ref, name)
    assert r.exit_code == 0, r.stderr
    return r.stdout.split()[0] if r.stdout.split()[0] != "branched" else r.stdout.split()[1]


async def test_openai_a_replay_in_a_branch_does_not_part_and_a_branch_parts_at_its_own_step(tmp_path):
    path = str(tmp_path / "sdk.db")
    original = await _openai_turns(path, "conv-1", ["Paris weather", "Lyon weather"])
    assert len(original) == 8  # a turn: the user's message, the call, its output, the answer
    # a replay of turn 2: a branch at the end of turn 1, the same input run on it
    replay = _branch(path, "conv-1@4", "again")
    items = await _openai_turns(path, replay, ["Lyon weather"])
    strip = [{k: v for k, v in i.items() if k not in ("id", "call_id")} for i in items]
    assert strip == [{k: v for k, v in i.items() if k not in ("id", "call_id")} for i in original]
    assert items[5]["call_id"] != original[5]["call_id"] and items[6]["call_id"] == items[5]["call_id"]
    out = cli_json(path, "compare", "conv-1", replay)
    assert out["first_divergent_step"] is None and out["common_steps"] == 8, out
    assert (out["a_steps"], out["b_steps"]) == (0, 0)
    exact = cli_json(path, "compare", "conv-1", replay, "--exact")
    # --exact: the session ids differ from the branch's first own item on (5)
    assert (exact["first_divergent_step"], exact["a_step"], exact["b_step"]) == (5, 5, 5)
    assert [(c["path"], c["new"]) for c in exact["changes"]] == [("/session_id", replay)]
    # a branch at step 6 (`branch conv-1@6 wifi`), another input run on it: it parts at 7
    wifi = _branch(path, "conv-1@6", "wifi")
    await _openai_turns(path, wifi, ["wifi please"])
    out = cli_json(path, "compare", "conv-1", wifi)
    assert (out["first_divergent_step"], out["a_step"], out["b_step"], out["common_steps"]) == (7, 7, 7, 6), (
        out
    )
    assert out["fork_point"] == cli_json(path, "show", "conv-1@6")["metadata"]["checkpoint_id"]
    # the branch's copies (items 1..6) are not steps of their own; one of them stands for
    # its original
    assert cli_json(path, "compare", "conv-1", f"{wifi}@3")["first_divergent_step"] is None
    # a branch of the branch (its items 1..8 copies of the branch's line)
    deeper = _branch(path, f"{wifi}@8", "deeper")
    await _openai_turns(path, deeper, ["something else"])
    out = cli_json(path, "compare", wifi, deeper)
    assert (out["first_divergent_step"], out["common_steps"]) == (9, 8), out
    assert cli_json(path, "compare", "conv-1", deeper)["first_divergent_step"] == 7


# ---- Google ADK: a scripted BaseLlm, ADK's own Runner and DatabaseSessionService ------


def _adk_agent():
    """An `LlmAgent` whose scripted model calls `lookup` for the user's text, then
    answers with its result; ADK makes new event, invocation and function-call ids."""
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    def lookup(query: str) -> str:
        """Look something up."""
        return f"found: {query}"

    class Scripted(BaseLlm):
        async def generate_content_async(self, llm_request, stream=False):
            part = llm_request.contents[-1].parts[-1]
            if part.function_response is not None:
                text = str(part.function_response.response.get("result"))
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
            else:
                call = types.FunctionCall(id=f"adk-{uuid.uuid4()}", name="lookup", args={"query": part.text})
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))

    return LlmAgent(name="helper", model=Scripted(model="scripted"), instruction="help", tools=[lookup])


async def _adk_turns(svc, session_id: str, inputs: list[str]) -> list:
    from google.adk.runners import Runner
    from google.genai import types

    if await svc.get_session(app_name="app", user_id="u1", session_id=session_id) is None:
        await svc.create_session(app_name="app", user_id="u1", session_id=session_id)
    runner = Runner(app_name="app", agent=_adk_agent(), session_service=svc)
    for text in inputs:
        async for _ in runner.run_async(
            user_id="u1",
            session_id=session_id,
            new_message=types.Content(role="user", parts=[types.Part(text=text)]),
        ):
            pass
    return (await svc.get_session(app_name="app", user_id="u1", session_id=session_id)).events


def _content(events) -> list:
    """The events as ADK gives them, without the ids and times it generates."""
    out = []
    for e in events:
        part = e.content.parts[0].model_dump(exclude_none=True)
        for kind in ("function_call", "function_response"):
            if kind in part:
                part[kind].pop("id")
        out.append((e.author, part))
    return out


async def test_adk_a_replay_in_a_branch_does_not_part_and_a_branch_parts_at_its_own_step(adk_db):
    url, svc = adk_db
    original = await _adk_turns(svc, "conv-1", ["Paris weather", "Lyon weather"])
    assert len(original) == 8  # a turn: the user's message, the call, its response, the answer
    replay = _branch(url, "app/u1/conv-1@4", "again")
    events = await _adk_turns(svc, replay.split("/")[-1], ["Lyon weather"])
    assert _content(events) == _content(original)
    assert events[5].invocation_id != original[5].invocation_id
    out = cli_json(url, "compare", "app/u1/conv-1", replay)
    assert out["first_divergent_step"] is None and out["common_steps"] == 8, out
    exact = cli_json(url, "compare", "app/u1/conv-1", replay, "--exact")
    assert (exact["first_divergent_step"], exact["a_step"], exact["b_step"]) == (5, 5, 5)
    assert "/4/invocation_id" in {c["path"] for c in exact["changes"]}
    wifi = _branch(url, "app/u1/conv-1@6", "wifi")
    await _adk_turns(svc, wifi.split("/")[-1], ["wifi please"])
    out = cli_json(url, "compare", "app/u1/conv-1", wifi)
    assert (out["first_divergent_step"], out["a_step"], out["b_step"], out["common_steps"]) == (7, 7, 7, 6), (
        out
    )
    assert out["fork_point"] == original[5].id
    assert cli_json(url, "compare", "app/u1/conv-1", f"{wifi}@3")["first_divergent_step"] is None


def test_paired_pairs_generated_ids_by_place_and_nothing_else():
    """`paired`: ids pair one to one at the same places (a tool result naming its call
    still names it), times are left out; a tool result naming another call, or an `id`
    of the user's own (an order's), still differs."""
    from agentctl.compare import paired

    def run(call_a: str, call_b: str, answer_to: str, order: str, at: str) -> dict:
        return {
            "messages": [
                {
                    "role": "assistant",
                    "id": "m1-" + call_a,
                    "tool_calls": [
                        {"id": call_a, "name": "f", "arguments": {}},
                        {"id": call_b, "name": "g", "arguments": {}},
                    ],
                },
                {"role": "tool", "id": "t-" + answer_to, "tool_call_id": answer_to, "content": "ok"},
                {"type": "reasoning", "id": "rs_" + call_a, "summary": []},
            ],
            "order": {"id": order, "status": "open"},
            "timestamp": at,
        }

    a = run("c1", "c2", "c1", "A-1", "2026-01-01T00:00:00")
    assert paired(a) == paired(run("x9", "x8", "x9", "A-1", "2027-05-05T00:00:00"))
    assert paired(a) != paired(run("x9", "x8", "x8", "A-1", "2026-01-01T00:00:00"))  # answers the other call
    assert paired(a) != paired(run("c1", "c2", "c1", "A-2", "2026-01-01T00:00:00"))  # the user's own id
    assert list(paired(a)["messages"][0]) == ["role", "id", "tool_calls"]  # keys in their order
