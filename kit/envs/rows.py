"""NeMo-Gym rows: read once, checked once, into the form every environment of the kit uses.

A row is one JSON object per line: `responses_create_params` (the Responses API request: `input` messages
and `tools`), plus whatever its environment reads (`ground_truth`, `id`, `category`, a dialogue's
`user_model_system_prompt`...). The checks follow NeMo-Gym's request models: what they accept the kit
accepts (a `ground_truth` given as a JSON string, say, which NeMo-Gym types as `list[dict] | str`), and
what it cannot use is refused with the file, the line, the field and the fix, before any training starts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

DIALOGUE_FIELDS = ("user_model_system_prompt", "verifier_metadata")
"""A row's fields for its simulated user (NeMo-Gym's multi-turn rows); a row with a user prompt is a
dialogue task."""


class RowsError(ValueError):
    """Rows that cannot be read or used; the message names the file (and line), the field and the fix."""


INPUT_ROLES = ("system", "developer", "user", "assistant")
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
_FIX = "See docs/nemo-gym.md#rows for the row format."


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The JSON objects of a jsonl file, one per non-blank line; raises RowsError naming the bad line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").split("\n")
    except OSError as error:
        raise RowsError(f"{path}: cannot read ({error.strerror or error})") from None
    except UnicodeDecodeError as error:
        raise RowsError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    rows = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as error:
            raise RowsError(
                f"{path}:{lineno}: not valid JSON ({error}); each line must be one JSON object"
            ) from None
        if not isinstance(row, dict):
            raise RowsError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
        rows.append(row)
    return rows


def load_rows(path_or_hub_id: str | Path, split: str = "train") -> list[dict[str, Any]]:
    """The task rows of `raw_rows(path_or_hub_id, split)`, each checked (`checked_row`); raises RowsError
    naming the file, the line (of a local file; else the row's index), the field and the fix."""
    rows = []
    for index, row in enumerate(raw_rows(path_or_hub_id, split)):
        try:
            rows.append(checked_row(row))
        except RowsError as error:
            line = (
                f"{path_or_hub_id}:{index + 1}"
                if Path(path_or_hub_id).exists()
                else f"{path_or_hub_id} row {index}"
            )
            raise RowsError(f"{line}: {error}") from None
    return rows


def raw_rows(path_or_hub_id: str | Path, split: str = "train") -> list[dict[str, Any]]:
    """The JSON objects of a local jsonl file or, when no such path exists and the name looks like a hub
    dataset id (``owner/name``), of ``datasets.load_dataset(id, split=split)``, as they are. Raises
    RowsError with a clear message when neither works (e.g. the hub is unreachable: use a local file)."""
    source = str(path_or_hub_id)
    if Path(source).exists():
        return read_jsonl(source)
    if not _HUB_ID.fullmatch(source) or source.endswith((".jsonl", ".json")):
        raise RowsError(f"{source}: no such file")
    try:
        import datasets
    except ImportError:
        raise RowsError(
            f"{source}: not a local file, and loading it as a hub dataset needs the 'datasets' package; "
            "install it or pass a local .jsonl file"
        ) from None
    try:
        dataset = datasets.load_dataset(source, split=split)
    except Exception as error:  # noqa: BLE001 - network, auth and format errors all mean the same to the user
        raise RowsError(
            f"{source}: not a local file, and loading it as a hub dataset failed ({type(error).__name__}: "
            f"{error}); if the hub is unreachable, download the rows and pass the local .jsonl file"
        ) from None
    return [dict(row) for row in dataset]


def dialogue_fields(row: dict[str, Any]) -> dict[str, Any]:
    """A row's fields for its simulated user; empty for a row that is one request."""
    return {key: row[key] for key in DIALOGUE_FIELDS if key in row}


def selected(row: dict[str, Any], tiers: list[str] | None, categories: list[str] | None) -> bool:
    """Whether a row is in `env.tiers` (rows without a tier always are) and `env.categories`."""
    tier = row.get("tier")
    if tier is not None and tiers and tier not in tiers:
        return False
    return not categories or row.get("category") in categories


def checked_row(row: Any) -> dict[str, Any]:
    """`row` checked, with `ground_truth` as a list of calls (NeMo-Gym also takes it as a JSON string) whose
    arguments are JSON strings; raises RowsError naming the field and what it must be."""
    if not isinstance(row, dict):
        raise RowsError(f"a row must be a JSON object, got {type(row).__name__}")
    params = row.get("responses_create_params")
    if not isinstance(params, dict):
        raise RowsError(
            "field 'responses_create_params' must be an object with the request's 'input' messages "
            f"(got {_shown(params)}). {_FIX}"
        )
    input_messages(params)
    tool_schemas(params)
    row = dict(row)
    if "ground_truth" in row:
        row["ground_truth"] = ground_truth_calls(row["ground_truth"])
    prompt = row.get("user_model_system_prompt", "")
    if not isinstance(prompt, str):
        raise RowsError(f"field 'user_model_system_prompt' must be a string, got {_shown(prompt)}")
    if "verifier_metadata" in row and not isinstance(row["verifier_metadata"], dict | type(None)):
        raise RowsError(
            f"field 'verifier_metadata' must be an object, got {_shown(row['verifier_metadata'])}"
        )
    return row


def input_messages(params: dict[str, Any]) -> list[dict[str, str]]:
    """The request's input as chat messages (role, text content). NeMo-Gym's `input` is a string (one user
    message) or a list of message items whose content is text or a list of text parts; the `developer`
    role becomes `system`, the role chat templates know."""
    value = params.get("input")
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not isinstance(value, list) or not value:
        raise RowsError(
            "field 'responses_create_params.input' must be a string or a non-empty list of messages "
            f"({{'role': 'user', 'content': '...'}}), got {_shown(value)}"
        )
    messages = []
    for index, item in enumerate(value):
        where = f"responses_create_params.input[{index}]"
        if not isinstance(item, dict) or item.get("type", "message") != "message":
            raise RowsError(
                f"field '{where}' must be a message with 'role' and 'content' (the kit reads message items "
                f"only), got {_shown(item)}"
            )
        role = item.get("role")
        if role not in INPUT_ROLES:
            raise RowsError(f"field '{where}.role' is {_shown(role)}; valid: {', '.join(INPUT_ROLES)}")
        messages.append({"role": "system" if role == "developer" else role, "content": _text(item, where)})
    return messages


def _text(item: dict[str, Any], where: str) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(part, dict) and isinstance(part.get("text"), str) for part in content
    ):
        return "".join(part["text"] for part in content)
    raise RowsError(f"field '{where}.content' must be text or a list of text parts, got {_shown(content)}")


