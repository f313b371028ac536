"""Command-line words turned into the values the commands declare, without pydantic.

typer (0.2x) converts each parameter through a pydantic TypeAdapter built on the first run of a
command: importing pydantic and building the adapters takes longer than `advisor check` of one
config itself. The commands here declare only plain types — str, int, float, Path, a StrEnum,
lists of them, each optional — so those are converted by the functions below, a bad value
refused as one usage error naming the choices or the bound; a parameter of any other type keeps typer's own conversion, and so does every
parameter under a typer without the per-parameter conversion hook (older or newer releases).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import typer

Convert = Callable[[Any], Any]

try:  # typer's per-parameter conversion contract (typer 0.2x); absent elsewhere
    from typer._coercion import RuntimeParam
except ImportError:  # pragma: no cover - depends on the installed typer
    RuntimeParam = None  # type: ignore[assignment,misc]


def _choice(enum: type[Enum]) -> Convert:
    values = [str(member.value) for member in enum]

    def convert(word: Any) -> Any:
        if isinstance(word, enum):
            return word
        if str(word) in values:
            return enum(str(word))
        raise typer.BadParameter(f"invalid choice: {str(word)!r} (choose from {', '.join(values)})")

    return convert


def _number(kind: type[int] | type[float], low: float | None, high: float | None) -> Convert:
    label = "an integer" if kind is int else "a number"

    def convert(word: Any) -> Any:
        try:
            value = kind(word)
        except (TypeError, ValueError):
            raise typer.BadParameter(f"{str(word)!r} is not {label}") from None
        if low is not None and value < low:
            raise typer.BadParameter(f"{value} is below the minimum {low}")
        if high is not None and value > high:
            raise typer.BadParameter(f"{value} is above the maximum {high}")
        return value

    return convert


def _text(word: Any) -> Any:
    return word if isinstance(word, str) else str(word)


def _path(word: Any) -> Any:
    return word if isinstance(word, Path) else Path(word)


def _flag(word: Any) -> Any:
    return word


# Parameter settings under which a value needs no check beyond its type (typer's defaults);
# a parameter that asks for more (a path that must exist, a clamped number...) keeps typer's.
_PLAIN_SETTINGS: dict[str, Any] = {
    "parser": None,
    "click_type": None,
    "case_sensitive": True,
    "clamp": False,
    "exists": False,
    "file_okay": True,
    "dir_okay": True,
    "writable": False,
    "readable": True,
    "resolve_path": False,
    "allow_dash": False,
    "path_type": None,
}


def _leaf(annotation: Any, info: Any) -> Convert | None:
    """The conversion of one plain type; None for anything typer must convert itself."""
    if any(getattr(info, name, plain) != plain for name, plain in _PLAIN_SETTINGS.items()):
        return None
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return _choice(annotation)
    if annotation is bool:
        return _flag
    if annotation in (int, float):
        return _number(annotation, getattr(info, "min", None), getattr(info, "max", None))
    if annotation is str:
        return _text
    if annotation is Path:
        return _path
    return None


def _without_none(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(annotation) if a is not type(None)]
        return rest[0] if len(rest) == 1 else annotation
    return annotation


def converter(annotation: Any, info: Any) -> tuple[Convert, bool] | None:
    """How to convert a parameter's words, and whether it takes several; None: not plain."""
    annotation = _without_none(annotation)
    if typing.get_origin(annotation) is list:
        (item,) = typing.get_args(annotation)
        leaf = _leaf(_without_none(item), info)
        return (leaf, True) if leaf is not None else None
    leaf = _leaf(annotation, info)
    return (leaf, False) if leaf is not None else None


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class PlainValue(RuntimeParam):
        """typer's conversion contract, fulfilled without pydantic."""

        convert: Convert
        several: bool

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.several:
                items = value if isinstance(value, list | tuple) else [value]
                return [self.convert(item) for item in items]
            return self.convert(value)


def convert_plainly(params: list[Any]) -> None:
    """Give each plain parameter of a command its pydantic-free conversion."""
    if RuntimeParam is None:
        return
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", False) is not None:
            continue  # not a typer parameter, or its conversion is already built
        found = converter(descriptor.annotation, descriptor.parameter_info)
        if found is not None:
            param._runtime_param = PlainValue(
                parameter_info=descriptor.parameter_info,
                annotation=descriptor.annotation,
                convert=found[0],
                several=found[1],
            )
