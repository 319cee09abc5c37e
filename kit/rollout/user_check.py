"""`kit user check`: how well a simulated user keeps its rules, measured before it answers a policy.

With an LLM user, a dialogue evaluation measures the user as much as the policy. This check drives any
user simulator through written policy turns on dialogue rows, two dialogues per row:

1. a clarifying question about what the request left out (the intent's details the request lacks:
   `kit.rollout.user_rules.held_back`), then a question the intent has no answer to, then, after the
   row's ground-truth calls (so a scripted user sees the state match), a completion message;
2. a "done" before any call. The request was ambiguous, so a user who knows its intent knows the work
   cannot be done yet: ending here is ending early.

Every verdict is string and number matching against the intent, no judgement: answers that carry the
asked details, replies that reveal held-back details nobody asked for, invented details, "I don't know"
where the intent has no answer, ending after completion and never before, staying in the user's role,
and reply length. Each rate comes with its 95 % Wilson interval.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from kit.episode import Task
from kit.rollout.user_rules import (
    MAX_REPLY_CHARS,
    Detail,
    has_tool_call,
    held_back,
    invented,
    mentions,
    says_unknown,
    speaks_as_assistant,
)
from kit.rollout.user_simulators import USER_WORKERS, UserSimulator
from kit.stats import share

UNKNOWN_QUESTION = (
    "Thanks. One more thing: what is your manager's phone number, in case they need to approve this?"
)
EARLY_DONE = "I have taken care of that for you. Is there anything else?"
COMPLETION = "Done: I have made the change you asked for. Is there anything else?"
_NOUNS = {"quoted": "wording", "email": "email address", "date": "date", "time": "time",
          "number": "number or id", "name": "name", "word": "detail"}  # fmt: skip

CHECKS: dict[str, tuple[str, str]] = {
    "carries_asked_detail": ("answers carry the asked detail", "high"),
    "reveals_unasked_detail": ("reveals held-back details unasked", "low"),
    "invents_detail": ("invents a detail", "low"),
    "says_unknown": ("says it doesn't know, as the user", "high"),
    "ends_after_completion": ("ends after completion", "high"),
    "never_ends_early": ("never ends before completion", "high"),
    "not_fooled_by_early_done": ("keeps talking after an early 'done'", "high"),
    "stays_in_role": ("stays in the user's role", "high"),
    "within_length": (f"replies within {MAX_REPLY_CHARS} characters", "high"),
    "no_reply": ("no usable reply (error, timeout, empty)", "low"),
}
"""Each check: what the table calls it and which way is good."""


def clarifying_question(missing: list[Detail]) -> str:
    """The policy's question about the details `missing` from the request, named by kind."""
    nouns = list(dict.fromkeys(_NOUNS[d.kind] for d in missing)) or ["detail"]
    what = nouns[0] if len(nouns) == 1 else ", ".join(nouns[:-1]) + " and " + nouns[-1]
    return (
        f"Before I make any change: your request leaves something open. Could you tell me the exact {what}?"
    )


@dataclass
class Verdicts:
    """One row's outcome of each check: lists of pass/fail (a check may apply to several replies, or
    none), the replies' lengths, and the replies that failed a check, for the report's examples."""

    passed: dict[str, list[bool]] = field(default_factory=dict)
    lengths: list[int] = field(default_factory=list)
    failed: dict[str, list[str]] = field(default_factory=dict)

    def add(self, check: str, ok: bool, text: str) -> None:
        self.passed.setdefault(check, []).append(ok)
        bad = ok if CHECKS[check][1] == "low" else not ok
        if bad:
            self.failed.setdefault(check, []).append(text)


def _turn(user: UserSimulator, task: Task, view: list[dict[str, str]], calls: list, found: Verdicts):
    """Ask `user` for its reply to `view`; record the checks every reply gets. Returns the reply."""
    reply = user.reply(task, view, calls)
    found.add("no_reply", reply.error is not None, reply.error or "")
    if reply.error is None and not reply.stop:
        found.lengths.append(len(reply.text))
        found.add("within_length", len(reply.text) <= MAX_REPLY_CHARS, reply.text)
        in_role = not (speaks_as_assistant(reply.text) or has_tool_call(reply.text))
        found.add("stays_in_role", in_role, reply.text)
        found.add("invents_detail", bool(invented(task, view, reply.text)), reply.text)
    return reply


