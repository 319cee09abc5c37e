"""Ambiguous variants of workplace rows, run as a clarifying dialogue with a simulated user.

A variant follows NeMo-Gym's dialogue rows: the user message is the request with one piece of information
removed or replaced by a vague reference, ``user_model_system_prompt`` tells the simulated user the
original request, and ``verifier_metadata`` records the ambiguity type, the original request, what was
removed and a ``clarification`` (kit field): what a user would say to reveal it. The ground truth stays.

Variants are made from the row's text and ground truth alone, so they apply to rows the kit did not
generate; a removal is only kept when the removed value is needed: it (or a date, time or address derived
from it) appears in the ground-truth arguments, or the ground truth acts on a record the request does not
name by id, so the request's wording is what finds it.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Callable
from datetime import date, timedelta
from functools import lru_cache
from typing import Any

from kit.envs.workplace.generate_state import DOMAIN, EMPLOYEES, default_state
from kit.envs.workplace.sandbox import parse_arguments
from kit.envs.workplace.schemas import STATE_CHANGING
from kit.envs.workplace.state import NOW
from kit.envs.workplace.tools import BOARDS, LIST_NAMES, PLOT_TYPES, PRODUCTS, STATUSES, ToolError

AMBIGUITY_TYPES = ("referential_ambiguity", "missing_constraint", "user_preference_ambiguity")
STOP_TOKEN = "END_CONVERSATION"

_REFERENTIAL, _MISSING, _PREFERENCE = AMBIGUITY_TYPES
# fmt: off
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
# fmt: on
_DATE = rf"(?:(?:{'|'.join(_MONTHS)}) \d{{1,2}}|\d{{4}}-\d{{2}}-\d{{2}}(?: \d{{2}}:\d{{2}}:\d{{2}})?)"
_V, _W = rf"(?P<v>{_DATE})", rf"(?P<w>{_DATE})"
_Q = r"(?<!\w)'(?P<v>.+?)'(?=[\s.,;:!?]|$)"  # quoted text; an apostrophe inside ("Let's") does not end it


def _any(words: tuple[str, ...]) -> str:
    return "|".join(re.escape(word) for word in words)


_STATUS, _PRODUCT = rf"(?P<v>{_any(STATUSES)})\b", rf"(?P<v>{_any(PRODUCTS)})\b"
_BOARD, _LIST = rf"'(?P<v>{_any(BOARDS)})'", rf"'(?P<v>{_any(LIST_NAMES)})'"
Replacement = str | Callable[[re.Match[str]], str]
# Per type: (pattern, replacement, what was removed, what the user says to reveal it). The groups ``v`` and
# ``w`` hold the removed values; the texts are formatted with the match's groups.
# fmt: off
_RULES: dict[str, tuple[tuple[str, Replacement, str, str], ...]] = {
    _REFERENTIAL: (
        (r"\b(?:the )?(?:calendar )?(?P<k>email|event|task|customer)(?: with id)? (?P<v>\d{8})\b",
         r"that \g<k>", "{k} id ({v})", "It's {k} {v}."),
        (rf"(?:(?P<o>\w+)'s|the) (?:latest|last|most recent) email about {_Q}",
         lambda m: "that email" + (f" from {m['o']}" if m["o"] else ""), "email subject ('{v}')",
         "It's the one about '{v}'."),
        (rf"\ball emails from (?P<o>\w+) about {_Q}", r"all those emails from \g<o>",
         "email subject ('{v}')", "The ones about '{v}'."),
        (rf"\bmy {_Q}(?= with)", "that meeting", "meeting name ('{v}')", "It's the '{v}' meeting."),
        (rf"\b(?P<o>\w+)'s task {_Q}", r"that task of \g<o>'s", "task name ('{v}')", "It's the task '{v}'."),
        (rf"\bthe task {_Q} due {_W}", "that task", "task ('{v}' due {w})",
         "It's the task '{v}' due {w}."),
        (rf"\b(?P<v>[a-z]+\.[a-z]+@{re.escape(DOMAIN)})\b", "my colleague", "colleague's address ({v})",
         "I mean {v}."),
    ),
    _MISSING: (
        (rf" (?:from|for) {_V} (?:to|through|until) {_W}", "", "date range ({v} to {w})", "From {v} to {w}."),
        (rf" between {_V} and {_W}", "", "date range ({v} to {w})", "Between {v} and {w}."),
        (rf",? due(?: on)? {_V}", "", "due date ({v})", "Due on {v}."),
        (rf" starting {_V}", "", "start time ({v})", "Starting {v}."),
        (rf" to start at {_V}", " to a new time", "new start time ({v})", "It should start at {v}."),
        (rf"\b(?:Set|Change) the (?P<k>(?:due|follow-up) date of (?:task|customer) \d{{8}}) to {_V}",
         r"Update the \g<k>", "new date ({v})", "Set it to {v}."),
        (rf" who was last contacted on or before {_V}", "", "last-contact cutoff ({v})",
         "Those last contacted on or before {v}."),
        (rf" since {_V}", "", "start date ({v})", "Since {v}."),
        (rf"(?<!due) on {_V}", "", "date ({v})", "On {v}."),
        (r" at (?P<v>\d{1,2}(?::\d{2})?[ap]m)", "", "time ({v})", "At {v}."),
        (r" for (?P<v>\d+) minutes", "", "duration ({v} minutes)", "Make it {v} minutes."),
        (r" back by (?P<v>\d+) days?", " back", "delay ({v} days)", "By {v} days."),
        (r" to (?P<v>\d+) minutes", "", "new duration ({v} minutes)", "Make it {v} minutes."),
        (r"\b(?P<v>\d+)-minute ", "", "duration ({v} minutes)", "Make it {v} minutes."),
        (r" for the (?P<v>last \d+ days)(?:, including today)?", "", "time range (the {v})",
         "The {v}, including today."),
    ),
    _PREFERENCE: (
        (rf"\b(?P<v>{_any(PLOT_TYPES)}) (?P<k>plot|chart)\b", r"\g<k>", "plot type ({v})",
         "A {v} {k}, please."),
        (r"\ba (?P<v>histogram)\b", "a chart", "plot type ({v})", "A histogram, please."),
        (rf",? and (?:the )?body {_Q}", "", "email body ('{v}')", "The body should say '{v}'."),
        (rf" with {_Q}", "", "reply text ('{v}')", "Reply with '{v}'."),
        (rf"\b(?P<k>Rename .+?) to {_Q}", r"\g<k>", "new name ('{v}')", "Call it '{v}'."),
        (rf"\bReply {_Q} to", "Reply to", "reply text ('{v}')", "Reply with '{v}'."),
        (rf" with status {_STATUS}", "", "status ({v})", "With status {v}."),
        (rf"\b(?:Set|Change) the (?P<k>(?:status|product interest) of customer \d{{8}}) to "
         rf"(?P<v>{_any(STATUSES + PRODUCTS)})\b", r"Update the \g<k>", "new value ({v})", "Set it to {v}."),
        (rf"\bMark (?P<k>.+?) as {_STATUS}", r"Update the status of \g<k>", "new status ({v})",
         "Mark them as {v}."),
        (rf"\b{_STATUS} (?P<k>customers?)\b", r"\g<k>", "status filter ({v})", "Only the {v} ones."),
        (rf"(?:,| and| that are)? interested in (?:the )?{_PRODUCT}", "", "product ({v})",
         "Interested in {v}."),
        (rf" for the {_PRODUCT} product", "", "product ({v})", "The {v} product."),
        (rf" on the {_BOARD} board", "", "board ('{v}')", "On the '{v}' board."),
        (rf" to the {_BOARD} board", " to another board", "board ('{v}')", "The '{v}' board."),
        (rf"\ba {_BOARD} task", "a task", "board ('{v}')", "On the '{v}' board."),
        (rf" in {_LIST}", "", "list ('{v}')", "In '{v}'."),
        (rf" to {_LIST}", " to another list", "list ('{v}')", "To '{v}'."),
    ),
}
# fmt: on
_COMPILED = tuple(
    (kind, re.compile(pattern, re.IGNORECASE), *rest)
    for kind, rules in _RULES.items()
    for pattern, *rest in rules
)
_BACK_REFERENCE = re.compile(r"\b(?:that day|those days|that period|the same day)\b", re.IGNORECASE)
_DANGLING = re.compile(
    r"\b(?:with|and|to|for|of|on|from|in|at|by|a|an|the|due|that)[.,;]|  | [.,;]|[,;][.,;]", re.I
)
_FIRST_NAMES = frozenset(first for first, _, _ in EMPLOYEES)

Candidate = tuple[str, str, str, str, tuple[str, ...]]
"""(ambiguity type, new request, removed_info, clarification, removed values)."""


def user_prompt(original_request: str) -> str:
    """The simulated user's system prompt (NeMo-Gym's style) for a request the user originally meant."""
    return (
        "You are a workplace user who is utilizing an AI assistant to help you complete a task. You must "
        "stay in character as a human user and you only know what is written in your original intent "
        f"below, nothing else.\n\nYour original intent was:\n{original_request}\n\nRules:\n"
        "- Answer the assistant's questions only with information from your original intent.\n"
        "- If you are asked something your original intent does not say, say that you don't know.\n"
        "- Reply in 1-2 short sentences, as a person would; never write tool calls or code.\n"
        "- Do not volunteer information you were not asked for.\n"
        f"- When the assistant says the task is done, reply with {STOP_TOKEN} and nothing else."
    )


def _forms(value: str) -> list[str]:
    """Patterns for how ``value`` shows up in lower-cased ground-truth arguments."""
    spoken = re.fullmatch(rf"({'|'.join(_MONTHS)}) (\d{{1,2}})", value, re.IGNORECASE)
    if spoken:
        month = [m.lower() for m in _MONTHS].index(spoken[1].lower()) + 1
        return [rf"\d{{4}}-{month:02d}-{int(spoken[2]):02d}"]
    clock = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?([ap]m)", value)
    if clock:
        hour = int(clock[1]) % 12 + (12 if clock[3] == "pm" else 0)
        return [rf"\b{hour:02d}:{clock[2] or '00'}:00"]
    if value.isdigit():
        return [rf'": "{value}"']  # a duration: a whole argument value
    days = re.fullmatch(r"last (\d+) days", value)
    if days:
        return [f"{date.fromisoformat(NOW[:10]) - timedelta(days=int(days[1]) - 1):%Y-%m-%d}"]
    return [rf"(?<!\w){re.escape(value.lower())}(?!\w)"]


def _finish(new: str, request: str) -> str:
    """Keep the request's closing punctuation when the removed phrase held it."""
    if re.search(r"[.!?]'?$", request) and not re.search(r"[.!?]'?$", new):
        return new + "."
    return new


