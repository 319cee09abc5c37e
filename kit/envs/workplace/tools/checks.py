"""What the tools of every toolkit share: ``ToolError``, argument checks, text matching and JSON results.

A check returns the argument as the tool should use it (stripped, lower-cased or in its canonical spelling)
or raises ``ToolError`` whose message names the argument, what it got and what is valid.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime
from functools import lru_cache
from typing import Any

from kit.envs.workplace.state import Row, Table, WorkplaceState


class ToolError(Exception):
    """A tool refused a call; the message is shown to the model after ``Error:``."""


DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE = 5, 100
ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
ISO_DATETIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def _quoted(options: Iterable[str]) -> str:
    return ", ".join(f"'{o}'" for o in options)


def check_text(value: str, arg: str) -> str:
    """``value`` unchanged, provided it is not blank."""
    if not value.strip():
        raise ToolError(f"'{arg}' must not be empty.")
    return value


def check_date(value: str, arg: str) -> str:
    """``value`` unchanged, provided it is a real date written YYYY-MM-DD."""
    try:
        if ISO_DATE.fullmatch(value):
            datetime.strptime(value, "%Y-%m-%d")
            return value
    except ValueError:
        pass
    raise ToolError(f"'{arg}' must be a date in the format YYYY-MM-DD, got {value!r}.")


def check_datetime(value: str, arg: str) -> datetime:
    """``value`` parsed, provided it is a real time written YYYY-MM-DD HH:MM:SS."""
    try:
        if ISO_DATETIME.fullmatch(value):
            return datetime.strptime(value, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        pass
    raise ToolError(f"'{arg}' must be a time in the format YYYY-MM-DD HH:MM:SS, got {value!r}.")


def check_email(value: str, arg: str) -> str:
    """``value`` stripped and lower-cased, provided it looks like an email address."""
    value = value.strip().lower()
    if not _EMAIL.fullmatch(value):
        raise ToolError(f"'{arg}' must be an email address like name@example.com, got {value!r}.")
    return value


def check_colleague(state: WorkplaceState, value: str, arg: str) -> str:
    """``value`` as an email address, provided it is in the company directory."""
    value = check_email(value, arg)
    if value not in state.directory:
        raise ToolError(
            f"'{arg}' must be a colleague's address from the company directory, got {value!r}; "
            "look it up with company_directory_find_email_address."
        )
    return value


def check_choice(value: str, options: tuple[str, ...], arg: str) -> str:
    """The option matching ``value`` case-insensitively, in its canonical spelling."""
    for option in options:
        if value.strip().lower() == option.lower():
            return option
    raise ToolError(f"'{arg}' must be one of {_quoted(options)}, got {value!r}.")


def check_exact(value: str, options: tuple[str, ...], arg: str) -> str:
    """``value`` when it is one of ``options`` exactly.

    For values a tool writes where NeMo-Gym's tool refuses any other spelling: accepting "won" for "Won"
    would score a task NeMo-Gym scores 0 (and it compares ``status``, ``list_name`` and ``board``
    case-sensitively)."""
    if value in options:
        return value
    close = [option for option in options if option.lower() == value.strip().lower()]
    hint = f"; write '{close[0]}'" if close else ""
    raise ToolError(f"'{arg}' must be one of {_quoted(options)}, spelt exactly, got {value!r}{hint}.")


def check_field(field: str, columns: tuple[str, ...]) -> str:
    """``field`` unchanged, provided it is one of ``columns``."""
    if field not in columns:
        raise ToolError(f"'field' must be one of {_quoted(columns)}, got {field!r}.")
    return field


def find_row(table: Table, row_id: str, noun: str) -> Row:
    """The row of ``table`` with id ``row_id``; ``noun`` names the record in the error."""
    row = table.get(row_id)
    if row is None:
        raise ToolError(f"no {noun} has id {row_id!r}; ids are 8-digit strings such as '00000042'.")
    return row


def to_json(value: Any) -> str:
    """A tool result as JSON, non-ASCII text kept as it is."""
    return json.dumps(value, ensure_ascii=False)


def page_of(rows: list[Row], page: int, page_size: int) -> str:
    """One page of search results as JSON, with the total number of matches."""
    if page < 1:
        raise ToolError(f"'page' must be 1 or more, got {page}.")
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ToolError(f"'page_size' must be between 1 and {MAX_PAGE_SIZE}, got {page_size}.")
    start = (page - 1) * page_size
    return to_json(
        {
            "total": len(rows),
            "page": page,
            "page_size": page_size,
            "results": [dict(r) for r in rows[start : start + page_size]],
        }
    )


def query_words(query: str) -> list[str]:
    """The lower-cased words of a search query; a record matches when each occurs in its text."""
    return query.lower().split()


@lru_cache(maxsize=16384)
def haystack(*fields: str) -> str:
    """The searchable text of a record: its fields joined and lower-cased (cached, rows never change)."""
    return " ".join(fields).lower()


def in_range(day: str, time_min: str | None, time_max: str | None) -> bool:
    """Whether ``day`` lies within the bounds; a missing bound does not limit."""
    return (time_min is None or day >= time_min) and (time_max is None or day <= time_max)
