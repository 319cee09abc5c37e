"""What NeMo-Gym answers a model's tool call with, in the kit: its agent's argument parsing, its server's
request handling and the JSON body the model reads.

NeMo-Gym's simple_agent parses the call's JSON arguments (a parse error becomes an answer of its own,
``{"error": "Invalid tool call arguments: ..."}``, and nothing is sent) and posts them to
``/<tool name>`` of the resources server; falsy arguments go out as they are, others through orjson,
which writes NaN and infinities as null, and JSON null goes out as no body at all. FastAPI refuses a
missing body or one that is not an object (422, its own error body). The server drops arguments whose
value is null, calls the tool with the rest as keyword arguments, and answers ``{"output": <result>}``;
an unknown tool, an argument the tool does not take or an exception inside it is answered
``"Error executing tool '<name>': <exception>"`` as the output.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from kit.envs.workplace.gym import analytics, calendar, company_directory, email
from kit.envs.workplace.gym import customer_relationship_manager as crm
from kit.envs.workplace.gym import project_management as pm
from kit.envs.workplace.gym.common import Refusal
from kit.envs.workplace.gym.json_text import output_body, starlette_json
from kit.envs.workplace.gym.state import GymState
from kit.envs.workplace.schemas import SPECS_BY_NAME, toolkit_of
from kit.episode import Observation

_MODULES = (company_directory, email, calendar, analytics, pm, crm)
TOOLS: dict[str, Callable[..., Any]] = {
    name: getattr(module, name) for module in _MODULES for name in dir(module) if name in SPECS_BY_NAME
}
"""Tool name -> NeMo-Gym's behaviour, a function of the session's ``GymState`` and the arguments."""

_CLASSES = {
    "company_directory": "CompanyDirectoryTool",
    "email": "EmailTool",
    "calendar": "CalendarTool",
    "analytics": "AnalyticsTool",
    "project_management": "ProjectManagementTool",
    "customer_relationship_manager": "CustomerRelationshipManagerTool",
}
_NO_BODY = object()


def _method(name: str) -> str:
    """The name Python gives NeMo-Gym's method in a TypeError, e.g. ``EmailTool.send_email``."""
    toolkit = toolkit_of(name) or ""
    return f"{_CLASSES[toolkit]}.{name.removeprefix(toolkit + '_')}"


def signature_problem(name: str, arguments: dict[str, Any]) -> str | None:
    """The TypeError text of calling NeMo-Gym's method with these keyword arguments (Python 3.11's
    wording: the first argument it does not take), or None."""
    params = {p.name for p in SPECS_BY_NAME[name].params}
    for key in arguments:
        if key == "self":
            return f"{_method(name)}() got multiple values for argument 'self'"
        if key not in params:
            return f"{_method(name)}() got an unexpected keyword argument '{key}'"
    return None


def _nulled(value: Any) -> Any:
    # orjson writes NaN and infinities as null
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_nulled(v) for v in value]
    if isinstance(value, dict):
        return {k: _nulled(v) for k, v in value.items()}
    return value


def _sent(arguments: Any) -> Any:
    """The request body the server receives for parsed arguments (_NO_BODY: none)."""
    if arguments is None:
        return _NO_BODY
    return _nulled(arguments) if arguments else arguments


def _unencodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _rejected(body: Any) -> str | None:
    """FastAPI's 422 body for a request body that is missing, not a JSON object, or (pydantic checks an
    extra field's name as a string) has a name UTF-8 cannot encode; None when it takes the body."""
    if body is _NO_BODY:
        error = {"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}
    elif not isinstance(body, dict):
        error = {
            "type": "model_attributes_type",
            "loc": ["body"],
            "msg": "Input should be a valid dictionary or object to extract fields from",
            "input": body,
        }
    else:
        name = next((key for key in body if _unencodable(key)), None)
        if name is None:
            return None
        error = {
            "type": "string_unicode",
            "loc": ["body"],
            "msg": "Input should be a valid string, unable to parse raw data as a unicode string",
            "input": name,
        }
    return starlette_json({"detail": [error]})


def run(state: GymState, name: str, arguments: dict[str, Any]) -> tuple[Any, bool]:
    """The tool's output and whether it refused, for arguments as the server passes them."""
    tool = TOOLS.get(name)
    problem = f"{KeyError(name)}" if tool is None else signature_problem(name, arguments)
    if problem is not None:
        return f"Error executing tool '{name}': {problem}", True
    try:
        return tool(state, **arguments), False
    except Refusal as refusal:
        return refusal.text, True
    except Exception as error:  # noqa: BLE001 - the server answers any exception inside a tool this way
        return f"Error executing tool '{name}': {error}", True


def answer(state: GymState, name: Any, arguments: Any) -> Observation:
    """Run one call as NeMo-Gym's agent and server do; ``arguments`` is the call's JSON text or its
    parsed value (None: no arguments)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (json.JSONDecodeError, TypeError, RecursionError) as error:
            return Observation(json.dumps({"error": f"Invalid tool call arguments: {error!r}"}), refused=True)
    elif arguments is None:
        arguments = {}
    body = _sent(arguments)
    rejected = _rejected(body)
    if rejected is not None:
        return Observation(rejected, refused=True)
    output, refused = run(state, str(name), {k: v for k, v in body.items() if v is not None})
    text = output_body(output)
    return Observation(text, refused=refused or not text.startswith('{"output":'))  # or a 500
