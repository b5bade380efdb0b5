"""The TUI's compare view on a replay of an LLM app (a real LangGraph graph with a
scripted chat model): it shows compare's result, the model's new ids paired by place,
each checkpoint at the divergence with its own step."""

from __future__ import annotations

import sqlite3

import pytest

pytest.importorskip("langgraph")

from agentctl.tui.app import AgentctlApp  # noqa: E402
from agentctl.tui.screens.compare import CompareScreen  # noqa: E402
from tests.formats.test_compare_llm import _chat_app, _replay  # noqa: E402
from tests.formats.test_langgraph_writes import cfg  # noqa: E402
from tests.support.tui import settle  # noqa: E402
from tests.tui.test_tui import SIZE, screen_text, until  # noqa: E402


def _db(tmp_path, answers: list[str]) -> tuple[str, str, str]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = str(tmp_path / "llm.db")
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        graph = _chat_app(SqliteSaver(conn), answers)
        graph.invoke({"messages": [("user", "Weather in Paris?")]}, cfg("t"))
        original, replay = _replay(graph, "t", 0)
    finally:
        conn.close()
    return path, original, replay


@pytest.mark.parametrize(
    "answers,expect",
    [
        (["It is sunny in Paris.", "It is sunny in Paris."], ["the runs do not part"]),
        (
            ["It is sunny in Paris.", "Paris: sunny."],
            ["parted at step 4", "(step 3)", "(step 4)", "Paris: sunny."],
        ),
    ],
)
async def test_the_compare_view_of_a_replay(tmp_path, answers, expect):
    path, original, replay = _db(tmp_path, answers)
    app = AgentctlApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        main = app.screen
        db = await main.source.ready()
        main.compare(await db.get_metadata(original), await db.get_metadata(replay))
        await until(
            pilot,
            lambda: isinstance(app.screen, CompareScreen) and expect[0] in screen_text(app),
            what="the compare view, drawn",
        )
        text = screen_text(app)
        for want in expect:
            assert want in text, text
        assert "lc_run" not in text  # the ids that only pair are not listed
