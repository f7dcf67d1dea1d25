"""Checks of recipe values that argparse does not make: a YAML recipe hands its values to the config classes as they
are (``set_size: 2.5`` stays a float, ``reward_funcs: math`` a string), so each field's value is held to its type."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal, Union


def _accepts(hint: Any, value: Any) -> bool:
    """Whether ``value`` fits the type ``hint`` (int for float, any element type for an unparametrised container)."""
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return any(_accepts(option, value) for option in typing.get_args(hint))
    if origin is Literal:
        return value in typing.get_args(hint)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if origin in (list, tuple):
        args = typing.get_args(hint)
        element = args[0] if args else Any
        return isinstance(value, list | tuple) and all(_accepts(element, item) for item in value)
    if origin is dict or hint is dict:
        return isinstance(value, dict)
    if isinstance(hint, type):
        return isinstance(value, hint) or (hint is str and isinstance(value, str))
    return True  # a type this check does not know: the class's own __post_init__ decides


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(option) for option in typing.get_args(hint))
    if origin in (list, tuple):
        args = typing.get_args(hint)
        return f"a list of {_describe(args[0])}" if args else "a list"
    if origin is Literal:
        return f"one of {list(typing.get_args(hint))}"
    if hint is type(None):
        return "null"
    return getattr(hint, "__name__", str(hint))


def check_field_types(obj: Any, names: typing.Iterable[str] | None = None) -> None:
    """ValueError naming the first field of dataclass ``obj`` whose value (other than None) does not fit its
    annotation: the field, the value, what it should be."""
    hints = typing.get_type_hints(type(obj))
    wanted = set(names) if names is not None else None
    for field in dataclasses.fields(obj):
        if not field.init or (wanted is not None and field.name not in wanted) or field.name not in hints:
            continue
        value = getattr(obj, field.name)
        hint = hints[field.name]
        if value is not None and not _accepts(hint, value):  # None: argparse's "unset"; the class decides
            example = ""
            if typing.get_origin(hint) in (list, tuple) or list in typing.get_args(hint):
                example = f" (write [{value}] for one item)" if isinstance(value, str) else ""
            raise ValueError(
                f"{field.name}={value!r} is {type(value).__name__}: it must be {_describe(hint)}{example}."
            )
