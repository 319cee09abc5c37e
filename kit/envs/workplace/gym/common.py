"""What NeMo-Gym's workplace tools share: refusals, errors turned into answers, pagination, new ids."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kit.envs.workplace.gym.frame import Frame


class Refusal(Exception):
    """A call the tool answers with a message instead of doing it; the message is the tool's output."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


@contextmanager
def errors_reported(prefix: str) -> Iterator[None]:
    """Turn any exception inside into the refusal ``"<prefix>: <exception text>"`` (the tools that catch
    their own errors answer that way; the others let the server report them)."""
    try:
        yield
    except Refusal:
        raise
    except Exception as error:  # noqa: BLE001 - whatever fails is reported, as NeMo-Gym's tool does
        raise Refusal(f"{prefix}: {error}") from None


def page_window(total: int, page: Any, page_size: Any) -> tuple[Any, Any, Any, Any]:
    """``(page, total_pages, start, end)`` of a search result of ``total`` items. The arithmetic runs on
    the arguments as given, so a page size of 0, a string or a float fails (or pages) as it does there."""
    total_pages = (total + page_size - 1) // page_size
    page = max(1, min(page, total_pages)) if total_pages > 0 else 1
    start = (page - 1) * page_size
    return page, total_pages, start, min(start + page_size, total)


def next_id(frame: Frame, width: int = 8) -> str:
    """One more than the largest id (largest as text), zero-padded to ``width`` digits (0: unpadded)."""
    largest = frame.series(frame.id_column).max()
    return str(int(largest) + 1).zfill(width)


def matching(frame: Frame, column: str, value: Any) -> list[bool]:
    """Which rows hold ``value`` in ``column`` (pandas' ``==``, with its errors for odd values)."""
    return [bool(hit) for hit in (frame.series(column) == value)]


def holds(frame: Frame, column: str, value: Any, lowered: bool = False) -> bool:
    """Whether ``value`` is in the column's values (``value in column.values``, with pandas' errors)."""
    values = frame.series(column)
    return value in (values.str.lower() if lowered else values).values
