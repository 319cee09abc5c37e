"""How a tool schema is described: ``ToolSpec`` and its ``Param`` arguments, and the wording they share."""

from __future__ import annotations

from dataclasses import dataclass

DATE_FORMAT = "Format: YYYY-MM-DD"
TIME_FORMAT = "Format: YYYY-MM-DD HH:MM:SS"


@dataclass(frozen=True)
class Param:
    """One tool argument: JSON type, full and compact description, whether it is required."""

    name: str
    type: str
    description: str
    compact: str = ""
    required: bool = False


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its toolkit, whether it can change state, descriptions and arguments."""

    name: str
    toolkit: str
    changes_state: bool
    description: str
    compact: str
    params: tuple[Param, ...]

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.required)


def paging_params(noun: str) -> tuple[Param, Param]:
    """The ``page`` and ``page_size`` arguments of a search that returns ``noun`` one page at a time."""
    return (
        Param("page", "integer", "Which page of results to return, starting at 1 (default 1).", "default 1"),
        Param("page_size", "integer", f"How many {noun} each page holds (default 5).", "default 5"),
    )
