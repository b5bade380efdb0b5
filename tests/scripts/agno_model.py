"""A scripted `agno.models.base.Model` (no network): the Agno format's tests write their
databases with it, under agno 3 or (the v2 layout) agno 2. Stdlib + agno only: it is
imported by `agno_write.py` in either interpreter and by the tests' agent files."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from agno.models.base import Model
from agno.models.response import ModelResponse


@dataclass
class Scripted(Model):
    """Replies from `script`, one per model call: a text, or {"tool": NAME, "args": {...}}
    (a tool call); once the script is used up, "echo: <the last user message>"."""

    id: str = "scripted"
    name: str = "Scripted"
    provider: str = "test"
    script: list = field(default_factory=list)
    #: (role, content) of the messages of each call, as the model was given them
    seen: list = field(default_factory=list)

    def _next(self, messages: Any) -> ModelResponse:
        self.seen.append([(m.role, m.content) for m in messages])
        step = self.script.pop(0) if self.script else None
        if isinstance(step, dict) and "tool" in step:
            n = sum(1 for m in messages if m.role == "tool")
            return ModelResponse(
                role="assistant",
                content="",
                tool_calls=[
                    {
                        "id": f"call_{step['tool']}_{n}",
                        "type": "function",
                        "function": {"name": step["tool"], "arguments": json.dumps(step.get("args", {}))},
                    }
                ],
            )
        if step is None:
            last = next((m for m in reversed(messages) if m.role == "user"), None)
            step = f"echo: {last.content if last is not None else ''}"
        return ModelResponse(role="assistant", content=step)

    def invoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._next(kwargs["messages"])

    async def ainvoke(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return self._next(kwargs["messages"])

    def invoke_stream(self, *args: Any, **kwargs: Any) -> Iterator[ModelResponse]:
        yield self._next(kwargs["messages"])

    async def ainvoke_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ModelResponse]:
        yield self._next(kwargs["messages"])

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response
