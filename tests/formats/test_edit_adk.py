"""`agentctl edit` on Google ADK sessions (DatabaseSessionService, no model): an event
appended with `actions.state_delta` (author "user"), `app:` / `user:` keys into
app_states / user_states as ADK puts them; `get_session` shows the new state, a service
holding the old session gets ADK's stale-session error; undo puts every row back."""

from __future__ import annotations

import pytest

pytest.importorskip("google.adk")

from google.adk.events import Event  # noqa: E402

import tests.formats.test_format_adk as fa  # noqa: E402
from tests.formats.test_format_adk import INITIAL, _text, conversation, dump  # noqa: E402
from tests.formats.test_run_adk import _service  # noqa: E402
from tests.support import dbcopy  # noqa: E402
from tests.support.sampledb import cli, cli_json  # noqa: E402

adk_db = fa.adk_db  # the fixture: (agentctl's URL, a DatabaseSessionService) on SQLite and on Postgres
db_copy = dbcopy.db_copy  # the fixture: copy(url) -> a copy's URL (the framework's reference)


async def _adks_own_edit(url: str, delta: dict) -> tuple:
    """ADK's own change of state outside a turn, on a database: an event by "user"
    with the state delta. (events, state of s1, state of s2) after it."""
    from google.adk.events import EventActions

    async with _service(url) as svc:
        s = await svc.get_session(app_name="app", user_id="u1", session_id="s1")
        await svc.append_event(
            s, Event(author="user", invocation_id="edit", actions=EventActions(state_delta=delta))
        )
        return await _seen(svc)


async def _seen(svc) -> tuple:
    s1 = await svc.get_session(app_name="app", user_id="u1", session_id="s1")
    s2 = await svc.get_session(app_name="app", user_id="u1", session_id="s2")
    return ([(e.author, e.actions.state_delta) for e in s1.events], s1.state, s2.state)


async def test_edit_appends_a_state_delta_event_as_adk_does_and_undo_restores_every_row(adk_db, db_copy):
    from google.adk.errors._stale_session_error import StaleSessionError

    url, svc = adk_db
    s = await svc.create_session(app_name="app", user_id="u1", session_id="s1", state=dict(INITIAL))
    for ev in conversation():
        await svc.append_event(s, ev)
    await svc.create_session(app_name="app", user_id="u1", session_id="s2")
    held = await svc.get_session(app_name="app", user_id="u1", session_id="s1")
    before = await dump(url)
    copy = db_copy(url)
    n = len(held.events)
    sets = [
        "--set",
        "init=41",
        "--set",
        "nested.a.1=7",
        "--set",
        'user:lang="de"',
        "--set",
        'app:theme="light"',
    ]
    plan = cli_json(url, "edit", f"app/u1/s1@{n}", *sets, "--dry-run")
    assert sorted(c["path"] for c in plan["changes"]) == ["/app:theme", "/init", "/nested/a/1", "/user:lang"]
    assert await dump(url) == before
    r = cli(url, "edit", f"app/u1/s1@{n}", *sets, "--yes")
    assert r.exit_code == 0, r.stderr
    got = await svc.get_session(app_name="app", user_id="u1", session_id="s1")
    assert len(got.events) == n + 1 and got.events[-1].author == "user"
    assert got.events[-1].actions.state_delta == {
        "init": 41,
        "nested": {"a": [1, 7]},
        "user:lang": "de",
        "app:theme": "light",
    }
    assert got.state["init"] == 41 and got.state["nested"] == {"a": [1, 7]}
    assert got.state["user:lang"] == "de" and got.state["app:theme"] == "light"
    other = await svc.get_session(app_name="app", user_id="u1", session_id="s2")
    assert other.state["user:lang"] == "de" and other.state["app:theme"] == "light"  # shared, as in ADK
    # what ADK's own append_event of that delta gives on a copy: the same events and states
    assert await _seen(svc) == await _adks_own_edit(
        copy, {"init": 41, "nested": {"a": [1, 7]}, "user:lang": "de", "app:theme": "light"}
    )
    with pytest.raises(StaleSessionError):  # ADK's own error; it wrote nothing
        await svc.append_event(
            held, Event(author="user", invocation_id="inv-x", content=_text("user", "late"))
        )
    r = cli(url, "undo")
    assert r.exit_code == 0, r.stderr
    assert await dump(url) == before  # every row as it was
    assert (await svc.get_session(app_name="app", user_id="u1", session_id="s1")).state == held.state

    # an edit, then ADK appends to the session: undo refuses, one line, nothing changed
    assert cli(url, "edit", "app/u1/s1@2", "--set", "init=5", "--yes").exit_code == 0
    fresh = await svc.get_session(app_name="app", user_id="u1", session_id="s1")
    assert fresh.state["init"] == 5
    await svc.append_event(fresh, Event(author="user", invocation_id="inv-y", content=_text("user", "later")))
    rows = await dump(url)
    r = cli(url, "undo")
    assert r.exit_code != 0 and "changed since" in r.stderr and r.stderr.count("\n") == 1
    assert await dump(url) == rows