def _sentence(text: str) -> str:
    return text[:-1] if text.endswith(("!'.", ".'.", "?'.")) else text


def _arguments(call: Any) -> dict[str, Any]:
    try:
        return parse_arguments(call.get("arguments")) if isinstance(call, dict) else {}
    except ToolError:
        return {}


def _truth_text(truth: list[Any]) -> str:
    return " ".join(json.dumps(_arguments(call), ensure_ascii=False) for call in truth).lower()


def _acts_on_unnamed_record(request: str, truth: list[Any]) -> bool:
    """Whether a state-changing call targets a record id the request does not state."""
    return any(
        key.endswith("_id") and str(value) not in request
        for call in truth
        if isinstance(call, dict) and call.get("name") in STATE_CHANGING
        for key, value in _arguments(call).items()
    )


def _name_candidates(request: str, truth_text: str) -> list[Candidate]:
    """A colleague's first name becomes 'my colleague' at its first mention and 'them' after."""
    candidates = []
    words = dict.fromkeys(re.findall(r"\b[A-Za-z]+\b", request))
    quoted = " ".join(m["v"] for m in re.finditer(_Q, request))
    for word in words:
        known = word.lower() in _FIRST_NAMES or re.search(rf"\b{word.lower()}\.[a-z]+@", truth_text)
        if not known or re.search(rf"\b{word}\b", quoted, re.IGNORECASE):
            continue
        mention = re.compile(rf"(?<![\w.@']){word}(?!\w|\.\w|@)('s)?", re.IGNORECASE)
        count = 0

        def refer(match: re.Match[str]) -> str:
            nonlocal count
            count += 1
            if count > 1:
                return "their" if match[1] else "them"
            start = match.start() == 0 or request[: match.start()].endswith(". ")
            return ("My" if start else "my") + " colleague" + (match[1] or "")

        new = _finish(mention.sub(refer, request), request)
        removed = f"The colleague's name ({word}) was replaced with 'my colleague'."
        candidates.append((_REFERENTIAL, new, removed, f"I mean {word}.", (word,)))
    return candidates


