"""The rules a simulated user keeps, checked in code on each of its replies.

A simulated user stands for a person who knows one intent (`verifier_metadata.original_user_query`), of
which the policy saw an ambiguous part (the task's last user message). Such a person answers what is
asked from the intent, invents nothing, says so when the intent has no answer, speaks as a user (never
as the assistant, never in tool calls or code), keeps replies short, and ends the talk only once the work
is done (τ²-bench's user-error review, UserLM's role adherence and ending on time).

What needs no judgement is checked here, by matching *details*: the things an intent names that a policy
cannot guess (email addresses, numbers and ids, dates, times, quoted text, names). `reply_breaks` runs on
every reply of every dialogue rollout; `kit user check` (kit.rollout.user_check) adds the checks that
need to know what was asked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kit.episode import Task

MAX_REPLY_CHARS = 1200
"""A reply longer than this is not a user's answer to a question."""

RULES = ("no_reply", "tool_call", "too_long", "assistant_speak", "invented_detail", "premature_end")
"""What a simulated user can break in a rollout: no usable reply (unreachable, timed out, empty, or no
user for the row), a tool call or code, over `MAX_REPLY_CHARS`, speaking as the assistant, a detail that
neither its intent nor the dialogue holds, or ending before the policy made any of the task's calls."""

_TOOL_MARKERS = ("<tool_call>", "</tool_call>", '"arguments"', "```")
_ASSISTANT_SPEAK = re.compile(
    r"\b(?:I'?m|I am) (?:here|happy|glad) to (?:help|assist)|\bhow (?:can|may) I (?:help|assist)"
    r"|\bI(?:'d| would) be (?:happy|glad) to (?:help|assist)|\bAI (?:language )?model\b"
    r"|\banything else I can (?:help|do)|\blet me know if you (?:need|have)|\bI can help you\b"
    r"|\bglad I could help\b|\bI(?:'ll| will) (?:help|assist) you\b|\bassist you with\b"
    r"|\bas an? (?:AI|chatbot|assistant|language model)\b"
    r"|\bI(?:'m| am) an? (?:AI|chatbot|virtual assistant)\b"
    r"|\bI(?:'m| am) (?:designed|programmed|trained) to\b|\bI(?:'ve| have) (?:sent|deleted|"
    r"created|updated|scheduled|added|moved) (?:the|an?|your|it)\b",
    re.IGNORECASE,
)
_UNKNOWN = re.compile(
    r"\b(?:don'?t|do not|doesn'?t|does not) (?:know|have|remember|say|matter)|\bnot sure\b|\bno idea\b"
    r"|\bunsure\b|\bcan'?t (?:say|tell)|\bcannot (?:say|tell)|\bonly know\b|\ball I know\b"
    r"|\bno preference\b|\bup to you\b|\bnot needed\b|\bno need\b|\bnot relevant\b",
    re.IGNORECASE,
)

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")  # fmt: skip
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_QUOTED = re.compile(r"(?<!\w)'(.+?)'(?=[\s.,;:!?)]|$)|\"(.+?)\"")
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("quoted", _QUOTED),
    ("email", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    ("date", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::\d{2})?)?\b")),
    ("date", re.compile(rf"\b({_MONTH}) (\d{{1,2}})(?:st|nd|rd|th)?\b(?:,? \d{{4}})?", re.IGNORECASE)),
    ("date", re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?({_MONTH})(?:,? \d{{4}})?", re.IGNORECASE)),
    ("time", re.compile(r"\b(\d{1,2})(?::(\d{2}))? ?([ap])\.?m\.?\b", re.IGNORECASE)),
    ("time", re.compile(r"\b(\d{1,2}):(\d{2})(?::\d{2})?\b")),
    ("number", re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w])")),
)
_NAME = re.compile(r"(?<![\w'])[A-Z][a-z]+(?:[A-Z][a-z]+)*\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\"'(\n-])\s*$")
_NOT_NAMES = frozenset((*_MONTHS, *_WEEKDAYS, "today", "tomorrow", "yesterday", "please", "thanks", "okay"))
# fmt: off
_STOPWORDS = frozenset(("the", "and", "for", "with", "from", "that", "this", "these", "those", "its", "are",
                        "was", "please", "can", "could", "would", "you", "your", "all", "any", "into",
                        "about", "them", "their", "they", "one"))
# fmt: on


@dataclass(frozen=True, order=True)
class Detail:
    """A thing a text names, in a form that matches however it is written (`"May 3"` and `"2024-05-03"`
    are the date `05-03`; `"00000012"` and `"12"` the number `12`)."""

    kind: str  # quoted, email, date, time, number, name, or word (a request's left-out wording)
    key: str


def _date_key(month: str, day: str) -> str | None:
    number = int(month) if month.isdigit() else _month_number(month)
    return f"{number:02d}-{int(day):02d}" if number and 1 <= int(day) <= 31 else None


def _month_number(word: str) -> int | None:
    word = word.lower().rstrip(".")
    return next((i + 1 for i, month in enumerate(_MONTHS) if month.startswith(word[:3])), None)


