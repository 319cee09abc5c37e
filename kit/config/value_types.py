"""Recipe values against the type hints of the fields they set (the kit's sections and TRL's configs).

YAML gives only None, bools, ints, floats, strings, dates, lists and mappings, so a hint is checked as far
as those can meet it; a value only a Python caller could build (TRL's ``ParallelismConfig``) must be that
class. ``problem(value, hint)`` says what is wrong in words a recipe's author can act on.
"""

from __future__ import annotations

import enum
import types
import typing
from typing import Any

_NAMES = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    dict: "a mapping",
    list: "a list",
    type(None): "null",
}
# PyYAML reads a float only with a dot and, in an exponent, a sign: 1e-5 and 1.0e5 are text to it.
_NUMBER_HINT = " (YAML reads it as text: write numbers like 1.0e-5, with a dot and a signed exponent)"


class ConfigError(ValueError):
    """A recipe or override that cannot be used; the message says what to change."""


def _union_members(hint: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return typing.get_args(hint)
    return None


def matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` (as YAML loads it) is of type ``hint``."""
    if hint is Any:
        return True
    if (members := _union_members(hint)) is not None:
        return any(matches(value, member) for member in members)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return any(type(value) is type(arg) and value == arg for arg in args)
    if origin is list:
        return isinstance(value, list) and all(matches(item, args[0]) for item in value)
    if origin is dict:
        return isinstance(value, dict) and all(
            matches(key, args[0]) and matches(item, args[1]) for key, item in value.items()
        )
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is type(None):
        return value is None
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return isinstance(value, hint) or any(value == member.value for member in hint)
    return isinstance(hint, type) and isinstance(value, hint)


def describe(hint: Any) -> str:
    """``hint`` in words: "an integer", "a string or null", "a list of: a string", ..."""
    if hint is Any:
        return "anything"
    if (members := _union_members(hint)) is not None:
        return " or ".join(dict.fromkeys(describe(member) for member in members))
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(arg) for arg in args)
    if origin is list:
        return f"a list of: {describe(args[0])}"
    if origin is dict:
        return "a mapping"
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "one of " + ", ".join(repr(member.value) for member in hint)
    return _NAMES.get(hint, f"a {getattr(hint, '__name__', hint)}")


def problem(value: Any, hint: Any) -> str | None:
    """None when ``value`` fits ``hint``; else "must be ..., got ..." with a hint at the usual YAML slips."""
    if matches(value, hint):
        return None
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    message = f"must be {describe(hint)}, got {type(value).__name__} {shown}"
    if isinstance(value, str) and (matches(1.5, hint) or matches(1, hint)) and _is_number(value):
        message += _NUMBER_HINT
    elif not isinstance(value, str) and matches("text", hint) and isinstance(value, (bool, int, float)):
        message += " (quote it to give a string)"
    return message


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
