"""Test rig: every backend test runs on SQLite AND a real Postgres server.

Postgres: `AGENTCTL_TEST_PG_DSN` if set, else a throwaway server started here
(tests/support/pgserver.py). Without server binaries the Postgres tests skip with the reason,
except when `AGENTCTL_REQUIRE_PG=1`, where that is an error.
Each test gets a fresh SQLite file or a fresh Postgres schema (via `search_path`).

The fast tier, `python -m pytest -m "not slow"`, is the suite without the tests marked
`slow` here (pytest_collection_modifyitems): those on Postgres, on the Node rig, on the
CrewAI rig, in the browser, the reliability suite, the stores' TUI suites, and those that
run an agent framework's round trips (see SLOW_FILES). A Postgres server or the Node rig asked for in the fast tier is an error
(`fast_tier_refuses`): what needs one must be marked.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from tests.support import pgserver

# (autouse: the folder where CrewAI writes its files once per test run)
from tests.support.crewairig import run_folder  # noqa: F401
from tests.support.rig import SAMPLE_DB, fast_tier_refuses, pg_execute, unavailable, with_search_path

#: the fixtures whose tests are `slow`: a Postgres server, the Node rig (npm ci, node),
#: the CrewAI rig (crewai run in a venv of its own, tests/support/crewairig.py)
SLOW_FIXTURES = frozenset({"pg_base_dsn", "pg_dsn", "node_modules", "crewai_python"})
#: the parameters (a test id's parts) whose tests are `slow`: the Postgres half of a
#: test run on both backends; CrewAI's stores in the one list of stores (their files are
#: written by CrewAI in its own venv, once per test run)
SLOW_PARAMS = frozenset({"postgres", "pg", "crewai"})
#: what is `slow` besides: a folder (ending in /), a file, a test (FILE::NAME) or one
#: of its parameters (FILE::NAME[ID]): a
#: framework's round trips (its real package running an agent, in a child process),
#: the reliability suite (crashes, live writers, hostile rows and 50 MB values, other
#: processes holding locks), fuzzing, the browser, the checks that build venvs, wheels
#: or the manual
SLOW_FILES = frozenset(
    {
        # an agent framework run by agentctl's run / edit / compare, in a child process
        "tests/formats/test_run.py",
        "tests/formats/test_run_adk.py",
        "tests/formats/test_run_apps.py",
        "tests/formats/test_run_openai.py",
        "tests/formats/test_run_langgraphjs.py",
        "tests/formats/test_adk_app.py",
        "tests/formats/test_run_crewai.py",
        "tests/formats/test_compare.py",
        "tests/formats/test_compare_llm.py",
        "tests/formats/test_edit.py",
        "tests/formats/test_edit_adk.py",
        "tests/formats/test_edit_langgraph_nograph.py",
        "tests/formats/test_run_agno.py",
        # the frameworks' own packages (Agno, the OpenAI Agents SDK, ADK) going on after
        # agentctl's writes, with every undo and redo
        "tests/formats/test_journal_agno.py",
        "tests/formats/test_journal_openai.py",
        "tests/formats/test_journal_adk.py",
        "tests/formats/test_format_agno.py",
        "tests/tui/test_format_agno_tui.py",
        # a failure injected at every statement of a write, an undo, a redo, a migration
        "tests/formats/test_journal_article.py::test_write_undo_redo_are_atomic",
        "tests/formats/test_journal_article.py::test_migration_is_atomic",
        "tests/tui/test_format_agno_tui.py::test_R_on_an_agno_session_asks_the_users_message_runs_the_agent_and_u_undoes",
        "tests/cli/test_help_examples.py::test_help_examples_work_on_a_fresh_clone[edit]",
        "tests/cli/test_help_examples.py::test_help_examples_work_on_a_fresh_clone[run]",
        "tests/cli/test_cli_write_opens.py::test_edit_through_the_graph_and_run_open_it_once",
        "tests/cli/test_cli_json_shapes.py::test_edit_through_the_graph_prints_the_plans_keys",
        # LangGraph's own serializer writing the checkpoint
        "tests/formats/test_langgraph_serde.py::test_show_imports_no_module_named_in_a_checkpoint",
        "tests/tui/test_tui_edit_run.py",
        "tests/tui/test_tui_compare_llm.py",
        "tests/cli/test_story.py",
        # the TUI on every store (a Pilot session per format) and every store's snapshots:
        # tests/tui/test_tui.py is the fast tier's TUI
        "tests/formats/contract/test_tui.py",
        "tests/tui/test_snapshots_stores.py",
        # LangGraph.js (the Node rig); a LangGraph program writing beside agentctl's index
        "tests/formats/test_langgraphjs_rig.py",
        "tests/formats/test_langgraphjs_writes.py",
        "tests/formats/test_search_index_sdk_lg.py",
        # other processes, big values, hostile rows, fuzzing, the Hypothesis state machine
        "tests/reliability/",
        "tests/engine/test_engine_stateful.py",
        "tests/engine/test_prune_speed_shape.py",
        "tests/unit/test_jsonb.py::test_fuzz_mutated_blobs",
        "tests/unit/test_jsonb.py::test_fuzz_encode_is_sqlite_jsonb_and_decode_its_inverse",
        # the browser; venvs, wheels, the manual, a pytest run in a child process, every help
        "tests/tui/test_serve.py::test_serve_shows_the_thread_list_in_a_browser",
        "tests/tui/test_crewai_tui.py::test_serve_shows_each_crewai_store_in_a_browser",
        "tests/tui/test_crewai_tui.py::test_R_resumes_a_crewai_checkpoint_then_compares_and_undoes",
        "tests/tui/test_crewai_tui.py::test_R_kicks_a_persisted_crewai_flow_off",
        "tests/tui/test_serve.py::test_serve_shows_an_agno_database_in_a_browser",
        "tests/structure/test_plugins.py",
        "tests/structure/test_docs.py",
        "tests/structure/test_suite_shutdown.py",
        "tests/cli/test_cli_registry.py::test_a_summary_shortens_as_the_whole_help_does",
    }
)


def _listed(nodeid: str) -> bool:
    file, test = nodeid.split("::")[0], nodeid.split("[")[0]
    return any(p in (file, test, nodeid) or (p.endswith("/") and nodeid.startswith(p)) for p in SLOW_FILES)


def _slow(item: pytest.Item) -> bool:
    if item.get_closest_marker("pg") is not None or SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is not None and SLOW_PARAMS & set(callspec.id.split("-")):
        return True
    return _listed(item.nodeid)


def pytest_collection_modifyitems(config, items):
    """Mark the full suite's slow tests `slow` (the fast tier leaves them out)."""
    for item in items:
        if _slow(item):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    """Bytecode is kept even on a machine with PYTHONDONTWRITEBYTECODE set (as in a
    container), where every process would otherwise compile again what the last one did:
    - agentctl's modules, compiled before the tests (those not yet or no longer up to
      date; Python checks a .pyc against its source): the suite starts `python -m
      agentctl` and the runners' children hundreds of times (~0.1-0.2 s of CPU each);
    - the test modules as pytest rewrote them for their asserts (tests/**/__pycache__,
      `*-pytest-*.pyc`, as pytest does by default), kept while they are collected: each
      worker would rewrite them all again on every run (some 10 s of CPU a worker).
    A checkout nobody may write compiles in each process, as before."""
    import compileall
    import sys

    try:
        compileall.compile_dir(str(Path(__file__).resolve().parent.parent / "agentctl"), quiet=2)
    except OSError:
        pass
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = before


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: half as many workers again as cores, one more at least (3 on 2 cores). Much of
    the suite waits rather than computes (a lock held by another process until a timeout,
    a framework's child process starting, a Postgres round trip, a TUI settling): with a
    worker per core, the cores idle through those waits (the whole suite on 2 cores, in
    session 16: 10:48 with 2 workers, 9:38 with 3, 9:27 with 4). PYTEST_XDIST_AUTO_NUM_WORKERS
    still decides when set (xdist's own rule)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores + max(1, cores // 2)


@pytest.fixture(scope="session")
def pg_base_dsn(request):
    fast_tier_refuses(request, "a Postgres server")
    dsn = os.environ.get("AGENTCTL_TEST_PG_DSN")
    if dsn:
        yield dsn
        return
    if pgserver.find_bin_dir() is None:
        unavailable(
            "Postgres server binaries (initdb, pg_ctl) not found; set AGENTCTL_TEST_PG_DSN "
            "or install postgresql"
        )
    try:
        server = pgserver.start()
    except RuntimeError as exc:
        unavailable(f"the Postgres server did not start: {exc}")
    yield server.dsn
    server.stop()


@pytest.fixture
def pg_dsn(pg_base_dsn):
    """A DSN whose search_path is a fresh, empty schema (dropped afterwards)."""
    schema = "t_" + uuid.uuid4().hex[:12]
    pg_execute(pg_base_dsn, f"CREATE SCHEMA {schema}")
    yield with_search_path(pg_base_dsn, schema)
    pg_execute(pg_base_dsn, f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request, tmp_path) -> str:
    """A database URL of each kind, not yet created: a file path or a Postgres DSN."""
    if request.param == "sqlite":
        return str(tmp_path / "checkpoints.db")
    return request.getfixturevalue("pg_dsn")


@pytest.fixture
def sample_copy(tmp_path) -> Path:
    """A private copy of the bundled sample database."""
    dest = tmp_path / "sample.db"
    shutil.copyfile(SAMPLE_DB, dest)
    return dest


@pytest.fixture
async def backend(db_url):
    """A connected read-write backend on a fresh database of each kind (created)."""
    from agentctl.backends import make_backend

    b = make_backend(db_url, readonly=False, create=True)
    await b.connect()
    yield b
    await b.close()


@pytest.fixture
def engine(backend):
    """A seeded engine (reproducible ids and clock, no automatic GC) over `backend`."""
    from tests.support.engine_helpers import make_engine

    return make_engine(backend)


@pytest.fixture(autouse=True)
def _collect_young_only():
    """The garbage collector looks only at what each test makes: what was alive before it
    (every framework's modules, the caches Textual keeps across apps, the session's
    fixtures) is frozen for the test (gc.freeze) and goes back to the oldest generation
    after it. With every framework imported, each collection of the oldest generation
    walked the whole heap (~0.25 s; the TUI tests set one off every second or so: a third
    of their CPU time). A test's own garbage is collected as before."""
    import gc

    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """The run's last garbage collections, here rather than after it. pytest collects
    garbage five times once the session is over (to report exceptions ignored in
    finalizers); under xdist that is after the worker said it finished, and execnet
    sends a worker still busy 5 s later a SIGINT, whose KeyboardInterrupt then lands
    in whatever runs (hypothesis' gc callback: a PytestUnraisableExceptionWarning at
    the end of the run). With ~500,000 objects left by the TUI tests (Textual keeps up
    to 1024 StylesCaches and their lines in an lru_cache) each collection takes 0.1 to
    1 s on a busy machine. So collect here, inside the session (after the session
    fixtures' teardown: trylast), and freeze what is left: pytest's collections then
    look only at what is made after this, and still report what these collections
    found (exceptions in finalizers go to its unraisable hook now as then)."""
    import gc

    for _ in range(5):  # pytest's count; stop when nothing more is collected
        if not gc.collect():
            break
    gc.freeze()
