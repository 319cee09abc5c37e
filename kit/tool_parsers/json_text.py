"""JSON in model text as it streams in: decoding a value where it starts, and telling a value that more
text could still complete from one that no text can (the built-in parsers' streaming needs both)."""

from __future__ import annotations

import json
import re
import sys

DECODER = json.JSONDecoder()
# JSON's own tokens, for telling a value that is still being written from one that never will decode.
_JSON_WHITESPACE = re.compile(r"[ \t\n\r]*")
_STRING_BODY = r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*'
_STRING = re.compile('"' + _STRING_BODY + '"')
_UNFINISHED_STRING = re.compile('"' + _STRING_BODY + r"(?:\\(?:u[0-9a-fA-F]{0,3})?)?\Z")
_WORD = re.compile(r"[-+.0-9A-Za-z]+")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")  # Python's json reads all six
_OPEN_BRACKETS = re.compile(r"(?:\[[ \t\n\r]*)+")


class BadCall(ValueError):
    """The output holds a tool call that cannot be parsed; the message says why."""


class TooDeep(BadCall):
    """JSON nested deeper than Python's json can read, whatever follows."""


def past_too_deep(text: str, start: int) -> int:
    """Where to look for JSON next after the value at ``start`` nested too deeply to read: past the ``[`` of
    a run of them that each open a value nested too deeply as well (a run of ``[`` one character per level
    would otherwise cost a failed decode of a thousand levels at every position)."""
    run = _OPEN_BRACKETS.match(text, start)
    opens = [start + i for i, char in enumerate(run.group()) if char == "["] if run else []
    limit = sys.getrecursionlimit()
    return opens[len(opens) - limit] if len(opens) > limit else start + 1


def decode_error(error: Exception, start: int) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"{error.msg} at character {error.pos - start}"
    if isinstance(error, RecursionError):
        return "JSON nested too deeply"
    return str(error)


def unfinished_json(text: str, pos: int) -> bool:
    """Whether ``text[pos:]`` is the beginning of a JSON value that more text could still complete (as
    opposed to one that is complete, or that no continuation can make valid)."""
    containers: list[str] = []  # the open ones, "{" or "["
    expect = "value"  # or "first_value" (after "["), "key", "first_key" (after "{"), "colon", "next"
    end = len(text)
    while (pos := _JSON_WHITESPACE.match(text, pos).end()) < end:
        char = text[pos]
        closes = (char == "}" and expect in ("next", "first_key")) or (
            char == "]" and expect in ("next", "first_value")
        )
        if closes:
            if containers.pop() != ("{" if char == "}" else "["):
                return False
            if not containers:
                return False  # complete, and yet it did not decode
            expect, pos = "next", pos + 1
        elif expect == "next":
            if char != ",":
                return False
            expect, pos = ("key" if containers[-1] == "{" else "value"), pos + 1
        elif expect == "colon":
            if char != ":":
                return False
            expect, pos = "value", pos + 1
        elif expect in ("key", "first_key") or char == '"':
            if char != '"':
                return False
            match = _STRING.match(text, pos)
            if match is None:
                return _UNFINISHED_STRING.match(text, pos) is not None
            expect, pos = ("colon" if expect in ("key", "first_key") else "next"), match.end()
            if expect == "next" and not containers:
                return False
        elif char in "{[":
            containers.append(char)
            expect, pos = ("first_key" if char == "{" else "first_value"), pos + 1
        else:
            match = _WORD.match(text, pos)
            if match is None:
                return False
            word = match.group()
            if match.end() == end:
                return bool(
                    _NUMBER.fullmatch(word)
                    or _NUMBER.fullmatch(word + "0")
                    or any(literal.startswith(word) for literal in _LITERALS)
                )
            if not (_NUMBER.fullmatch(word) or word in _LITERALS) or not containers:
                return False
            expect, pos = "next", match.end()
    return True


def json_value(text: str, pos: int) -> tuple[object, int] | None:
    """The JSON value at ``pos`` and where it ends, or None while more text could still complete it;
    raises ``BadCall`` when no more text can."""
    try:
        return DECODER.raw_decode(text, pos)
    except RecursionError:
        raise TooDeep("invalid JSON (JSON nested too deeply)") from None  # and so is any continuation
    except ValueError as error:
        if unfinished_json(text, pos):
            return None
        raise BadCall(f"invalid JSON ({decode_error(error, pos)})") from None


def partial_tag_at(text: str, pos: int, tag: str) -> int:
    """Where the end of ``text`` (from ``pos``) starts to spell ``tag``; ``len(text)`` when it does not."""
    for size in range(min(len(tag) - 1, len(text) - pos), 0, -1):
        if text.endswith(tag[:size]):
            return len(text) - size
    return len(text)