def tool_schemas(params: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's tools in the Chat Completions form chat templates and parsers read
    (`{"type": "function", "function": {name, description, parameters}}`); NeMo-Gym's rows hold the flat
    Responses form (`{"type": "function", "name", ...}`)."""
    tools = params.get("tools") or []
    if not isinstance(tools, list):
        raise RowsError(f"field 'responses_create_params.tools' must be a list, got {_shown(tools)}")
    schemas = []
    for index, tool in enumerate(tools):
        where = f"responses_create_params.tools[{index}]"
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise RowsError(f"field '{where}' must be a function tool with a 'name', got {_shown(tool)}")
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        if not isinstance(parameters, dict):
            raise RowsError(
                f"field '{where}.parameters' must be a JSON schema object, got {_shown(parameters)}"
            )
        entry = {"name": function["name"], "description": str(function.get("description") or ""),
                 "parameters": parameters}  # fmt: skip
        schemas.append({"type": "function", "function": entry})
    return schemas


def ground_truth_calls(value: Any) -> list[dict[str, str]]:
    """A row's `ground_truth` as a list of `{"name", "arguments"}` calls with JSON-string arguments."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except (ValueError, RecursionError):
            raise RowsError(
                f"field 'ground_truth' is a string but not JSON ({_shown(value)}); give the list of calls, "
                'e.g. [{"name": "email_delete_email", "arguments": "{\\"email_id\\": \\"00000001\\"}"}]'
            ) from None
    if value is None:
        return []
    if not isinstance(value, list):
        raise RowsError(
            f"field 'ground_truth' must be a list of calls (or that list as a JSON string), "
            f"got {_shown(value)}"
        )
    calls = []
    for index, call in enumerate(value):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise RowsError(f"field 'ground_truth[{index}]' must be a call with a 'name', got {_shown(call)}")
        arguments = call.get("arguments", "{}")
        if not isinstance(arguments, str):
            try:
                arguments = json.dumps(arguments)
            except (TypeError, ValueError, RecursionError):
                raise RowsError(
                    f"field 'ground_truth[{index}].arguments' is not JSON data: {_shown(arguments)}"
                ) from None
        calls.append({**call, "arguments": arguments})
    return calls


def _shown(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