def _keys(kind: str, match: re.Match[str]) -> list[Detail]:
    groups = match.groups()
    if kind == "quoted":
        return [Detail("quoted", (groups[0] or groups[1]).strip().lower())]
    if kind == "email":
        return [Detail("email", match.group().lower())]
    if kind == "date":
        if groups[0].isdigit() and len(groups[0]) == 4:  # ISO, maybe with a time
            found = [Detail("date", f"{groups[1]}-{groups[2]}")]
            return found + ([Detail("time", f"{groups[3]}:{groups[4]}")] if groups[3] else [])
        month, day = (groups[0], groups[1]) if not groups[0].isdigit() else (groups[1], groups[0])
        key = _date_key(month, day)
        return [Detail("date", key)] if key else []
    if kind == "time":
        hour, minute = int(groups[0]), groups[1] or "00"
        if len(groups) == 3:  # 3pm, 10:30 am
            hour = hour % 12 + (12 if groups[2].lower() == "p" else 0)
        return [Detail("time", f"{hour:02d}:{minute}")]
    return [Detail("number", str(float(groups[0])).removesuffix(".0"))]


def details(text: str) -> set[Detail]:
    """The details `text` names. A quoted text is one detail (the date inside it is not another); a
    capitalised word counts as a name only where a sentence does not start with it."""
    found: set[Detail] = set()
    rest = text
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(rest):
            found.update(_keys(kind, match))
        rest = pattern.sub(lambda m: " " * len(m.group()), rest)
    for match in _NAME.finditer(rest):
        word = match.group()
        if word.lower() not in _NOT_NAMES and not _SENTENCE_START.search(rest[: match.start()]):
            found.add(Detail("name", word.lower()))
    return found


def mentions(text: str, detail: Detail) -> bool:
    """Whether `text` names `detail`, in any form (a name or a word anywhere, a sentence's first word
    too)."""
    if detail.kind in ("name", "word", "quoted"):
        return re.search(rf"(?<!\w){re.escape(detail.key)}(?!\w)", text, re.IGNORECASE) is not None
    if detail.kind == "email":
        return detail.key in text.lower()
    return detail in details(text)


def intent(task: Task) -> str:
    """What the user originally meant: `verifier_metadata.original_user_query`, else empty."""
    metadata = task.user.get("verifier_metadata") or {}
    return str(metadata.get("original_user_query") or "")


def request(task: Task) -> str:
    """The (ambiguous) request the policy was given: the task's last user message."""
    users = [m for m in task.messages if m.get("role") == "user"]
    return str(users[-1].get("content") or "") if users else ""


def held_back(task: Task) -> list[Detail]:
    """The details of the intent that the request leaves out; when none of the intent's details is left
    out (a status or a plot type, say), its content words the request lacks (kind `word`)."""
    original, asked = intent(task), request(task)
    left_out = sorted(d for d in details(original) if not mentions(asked, d))
    if left_out or not original:
        return left_out
    words = dict.fromkeys(re.findall(r"[a-z]{3,}", original.lower()))
    asked_words = set(re.findall(r"[a-z]{3,}", asked.lower()))
    return [Detail("word", w) for w in words if w not in asked_words and w not in _STOPWORDS]


def known_text(task: Task, view: Iterable[dict[str, str]]) -> str:
    """Everything the user may draw details from: its system prompt, its intent, the task's messages
    (the date of today, the request) and the dialogue so far."""
    parts = [str(task.user.get("user_model_system_prompt") or ""), intent(task)]
    parts += [str(m.get("content") or "") for m in (*task.messages, *view)]
    return "\n".join(parts)


def invented(task: Task, view: Iterable[dict[str, str]], text: str) -> list[Detail]:
    """The details of the reply `text` that neither the user's intent nor the dialogue before it holds."""
    known = known_text(task, view)
    return sorted(d for d in details(text) if not mentions(known, d))


def speaks_as_assistant(text: str) -> bool:
    """Whether the reply talks as the assistant does ("I'm here to assist you", "How can I help?"); quoted
    text is the user dictating (an email's body, say), not speaking."""
    return _ASSISTANT_SPEAK.search(_QUOTED.sub("''", text)) is not None


def has_tool_call(text: str) -> bool:
    """Whether the reply holds a tool call or code, which a user never writes."""
    return any(marker in text for marker in _TOOL_MARKERS)


def says_unknown(text: str) -> bool:
    """Whether the reply says the user does not know (or does not mind)."""
    return _UNKNOWN.search(text) is not None


def acted(task: Task, calls: Iterable[dict[str, Any]]) -> bool:
    """Whether the policy made any call of a tool the task's ground truth calls (or the task needs none)."""
    needed = {call.get("name") for call in task.ground_truth}
    return not needed or any(call.get("name") in needed for call in calls)


def reply_breaks(
    task: Task, view: list[dict[str, str]], calls: list[dict[str, Any]], text: str, stop: bool
) -> list[str]:
    """The `RULES` one reply breaks: `text` (or the stop token, `stop`) said after the dialogue `view`
    (the user's side, ending on the policy's message) and the policy's `calls` so far."""
    if stop:
        return [] if acted(task, calls) else ["premature_end"]
    broken = []
    if has_tool_call(text):
        broken.append("tool_call")
    if len(text) > MAX_REPLY_CHARS:
        broken.append("too_long")
    if speaks_as_assistant(text):
        broken.append("assistant_speak")
    if invented(task, view, text):
        broken.append("invented_detail")
    return broken