async def test_edit_errors_exit_2_and_write_nothing(adk_db):
    url, svc = adk_db
    s = await svc.create_session(app_name="app", user_id="u1", session_id="s1", state=dict(INITIAL))
    for ev in conversation():
        await svc.append_event(s, ev)
    before = await dump(url)
    for args, words in (
        (["--set", "nokey.x=1"], "no key 'nokey'"),
        (["--set", "init"], "use KEY=JSON"),
        (["--set", "init={bad"], "not JSON"),
    ):
        r = cli(url, "edit", "app/u1/s1@2", *args, "--yes")
        assert r.exit_code == 2 and words in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert await dump(url) == before


async def _session(svc) -> None:
    s = await svc.create_session(app_name="app", user_id="u1", session_id="s1", state=dict(INITIAL))
    for ev in conversation():
        await svc.append_event(s, ev)
    await svc.create_session(app_name="app", user_id="u1", session_id="s2")


async def test_edit_adds_a_key_as_adks_own_and_names_the_keys_show_has(adk_db, db_copy):
    """Issue 32.10: ADK's state is a free mapping, so `edit --set` may add a key
    (session, `user:` or `app:`), as ADK's own append_event of that delta does on a
    copy. A nested key under a key that is not there: the error lists the keys `show`
    has, the `app:`/`user:` keys first set later (unknown at that step) among them."""
    url, svc = adk_db
    await _session(svc)
    r = cli(url, "edit", "app/u1/s1@2", "--set", "nokey.x=1", "--yes")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert all(k in r.stderr for k in cli_json(url, "show", "app/u1/s1@2", "--json")["state"]), r.stderr
    assert "app:count" in r.stderr and "user:seen" in r.stderr, r.stderr
    copy = db_copy(url)
    r = cli(
        url,
        "edit",
        "app/u1/s1",
        "--set",
        'fresh={"n": 1}',
        "--set",
        'user:plan="pro"',
        "--set",
        'app:mode="beta"',
        "--yes",
    )
    assert r.exit_code == 0, r.stderr
    assert await _seen(svc) == await _adks_own_edit(
        copy, {"fresh": {"n": 1}, "user:plan": "pro", "app:mode": "beta"}
    )
    got = await svc.get_session(app_name="app", user_id="u1", session_id="s1")
    assert (
        got.state["fresh"] == {"n": 1} and got.state["user:plan"] == "pro" and got.state["app:mode"] == "beta"
    )


async def test_edit_unset_alone_is_a_none_delta_as_adks_own(adk_db, db_copy):
    """Issue 33.25: `--unset KEY` alone is an edit: an event whose state_delta is
    `KEY: None`, which ADK's append_event keeps in the state as None (`state.update`),
    so the plan says null, not removed, and `show` gives what get_session gives. It
    equals ADK's own append_event of that delta on a copy. Unsetting it again changes
    nothing: exit 2, nothing written."""
    url, svc = adk_db
    await _session(svc)
    copy = db_copy(url)
    plan = cli_json(url, "edit", "app/u1/s1", "--unset", "counter", "--unset", "user:seen", "--dry-run")
    assert [(c["path"], c["op"], c.get("new")) for c in plan["changes"]] == [
        ("/counter", "changed", None),
        ("/user:seen", "changed", None),
    ]
    r = cli(url, "edit", "app/u1/s1", "--unset", "counter", "--unset", "user:seen", "--yes")
    assert r.exit_code == 0, r.stderr
    got = await svc.get_session(app_name="app", user_id="u1", session_id="s1")
    assert got.events[-1].actions.state_delta == {"counter": None, "user:seen": None}
    assert got.state["counter"] is None and got.state["user:seen"] is None  # as ADK keeps them
    assert await _seen(svc) == await _adks_own_edit(copy, {"counter": None, "user:seen": None})
    assert cli_json(url, "show", "app/u1/s1", "--json")["state"] == got.state
    before = await dump(url)
    r = cli(url, "edit", "app/u1/s1", "--unset", "counter", "--yes")
    assert r.exit_code == 2 and "changes nothing" in r.stderr, r.stderr
    assert await dump(url) == before