@lru_cache(maxsize=1)
def _customer_names() -> re.Pattern[str]:
    names = sorted((row["customer_name"] for row in default_state().customers.rows()), key=len, reverse=True)
    return re.compile(rf"\b(?:{_any(tuple(names))})\b", re.IGNORECASE)


def _customer_candidates(request: str) -> list[Candidate]:
    """An existing customer's name becomes 'that customer'."""
    return [
        (
            _REFERENTIAL,
            _finish(
                re.sub(rf"\b{re.escape(name)}\b", "that customer", request, flags=re.IGNORECASE), request
            ),
            f"The customer's name ({name}) was replaced with 'that customer'.",
            f"I mean {name}.",
            (name,),
        )
        for name in dict.fromkeys(_customer_names().findall(request))
    ]


def _rule_candidates(request: str) -> list[Candidate]:
    candidates = []
    for kind, pattern, replacement, what, said in _COMPILED:
        match = pattern.search(request)
        if match is None:
            continue
        inserted = replacement(match) if callable(replacement) else match.expand(replacement)
        new = _finish(request[: match.start()] + inserted + request[match.end() :], request)
        if kind == _MISSING and _BACK_REFERENCE.search(new):
            continue  # "that day" would point at the date just removed
        fields = {k: v for k, v in match.groupdict().items() if v is not None}
        removed = f"The {what.format(**fields)} was " + (
            f"replaced with '{inserted}'." if kind == _REFERENTIAL else "removed."
        )
        values = tuple(fields[g] for g in ("v", "w") if g in fields)
        candidates.append((kind, new, removed, _sentence(said.format(**fields)), values))
    return candidates