def check_row(user: UserSimulator, task: Task) -> Verdicts:
    """Both dialogues of one dialogue row, and the verdicts of every reply."""
    found = Verdicts()
    missing = held_back(task)
    view = [{"role": "user", "content": clarifying_question(missing)}]
    answer = _turn(user, task, view, [], found)
    text = answer.text if answer.error is None and not answer.stop else ""
    found.add("never_ends_early", not answer.stop, "END (asked a clarifying question)")
    if missing:
        # Details of the word kind are the left-out wording, noise words included: one of them will do.
        carried = [mentions(text, d) for d in missing]
        found.add("carries_asked_detail", any(carried) if missing[0].kind == "word" else all(carried), text)
    if answer.error is None and not answer.stop:
        view += [{"role": "assistant", "content": text}, {"role": "user", "content": UNKNOWN_QUESTION}]
        reply = _turn(user, task, view, [], found)
        found.add("never_ends_early", not reply.stop, "END (asked a question)")
        if reply.error is None and not reply.stop:
            in_role = not (speaks_as_assistant(reply.text) or has_tool_call(reply.text))
            found.add("says_unknown", in_role and says_unknown(reply.text), reply.text)
            leaked = [d for d in missing if mentions(reply.text, d) and not mentions(text, d)]
            found.add("reveals_unasked_detail", bool(leaked), reply.text)
            view += [{"role": "assistant", "content": reply.text}, {"role": "user", "content": COMPLETION}]
            done = _turn(user, task, view, list(task.ground_truth), found)
            found.add("ends_after_completion", done.stop, done.text or done.error or "")
    early = _turn(user, task, [{"role": "user", "content": EARLY_DONE}], [], found)
    found.add("never_ends_early", not early.stop, "END (told 'done' before any call)")
    found.add("not_fooled_by_early_done", not early.stop, "END (told 'done' before any call)")
    return found


def check_user(
    user: UserSimulator,
    tasks: list[Task],
    workers: int = USER_WORKERS,
    progress: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """The report of `check_row` over the dialogue rows of `tasks` (rows run `workers` at a time):
    each check's rate with its 95 % interval, the replies' length, and up to three failing replies per
    check. `progress` is called once per row checked, as each finishes."""
    talks = [t for t in tasks if t.is_dialogue]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        checking = [pool.submit(check_row, user, t) for t in talks]
        if progress is not None:
            for checked in as_completed(checking):
                checked.result()
                progress()
        rows = [checked.result() for checked in checking]
    checks, examples = {}, {}
    for name, (label, good) in CHECKS.items():
        results = [ok for row in rows for ok in row.passed.get(name, [])]
        checks[name] = {**share(sum(results), len(results)), "label": label, "better": good}
        failed = [text for row in rows for text in row.failed.get(name, [])]
        if failed:
            examples[name] = [text[:300] for text in failed[:3]]
    lengths = [n for row in rows for n in row.lengths]
    return {
        "user_model": user.name,
        "rows": len(talks),
        "other_rows": len(tasks) - len(talks),
        "rows_without_held_back_details": sum(not held_back(t) for t in talks),
        "checks": checks,
        "reply_chars": {
            "mean": round(statistics.fmean(lengths), 1) if lengths else None,
            "median": statistics.median(lengths) if lengths else None,
            "max": max(lengths, default=None),
        },
        "failing_examples": examples,
    }


def report_table(report: dict[str, Any]) -> str:
    """The report as a table for a terminal."""
    lines = [
        f"kit user check: user model '{report['user_model']}' on {report['rows']} dialogue rows",
        f"{'check':<46}{'rate':>8}  {'95 % interval':<17}{'n':>5}  want",
    ]
    for check in report["checks"].values():
        low, high = check["interval95"]
        interval = f"[{low:.1%}, {high:.1%}]" if check["n"] else "-"
        rate = f"{check['rate']:.1%}" if check["n"] else "-"
        lines.append(f"{check['label']:<46}{rate:>8}  {interval:<17}{check['n']:>5}  {check['better']}")
    chars = report["reply_chars"]
    lines.append(
        f"reply length (characters): mean {chars['mean']}, median {chars['median']}, max {chars['max']}"
    )
    return "\n".join(lines)
