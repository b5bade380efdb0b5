"""Make the bundled samples of the two SDKs' session stores, written through the SDKs'
own APIs (no model is called):

- sample_db/openai_agents.db: `SQLiteSession` conversations (messages, function calls
  and outputs, reasoning) and an `AdvancedSQLiteSession` with a branch and turn usage;
- sample_db/adk.db: `DatabaseSessionService` sessions with an initial state and events
  carrying text, function calls and responses, app/user/session state deltas, an
  artifact and an error.

    pip install -e '.[test]' && python sample_db/make_sdk_samples.py
    agentctl --db sample_db/openai_agents.db show weather-1@4
    agentctl --db sample_db/adk.db diff trip-planner/alice/s-1@1 trip-planner/alice/s-1@6
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent


def _weather(city: str, call: str, answer: str) -> list[dict]:
    return [
        {"role": "user", "content": f"What is the weather in {city}?"},
        {
            "type": "reasoning",
            "id": f"rs_{call}",
            "summary": [{"type": "summary_text", "text": f"I should call get_weather for {city}."}],
        },
        {
            "type": "function_call",
            "call_id": call,
            "name": "get_weather",
            "arguments": json.dumps({"city": city}),
            "id": f"fc_{call}",
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": call, "output": answer},
        {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{call}",
            "status": "completed",
            "content": [{"type": "output_text", "text": f"In {city}: {answer}.", "annotations": []}],
        },
    ]


async def openai_sample(path: str) -> None:
    from agents import SQLiteSession
    from agents.extensions.memory import AdvancedSQLiteSession
    from agents.usage import Usage

    s = SQLiteSession("weather-1", path)
    await s.add_items(_weather("Paris", "call_1", "sunny, 21°C"))
    await s.add_items(_weather("Lyon", "call_2", "light rain, 14°C"))
    s.close()
    t = SQLiteSession("support-7", path)
    await t.add_items(
        [
            {"role": "system", "content": "You are a support agent."},
            {"role": "user", "content": "My order #4411 has not arrived."},
            {
                "type": "function_call",
                "call_id": "call_o",
                "name": "lookup_order",
                "arguments": json.dumps({"order": 4411}),
            },
            {
                "type": "function_call_output",
                "call_id": "call_o",
                "output": json.dumps({"status": "shipped"}),
            },
            {"role": "assistant", "content": "It shipped yesterday; it should arrive tomorrow."},
        ]
    )
    t.close()
    a = AdvancedSQLiteSession(session_id="planner-3", db_path=path, create_tables=True)
    await a.add_items(
        [
            {"role": "user", "content": "Plan a day in Rome."},
            {"role": "assistant", "content": "Morning: the Colosseum. Afternoon: Trastevere."},
        ]
    )
    await a.store_run_usage(
        SimpleNamespace(
            context_wrapper=SimpleNamespace(
                usage=Usage(requests=1, input_tokens=120, output_tokens=40, total_tokens=160)
            )
        )
    )
    await a.add_items(
        [
            {"role": "user", "content": "Make it cheaper."},
            {"role": "assistant", "content": "Skip the guided tour; walk the Forum."},
        ]
    )
    await a.create_branch_from_turn(2, "museums")
    await a.add_items(
        [
            {"role": "user", "content": "Add museums instead."},
            {"role": "assistant", "content": "The Vatican Museums in the afternoon."},
        ]
    )
    a.close()


async def adk_sample(path: str) -> None:
    from google.adk.events import Event, EventActions
    from google.adk.sessions import DatabaseSessionService
    from google.genai import types

    def text(role: str, body: str) -> types.Content:
        return types.Content(role=role, parts=[types.Part(text=body)])

    t0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
    svc = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")
    s = await svc.create_session(
        app_name="trip-planner",
        user_id="alice",
        session_id="s-1",
        state={"budget": 500, "app:currency": "EUR", "user:home": "Lyon"},
    )
    call = types.FunctionCall(id="fc-1", name="search_trains", args={"to": "Rome"})
    resp = types.FunctionResponse(id="fc-1", name="search_trains", response={"price": 89})
    events = [
        Event(author="user", invocation_id="inv-1", content=text("user", "Find me a train to Rome.")),
        Event(
            author="planner",
            invocation_id="inv-1",
            content=types.Content(role="model", parts=[types.Part(function_call=call)]),
        ),
        Event(
            author="planner",
            invocation_id="inv-1",
            content=types.Content(role="user", parts=[types.Part(function_response=resp)]),
            actions=EventActions(
                state_delta={"train_price": 89, "app:searches": 1, "user:last_destination": "Rome"},
                artifact_delta={"itinerary.pdf": 0},
            ),
        ),
        Event(
            author="planner",
            invocation_id="inv-1",
            content=text("model", "A train at 89 EUR."),
            actions=EventActions(state_delta={"budget_left": 411}),
        ),
        Event(author="user", invocation_id="inv-2", content=text("user", "Book it.")),
        Event(
            author="planner",
            invocation_id="inv-2",
            error_code="PAYMENT_DECLINED",
            error_message="the card was declined",
        ),
        Event(
            author="planner",
            invocation_id="inv-2",
            content=text("model", "Your card was declined."),
            actions=EventActions(state_delta={"booking": "failed", "app:searches": 2}),
        ),
    ]
    for i, ev in enumerate(events):
        ev.id = f"ev-{i + 1:02d}"
        ev.timestamp = t0 + i
        await svc.append_event(s, ev)
    b = await svc.create_session(app_name="trip-planner", user_id="bob", session_id="s-2", state={})
    ev = Event(
        author="user", invocation_id="inv-9", content=text("user", "Hello!"), id="ev-b1", timestamp=t0 + 100
    )
    await svc.append_event(b, ev)
    await svc.close()


def main() -> None:
    for name, make in (("openai_agents.db", openai_sample), ("adk.db", adk_sample)):
        path = str(HERE / name)
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        asyncio.run(make(path))
        conn = sqlite3.connect(path)  # one self-contained file, no WAL beside it
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute("VACUUM")
        conn.close()
        print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