def _usable(candidate: Candidate, request: str, truth: list[Any], truth_text: str) -> bool:
    _, new, _, _, values = candidate
    if new == request or any(m.group() not in _DANGLING.findall(request) for m in _DANGLING.finditer(new)):
        return False
    if any(re.search(rf"(?<!\w){re.escape(v)}(?!\w)", new, re.IGNORECASE) for v in values):
        return False
    needed = all(any(re.search(form, truth_text) for form in _forms(v)) for v in values)
    return needed or _acts_on_unnamed_record(request, truth)


def _candidates(request: str, truth: list[Any]) -> list[Candidate]:
    """Every usable ambiguous variant of ``request`` for a row with ground truth ``truth``."""
    truth_text = _truth_text(truth)
    found = _name_candidates(request, truth_text) + _customer_candidates(request) + _rule_candidates(request)
    return [c for c in found if _usable(c, request, truth, truth_text)]


def ambiguous_row(row: dict[str, Any], rng: random.Random) -> dict[str, Any] | None:
    """A copy of ``row`` whose user request is ambiguous in one of ``AMBIGUITY_TYPES`` (the type chosen
    with ``rng`` among those that apply), with ``user_model_system_prompt`` and ``verifier_metadata``
    added and the ground truth unchanged; None when no ambiguity applies."""
    messages = (row.get("responses_create_params") or {}).get("input") or []
    users = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"]
    truth = row.get("ground_truth")
    if not users or not isinstance(truth, list) or not isinstance(messages[users[-1]].get("content"), str):
        return None
    request = messages[users[-1]]["content"]
    found = _candidates(request, truth)
    if not found:
        return None
    kind = rng.choice([t for t in AMBIGUITY_TYPES if any(c[0] == t for c in found)])
    _, new, removed, clarification, _ = rng.choice([c for c in found if c[0] == kind])
    variant = copy.deepcopy(row)
    variant["responses_create_params"]["input"][users[-1]]["content"] = new
    variant["user_model_system_prompt"] = user_prompt(request)
    variant["verifier_metadata"] = {
        "ambiguity_type": kind,
        "original_user_query": request,
        "removed_info": removed,
        "clarification": clarification,
    }
    return variant


def with_dialogue_variants(
    rows: list[dict[str, Any]], share: float, rng: random.Random
) -> list[dict[str, Any]]:
    """``rows`` with ``share`` of them (picked with ``rng``) replaced by their ambiguous variant where one
    applies; rows that already are dialogues stay as they are."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"dialogue_share must be between 0 and 1, got {share}")
    mixed = list(rows)
    for i in sorted(rng.sample(range(len(mixed)), round(share * len(mixed)))):
        if "user_model_system_prompt" not in mixed[i]:
            mixed[i] = ambiguous_row(mixed[i], rng) or mixed[i]
    return mixed
