"""Fuzzing the workplace sandbox's tool calls: sequences of random and near-valid calls, and the check a
sequence must pass on a fresh copy of the sandbox (`check_calls`).

Used by tests/test_workplace_fuzz.py and bench/fuzz.py.
"""

from __future__ import annotations

import contextlib
import json

from hypothesis import strategies as st

from kit.envs.workplace.sandbox import WorkplaceSandbox
from kit.envs.workplace.schemas import SPECS_BY_NAME, TOOL_NAMES
from kit.envs.workplace.state import MUTABLE_TABLES
from kit.envs.workplace.tasks import generate_tasks, quotas
from kit.testing.fuzz.verdicts import Crash, Unclear, Wrong

BASE = WorkplaceSandbox(tool_messages="kit")  # the kit tool set's promises: errors say what is wrong
BASE_SNAPSHOT = BASE.snapshot()
CALLS_PER_EXAMPLE = 10

_IDS = [
    next(iter(table.rows()))[table.id_column]
    for table in (BASE.state.emails, BASE.state.calendar, BASE.state.tasks, BASE.state.customers)
]
_PLAUSIBLE = st.sampled_from(
    [
        *_IDS,
        "00000000",
        "99999999",
        "123",
        "",
        " ",
        "0042",
        BASE.state.analytics[0]["visitor_id"],
        "2023-12-01",
        "2023-12-01 10:00:00",
        "2023-12-01 08:00:00",
        "2023-02-30",
        "2023-12-01T10:00:00",
        "tomorrow",
        "priya.sharma@atlas.com",
        "PRIYA.SHARMA@ATLAS.COM",
        "someone@example.com",
        "not-an-email",
        "priya",
        "Backlog",
        "in review",
        "Design",
        "back end",
        "Won",
        "lost",
        "Software",
        "total_visits",
        "visits_direct",
        "bar",
        "histogram",
        "direct",
        "search engine",
        "30",
        "0",
        "-5",
        "600",
        "99999",
        "event_name",
        "event_start",
        "duration",
        "participant_email",
        "status",
        "list_name",
        "board",
        "due_date",
        "assigned_to_email",
        "notes",
        "follow_up_by",
        "customer_email",
        "subject",
        "body",
        "sender/recipient",
        "task_id",
        "update budget",
    ]
)
_JUNK = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=4,
)
_VALUE = st.one_of(_PLAUSIBLE, _PLAUSIBLE, _PLAUSIBLE, st.text(max_size=30), st.integers(-3, 200), _JUNK)
_NAME = st.one_of(
    st.sampled_from(TOOL_NAMES),
    st.sampled_from(TOOL_NAMES),
    st.sampled_from(TOOL_NAMES),
    st.sampled_from(["", "unknown_tool", "email_send", "EMAIL_SEND_EMAIL", "email_send_email "]),
    st.text(max_size=15),
    st.none(),
    st.integers(),
)


def _exact_state(sandbox: WorkplaceSandbox) -> tuple:
    """The raw rows of every mutable table and the plots: stricter than the normalised snapshot, and cheap
    enough to take after each of the 10,000 calls (rows are immutable, so equal rows compare by identity)."""
    return (*(tuple(getattr(sandbox.state, name).rows()) for name in MUTABLE_TABLES), sandbox.state.plots)


_VALID = [
    (call["name"], json.loads(call["arguments"]))
    for tasks in generate_tasks(quotas(120), seed=7).values()
    for task in tasks
    for call in task.calls
]


@st.composite
def _near_valid_call(draw: st.DrawFn) -> tuple[object, object]:
    """A ground-truth call of a generated task, as is or with one argument dropped or replaced."""
    name, arguments = draw(st.sampled_from(_VALID))
    arguments = dict(arguments)
    change = draw(st.sampled_from(["none", "none", "drop", "replace"]))
    if change != "none" and arguments:
        key = draw(st.sampled_from(sorted(arguments)))
        if change == "drop":
            del arguments[key]
        else:
            arguments[key] = draw(_VALUE)
    return name, arguments if draw(st.booleans()) else json.dumps(arguments)


@st.composite
def _random_call(draw: st.DrawFn) -> tuple[object, object]:
    name = draw(_NAME)
    spec = SPECS_BY_NAME.get(name) if isinstance(name, str) else None
    known = [p.name for p in spec.params] if spec else ["query", "name", "email_id"]
    keys = draw(st.lists(st.sampled_from(known) | st.text(max_size=8), max_size=len(known) + 1, unique=True))
    arguments: object = {key: draw(_VALUE) for key in keys}
    form = draw(st.sampled_from(["dict", "dict", "json", "json", "malformed", "other"]))
    if form == "json":
        arguments = json.dumps(arguments)
    elif form == "malformed":
        arguments = draw(st.text(max_size=40) | st.just(json.dumps(arguments)[:-1]))
    elif form == "other":
        arguments = draw(
            st.none() | st.integers() | st.lists(st.integers(), max_size=2) | st.just("") | _JUNK
        )
    return name, arguments


calls = st.lists(_random_call() | _near_valid_call(), min_size=CALLS_PER_EXAMPLE, max_size=CALLS_PER_EXAMPLE)


def _names_the_fault(observation: str, name: object, arguments: object) -> bool:
    """Whether an error observation names what it refuses: the tool, one of its parameters, an argument or
    a value of the call, or the arguments as a whole."""
    text = observation.lower()
    spec = SPECS_BY_NAME.get(name) if isinstance(name, str) else None
    mentioned = {"argument", "tool", str(name).lower(), *(p.name for p in (spec.params if spec else ()))}
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    if isinstance(arguments, dict):
        mentioned |= {str(key).lower() for key in arguments}
        values = [value for value in arguments.values() if isinstance(value, (str, int))]
        mentioned |= {form.lower() for value in values for form in (str(value), repr(value))}
    return any((word and word in text) or f"'{word}'" in text for word in mentioned)  # '' only quoted


def check_calls(calls: list[tuple[object, object]]) -> None:
    """Run ``calls`` on a fresh sandbox. Raises Crash (a call raised, or a tool failed inside), Unclear (an
    error observation that names nothing of the call) or Wrong (a refused call changed the state, or the
    outcome differs from replaying the successful calls alone)."""
    sandbox = BASE.copy()
    before = _exact_state(sandbox)
    succeeded = []
    for name, arguments in calls:
        try:
            observation = sandbox.call(name, arguments)  # type: ignore[arg-type]
        except Exception as error:
            raise Crash(f"{name}({arguments!r:.200}) raised {error!r}") from error
        if not isinstance(observation, str) or not observation:
            raise Wrong(f"{name}({arguments!r:.200}) returned {observation!r}")
        if observation.startswith("Error: internal"):
            raise Crash(f"{name}({arguments!r:.200}): {observation}")
        after = _exact_state(sandbox)
        if observation.startswith("Error:"):
            if after != before:
                raise Wrong(f"{name}({arguments!r:.200}) was refused and changed the state: {observation}")
            if not _names_the_fault(observation, name, arguments):
                raise Unclear(f"{name}({arguments!r:.200}): {observation}")
        else:
            succeeded.append((name, arguments))
        before = after
    # The outcome depends on the successful calls alone.
    replayed = BASE.copy()
    for name, arguments in succeeded:
        replayed.call(name, arguments)  # type: ignore[arg-type]
    if replayed.snapshot() != sandbox.snapshot():
        raise Wrong(f"replaying the {len(succeeded)} successful calls gives another state")
