"""Plain conversion of str, int and float command-line values, without pydantic.

Typer (0.2x) converts every parameter value, defaults included, through a pydantic
`TypeAdapter`: the first command run imports pydantic and builds one adapter per
parameter, about 100-150 ms of a command that should take 100 ms in all (bench/README.md).
agentctl's parameters are plain strings, counts and numbers with an optional range, so
`install()` gives those (and lists of strings: repeatable options, variadic arguments) a
direct conversion with pydantic's messages; anything else
(enums, paths, files, custom parsers) keeps Typer's own. Typer versions without this
internal hook are left alone.
"""

from __future__ import annotations

from typing import Any


def install() -> None:
    from typer import BadParameter  # public; click's (or Typer's own click's) class

    try:
        from typer import core as typer_core
        from typer._coercion import RuntimeParam  # Typer 0.29: this hook is worth its speed
    except ImportError:  # another Typer: its own conversion stays
        return
    parameter = getattr(typer_core, "_TyperParameter", None)
    original = getattr(parameter, "get_runtime_param", None)
    if original is None or getattr(original, "agentctl_plain", False):
        return

    class PlainParam(RuntimeParam):
        """str, int or float, with the parameter's min / max."""

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            kind = self.annotation
            if kind in _LISTS:  # a repeatable option / variadic argument of strings
                if not isinstance(value, (list, tuple)):
                    raise BadParameter("Input should be a valid list", ctx=ctx, param=param)
                return [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in value]
            if kind is bool:
                return _to_bool(value, ctx, param, BadParameter)
            if kind is str:
                if isinstance(value, bytes):
                    return value.decode("utf-8", "replace")
                return str(value)
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise BadParameter(f"Input should be a valid {_NAMES[kind]}", ctx=ctx, param=param)
            if isinstance(value, str):
                text = value.strip()
                if kind is int:  # like pydantic: "3.0" is 3, "3.5" is not an integer
                    whole, dot, fraction = text.partition(".")
                    text = whole if dot and whole and not fraction.strip("0") else text
                try:
                    value = kind(text)
                except ValueError:
                    raise BadParameter(_PARSE_ERRORS[kind], ctx=ctx, param=param) from None
            elif kind is int and isinstance(value, float) and not value.is_integer():
                raise BadParameter(
                    "Input should be a valid integer, got a number with a fractional part",
                    ctx=ctx,
                    param=param,
                )
            value = kind(value)
            info = self.parameter_info
            if info.min is not None and value < info.min:
                raise BadParameter(
                    f"Input should be greater than or equal to {info.min}", ctx=ctx, param=param
                )
            if info.max is not None and value > info.max:
                raise BadParameter(f"Input should be less than or equal to {info.max}", ctx=ctx, param=param)
            return value

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            desc = self.type_descriptor
            info = desc.parameter_info
            if (
                (desc.annotation in _NAMES or desc.annotation in _LISTS)
                and desc.file_annotation is None
                and info.parser is None
                and not info.clamp
            ):
                self._runtime_param = PlainParam(parameter_info=info, annotation=desc.annotation)
        return original(self)

    get_runtime_param.agentctl_plain = True  # type: ignore[attr-defined]
    parameter.get_runtime_param = get_runtime_param  # type: ignore[union-attr]


_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean"}
_LISTS = (list[str], list[str] | None)
_BOOLS = {
    "0": False,
    "off": False,
    "f": False,
    "false": False,
    "n": False,
    "no": False,
    "": False,
    "1": True,
    "on": True,
    "t": True,
    "true": True,
    "y": True,
    "yes": True,
}


def _to_bool(value: Any, ctx: Any, param: Any, error: Any) -> bool:
    """As Typer's pydantic adapter reads a flag's value (an environment variable's text)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _BOOLS:
        return _BOOLS[value.strip().lower()]
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise error("Input should be a valid boolean, unable to interpret input", ctx=ctx, param=param)


_PARSE_ERRORS = {
    int: "Input should be a valid integer, unable to parse string as an integer",
    float: "Input should be a valid number, unable to parse string as a number",
}
