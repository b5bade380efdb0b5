"""Option values are converted without pydantic (agentctl.cli.coercion), with the same
results and messages as Typer's own conversion."""

from __future__ import annotations

import subprocess
import sys

from tests.support.rig import REPO

# A Typer app with each kind of option agentctl uses, run through CliRunner with and
# without agentctl's conversion (in two fresh interpreters: install() patches Typer).
PROBE = r"""
import sys
from typing import Annotated, Optional
import typer
from typer.testing import CliRunner
if sys.argv[1] == "plain":
    from agentctl.cli import coercion
    coercion.install()
app = typer.Typer()
@app.command()
def f(name: Annotated[Optional[str], typer.Option("--name")] = None,
      n: Annotated[int, typer.Option("-n", min=1, max=10)] = 5,
      x: Annotated[float, typer.Option("-x")] = 1.5,
      flag: Annotated[bool, typer.Option("--flag/--no-flag", envvar="FLAG")] = False,
      tags: Annotated[Optional[list[str]], typer.Option("--tag")] = None,
      arg: Annotated[Optional[str], typer.Argument()] = None):
    print("OK", repr(name), repr(n), repr(x), flag, tags, repr(arg))
runner = CliRunner()
cases = [[], ["--name", "a b", "-n", " 3", "-x", "2", "--tag", "a", "--tag", "b", "zz"],
         ["-n", "x"], ["-n", "0"], ["-n", "11"], ["-n", "3.0"], ["-n", "3.5"], ["-x", "y"],
         ["-x", "1e3"], ["--flag"], ["--no-flag"]]
for args in cases:
    for env in ({}, {"FLAG": "yes"}, {"FLAG": " off "}, {"FLAG": "maybe"}):
        r = runner.invoke(app, args, env=env, terminal_width=400)
        lines = [l.strip(" │") for l in r.output.splitlines() if "OK" in l or "Invalid" in l]
        print(args, env, r.exit_code, lines)
print("pydantic" in sys.modules)
"""


def probe(mode: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, cwd=REPO, timeout=60, check=True
    ).stdout
    return out.splitlines()


def test_plain_conversion_matches_typer():
    plain, typer_own = probe("plain"), probe("typer")
    assert plain[:-1] == typer_own[:-1]
    assert any("Input should be a valid integer" in line for line in plain)
    assert any("Input should be greater than or equal to 1" in line for line in plain)
    assert any("Invalid value for '--flag' (env var: 'FLAG')" in line for line in plain)
    assert typer_own[-1] == "True"  # Typer's own conversion imports pydantic ...
    assert plain[-1] == "False"  # ... the plain one not even for a repeatable option (edit's --set)


def test_bad_limit_is_a_usage_error():
    from typer.testing import CliRunner

    from agentctl.cli import app

    r = CliRunner().invoke(
        app, ["--db", str(REPO / "sample_db" / "checkpoints.db"), "threads", "list", "--limit", "0"]
    )
    assert r.exit_code == 2
    assert "greater than or equal to 1" in r.output
    r = CliRunner().invoke(
        app,
        ["--db", str(REPO / "sample_db" / "checkpoints.db"), "threads", "list", "--limit", "2.0", "--json"],
    )
    assert r.exit_code == 0 and r.output.count('"thread_id"') == 2
