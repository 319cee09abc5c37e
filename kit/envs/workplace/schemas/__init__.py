"""The 27 workplace tool schemas, in NeMo-Gym (Responses) and Chat-Completions shapes.

Names, argument names, required lists and JSON types follow NeMo-Gym's workplace_assistant so its tasks
run unchanged; descriptions are the kit's own. Every tool exists in a full and a compact wording: the
compact one keeps prompts short for small models.

One module per toolkit holds its tools' ``ToolSpec`` table; ``spec`` defines ``ToolSpec`` and ``Param``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kit.envs.workplace.schemas.analytics import ANALYTICS_SPECS
from kit.envs.workplace.schemas.calendar import CALENDAR_SPECS
from kit.envs.workplace.schemas.company_directory import COMPANY_DIRECTORY_SPECS
from kit.envs.workplace.schemas.customer_relationship_manager import CRM_SPECS
from kit.envs.workplace.schemas.email import EMAIL_SPECS
from kit.envs.workplace.schemas.project_management import PROJECT_MANAGEMENT_SPECS
from kit.envs.workplace.schemas.spec import Param, ToolSpec

TOOLKITS: tuple[str, ...] = (
    "company_directory",
    "email",
    "calendar",
    "analytics",
    "project_management",
    "customer_relationship_manager",
)

SPECS: tuple[ToolSpec, ...] = (
    *COMPANY_DIRECTORY_SPECS,
    *EMAIL_SPECS,
    *CALENDAR_SPECS,
    *ANALYTICS_SPECS,
    *PROJECT_MANAGEMENT_SPECS,
    *CRM_SPECS,
)
"""Every tool's spec, in canonical order (toolkit by toolkit, as in ``TOOLKITS``)."""

SPECS_BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in SPECS}
TOOL_NAMES: tuple[str, ...] = tuple(SPECS_BY_NAME)
STATE_CHANGING: frozenset[str] = frozenset(spec.name for spec in SPECS if spec.changes_state)


def toolkit_of(tool_name: str) -> str | None:
    """The toolkit a tool belongs to, or None for an unknown name."""
    spec = SPECS_BY_NAME.get(tool_name)
    return spec.toolkit if spec else None


def _parameters(spec: ToolSpec, compact: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for param in spec.params:
        prop: dict[str, Any] = {"type": param.type}
        description = param.compact if compact else param.description
        if description:
            prop["description"] = description
        properties[param.name] = prop
    parameters = {"type": "object", "properties": properties, "required": list(spec.required)}
    if not compact:  # the sandbox rejects extra arguments anyway; compact prompts save the tokens
        parameters["additionalProperties"] = False
    return parameters


def _selected(toolkits: Iterable[str] | None) -> list[ToolSpec]:
    if toolkits is None:
        return list(SPECS)
    wanted = set(toolkits)
    unknown = wanted.difference(TOOLKITS)
    if unknown:
        raise ValueError(f"unknown toolkit(s) {sorted(unknown)}; valid: {list(TOOLKITS)}")
    return [spec for spec in SPECS if spec.toolkit in wanted]


def flat_schemas(toolkits: Iterable[str] | None = None, compact: bool = False) -> list[dict[str, Any]]:
    """Schemas in NeMo-Gym/Responses shape: ``{"type": "function", "name", "description", "parameters",
    "strict"}``, in canonical tool order, optionally limited to some toolkits."""
    return [
        {
            "type": "function",
            "name": spec.name,
            "description": spec.compact if compact else spec.description,
            "parameters": _parameters(spec, compact),
            "strict": False,
        }
        for spec in _selected(toolkits)
    ]


def chat_schemas(toolkits: Iterable[str] | None = None, compact: bool = False) -> list[dict[str, Any]]:
    """Schemas in Chat-Completions shape: ``{"type": "function", "function": {"name", "description",
    "parameters"}}``."""
    return [
        {"type": "function", "function": {k: v for k, v in schema.items() if k not in ("type", "strict")}}
        for schema in flat_schemas(toolkits, compact)
    ]


__all__ = [
    "SPECS",
    "SPECS_BY_NAME",
    "STATE_CHANGING",
    "TOOLKITS",
    "TOOL_NAMES",
    "Param",
    "ToolSpec",
    "chat_schemas",
    "flat_schemas",
    "toolkit_of",
]
