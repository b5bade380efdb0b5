"""mkdocs hooks (mkdocs.yml `hooks:`), run by `mkdocs build` / `mkdocs serve`:

- the site's home page is the README (its links into docs/ made relative to the site);
- the CLI reference, a page per command with its `--help`, is generated from the Typer
  app at build time, so it cannot drift from the commands.

`commands()` is also what tests/structure/test_docs.py walks.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WIDTH = 100  # the help's width in the reference pages


def commands() -> list[tuple[tuple[str, ...], Any, Any]]:
    """Every command of agentctl, groups and their subcommands included, in the order the
    help lists them: (path, click command, its click context), path () being the root."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import typer

    from agentctl.cli import root

    top = typer.main.get_command(root.eager_app())
    out: list[tuple[tuple[str, ...], Any, Any]] = []

    def walk(path: tuple[str, ...], cmd: Any, parent: Any) -> None:
        ctx = cmd.context_class(cmd, info_name=path[-1] if path else "agentctl", parent=parent,
                                terminal_width=WIDTH, max_content_width=WIDTH)
        out.append((path, cmd, ctx))
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not getattr(sub, "hidden", False):
                    walk(path + (name,), sub, ctx)

    walk((), top, None)
    return out


def page_name(path: tuple[str, ...]) -> str:
    """reference/index.md for agentctl itself, reference/agentctl-threads-list.md for
    `agentctl threads list` (the command `index` has a page of its own too)."""
    return "reference/" + ("-".join(("agentctl",) + path) if path else "index") + ".md"


def reference_pages() -> dict[str, str]:
    """The CLI reference: src path -> markdown."""
    pages: dict[str, str] = {}
    rows = []
    for path, cmd, ctx in commands():
        title = " ".join(("agentctl",) + path)
        text = [f"# {title}", "", "```text", cmd.get_help(ctx).rstrip(), "```", ""]
        if path:
            rows.append(f"| [`{title}`]({page_name(path).removeprefix('reference/')}) | "
                        f"{_cell(cmd.get_short_help_str(limit=120))} |")
        pages[page_name(path)] = "\n".join(text)
    pages["reference/index.md"] += "\n".join(
        ["", "The help of every command, as `agentctl COMMAND --help` prints it (generated from "
         "the commands when the site is built).", "", "| command | summary |", "|---|---|"] + rows) + "\n"
    return pages


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;")


def home_page() -> str:
    """README.md, its links to docs/X.md made links to the site's X.md."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.sub(r"\]\(docs/", "](", text)


def on_config(config: Any) -> Any:
    """The nav's "CLI reference" entry becomes the reference's pages, one per command."""
    for i, item in enumerate(config["nav"] or []):
        if isinstance(item, dict) and "CLI reference" in item:
            config["nav"][i] = {"CLI reference": [page_name(path) for path, _, _ in commands()]}
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    generated = {"index.md": home_page(), **reference_pages()}
    for src, content in generated.items():
        old = files.get_file_from_path(src)
        if old is not None:
            files.remove(old)
        files.append(File.generated(config, src, content=content))
    return files
