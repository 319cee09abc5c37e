"""Seeded call sequences for the workplace tools: valid calls on the records of a given state, the same
with an argument dropped, replaced (wrong type, long or unicode text, regex characters, odd dates) or
added, calls of any tool with random arguments, unknown tools, and arguments as JSON text, malformed JSON
or JSON that is not an object.

Used by the differential test against NeMo-Gym's server (``workplace_differential``). Names keep to
characters a URL path carries unchanged, and numbers to what NeMo-Gym's agent can send (64-bit integers,
finite floats): see docs/nemo-gym.md for what lies outside.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kit.envs.workplace.schemas import SPECS_BY_NAME, TOOL_NAMES
from kit.envs.workplace.state import WorkplaceState

Call = tuple[str, Any]
"""``(tool name, arguments)``: arguments as a dict, or as the JSON text a model wrote."""

LONG = "x" * 5000
UNICODE = [
    "Café",
    "naïve résumé",
    "日本語のメール",
    "İstanbul",
    "STRASSE straße",
    "🙂 emoji",
    "שלום",
    "e\u0301",
    "Ⅻ",
]
SURROGATES = ["a\ud800", "\udfff", "x\ud83dy"]  # lone surrogates, which JSON's \ud800 escapes carry
REGEX = ["(", "[a-", "a|b", ".*", r"\d+", "(?i)Lead", "a{2}", "^M", "t$", "\\", "(?=a)", r"\s", "(a)(b)"]
TEXT = ["", " ", "\n", "\t x", "null", "{}", "none", "NaN", "0", "-1", "30", "1e3", " 45 ", "4.5", "٣٠"]
DATES = [
    "2023-11-30", "2023-11-01", "2023-12-01 10:00:00", "2023-11-30T10:00:00", "2023-11-30T10:00:00Z",
    "2023-02-30", "tomorrow", "now", "30/11/2023", "2023", "NaT", "2023-11-30 08:00", "1999-01-01",
    "2024-01-01", "2023-10-15",
]  # fmt: skip
EMAILS = ["someone@example.com", "UPPER@ATLAS.COM", "no-at-sign", "a@b", "a@b.c", "a@b.cc\n", "@."]
WRONG_TYPES: list[Any] = [
    0, 1, -5, 30, 2**40, 0.0, 1.5, 2.0, 1e-7, 1e-5, True, False, None, [], ["a"], [1], ["@", "."],
    ["00000001"], [1, 2], {}, {"a": 1}, {"@": 1, ".": 2},
]  # fmt: skip
UNKNOWN_NAMES = [
    "unknown_tool",
    "email_send",
    "EMAIL_SEND_EMAIL",
    "email_send_email ",
    "search",
    "self",
    "Ωmega",
]


@dataclass(frozen=True)
class Vocabulary:
    """Values drawn from one state: its ids, people, names and dates."""

    ids: dict[str, list[str]]
    people: list[str]
    customers: list[str]
    task_names: list[str]
    event_names: list[str]
    subjects: list[str]
    visitors: list[str]
    days: list[str]

    @classmethod
    def of(cls, state: WorkplaceState, rng: random.Random, size: int = 40) -> Vocabulary:
        def some(values: list[str]) -> list[str]:
            return rng.sample(values, min(size, len(values)))

        tables = {
            "email": state.emails,
            "event": state.calendar,
            "task": state.tasks,
            "customer": state.customers,
        }
        return cls(
            ids={noun: some([r[t.id_column] for r in t.rows()]) for noun, t in tables.items()},
            people=list(state.directory),
            customers=some([r["customer_name"] for r in state.customers.rows()]),
            task_names=some([r["task_name"] for r in state.tasks.rows()]),
            event_names=some([r["event_name"] for r in state.calendar.rows()]),
            subjects=some([r["subject"] for r in state.emails.rows()]),
            visitors=some([r["visitor_id"] for r in state.analytics]),
            days=sorted({r["date_of_visit"] for r in state.analytics}),
        )


STATUSES = ["Qualified", "Won", "Lost", "Lead", "Proposal"]
PRODUCTS = ["Software", "Hardware", "Services", "Consulting", "Training"]
LISTS = ["Backlog", "In Progress", "In Review", "Completed"]
BOARDS = ["Back end", "Front end", "Design"]
SOURCES = ["direct", "referral", "search engine", "social media"]
PLOT_VALUES = ["total_visits", "session_duration_seconds", "user_engaged", "visits_direct", "visits_referral",
               "visits_search_engine", "visits_social_media"]  # fmt: skip
PLOT_TYPES = ["bar", "line", "scatter", "histogram"]
FIELDS = {
    "email": ["email_id", "inbox/outbox", "sender/recipient", "subject", "sent_datetime", "body"],
    "event": ["event_name", "participant_email", "event_start", "duration", "event_id"],
    "task": ["task_name", "assigned_to_email", "list_name", "due_date", "board", "task_id"],
    "customer": ["customer_name", "assigned_to_email", "customer_email", "customer_phone",
                 "last_contact_date", "product_interest", "status", "notes", "follow_up_by", "customer_id"],
}  # fmt: skip


class Draw:
    """Random values for one sequence, from a vocabulary."""

    def __init__(self, rng: random.Random, vocabulary: Vocabulary) -> None:
        self.rng, self.v = rng, vocabulary

    def pick(self, values: list[Any]) -> Any:
        return self.rng.choice(values)

    def first_name(self) -> str:
        name = self.pick(self.v.people).split("@")[0].split(".")[0]
        return self.pick([name, name.capitalize(), name.upper()])

    def word(self, texts: list[str]) -> str:
        return self.pick(self.pick(texts).split() or ["x"])

    def day(self) -> str:
        return self.pick(self.v.days)

    def when(self) -> str:
        return f"{self.day()} {self.rng.randint(8, 18):02d}:{self.pick(['00', '30'])}:00"

    def anything(self) -> Any:
        """A value of any kind: plausible, odd text, or a wrong JSON type."""
        kind = self.rng.random()
        if kind < 0.3:
            return self.pick(WRONG_TYPES)
        if kind < 0.45:
            return self.pick([LONG, LONG[:300] + "é", *UNICODE, *SURROGATES])
        if kind < 0.6:
            return self.pick(REGEX)
        if kind < 0.75:
            return self.pick(TEXT + DATES + EMAILS)
        pools = [self.v.people, self.v.customers, self.v.task_names, STATUSES, LISTS, BOARDS, PRODUCTS,
                 SOURCES, PLOT_VALUES, *self.v.ids.values(), [self.day(), self.when()]]  # fmt: skip
        return self.pick(self.pick(pools))


def _valid_builders(d: Draw) -> dict[str, Callable[[], dict[str, Any]]]:
    """A well-formed call of each tool on the vocabulary's records (it may still be refused: a value can
    name nothing, which is what a model does too)."""
    ids, v = d.v.ids, d.v

    def some(share: float, **values: Callable[[], Any]) -> dict[str, Any]:
        """Each argument with probability ``share``."""
        return {key: value() for key, value in values.items() if d.rng.random() < share}

    def paged(arguments: dict[str, Any]) -> dict[str, Any]:
        page = some(0.3, page=lambda: d.rng.randint(1, 4), page_size=lambda: d.pick([1, 2, 5, 10, 50]))
        return {**arguments, **page}

    def update(noun: str, **values: Callable[[], Any]) -> dict[str, Any]:
        field = d.pick(list(values))
        return {f"{noun}_id": d.pick(ids[noun]), "field": field, "new_value": values[field]()}

    def read(noun: str) -> dict[str, Any]:
        return {f"{noun}_id": d.pick(ids[noun]), "field": d.pick(FIELDS[noun])}

    def days(share: float) -> dict[str, Any]:
        return some(share, time_min=d.day, time_max=d.day)

    person, subject = (lambda: d.pick(v.people)), (lambda: d.pick(v.subjects))
    crm_filters = {
        "customer_name": lambda: d.word(v.customers),
        "status": lambda: d.pick(STATUSES),
        "product_interest": lambda: d.pick(PRODUCTS),
        "assigned_to_email": d.first_name,
        "customer_email": lambda: d.word(v.customers).lower(),
        "last_contact_date_min": d.day,
        "last_contact_date_max": d.day,
        "follow_up_by_min": d.day,
        "follow_up_by_max": d.day,
    }
    task_filters = {
        "task_name": lambda: d.word(v.task_names),
        "assigned_to_email": person,
        "list_name": lambda: d.pick(LISTS),
        "board": lambda: d.pick(BOARDS),
        "due_date": d.day,
    }
    return {
        "company_directory_find_email_address": lambda: {"name": d.first_name()},
        "email_get_email_information_by_id": lambda: read("email"),
        "email_search_emails": lambda: paged(
            some(
                0.6,
                query=lambda: d.pick([d.first_name(), d.word(v.subjects), ""]),
                date_min=d.day,
                date_max=d.day,
            )
        ),
        "email_send_email": lambda: {"recipient": person(), "subject": subject(), "body": "Hello"},
        "email_delete_email": lambda: {"email_id": d.pick(ids["email"])},
        "email_forward_email": lambda: {"email_id": d.pick(ids["email"]), "recipient": person()},
        "email_reply_email": lambda: {"email_id": d.pick(ids["email"]), "body": "Thanks, noted."},
        "calendar_get_event_information_by_id": lambda: read("event"),
        "calendar_search_events": lambda: paged(
            some(
                0.6,
                query=lambda: d.pick([d.first_name(), d.word(v.event_names)]),
                time_min=d.when,
                time_max=d.when,
            )
        ),
        "calendar_create_event": lambda: {
            "event_name": d.pick(v.event_names),
            "participant_email": person(),
            "event_start": d.when(),
            "duration": d.pick(["30", "60", "90"]),
        },
        "calendar_delete_event": lambda: {"event_id": d.pick(ids["event"])},
        "calendar_update_event": lambda: update(
            "event",
            event_name=lambda: d.pick(v.event_names),
            participant_email=person,
            event_start=d.when,
            duration=lambda: d.pick(["15", "45"]),
        ),
        "analytics_get_visitor_information_by_id": lambda: {"visitor_id": d.pick(v.visitors)},
        "analytics_create_plot": lambda: {
            "time_min": d.day(),
            "time_max": d.day(),
            "value_to_plot": d.pick(PLOT_VALUES),
            "plot_type": d.pick(PLOT_TYPES),
        },
        "analytics_total_visits_count": lambda: days(0.6),
        "analytics_engaged_users_count": lambda: days(0.6),
        "analytics_traffic_source_count": lambda: {
            **days(0.6),
            **some(0.7, traffic_source=lambda: d.pick(SOURCES)),
        },
        "analytics_get_average_session_duration": lambda: days(0.5),
        "project_management_get_task_information_by_id": lambda: read("task"),
        "project_management_search_tasks": lambda: some(0.4, **task_filters) or {"board": d.pick(BOARDS)},
        "project_management_create_task": lambda: {
            "task_name": d.pick(v.task_names),
            "assigned_to_email": person(),
            "list_name": d.pick(LISTS),
            "due_date": d.day(),
            "board": d.pick(BOARDS),
        },
        "project_management_delete_task": lambda: {"task_id": d.pick(ids["task"])},
        "project_management_update_task": lambda: update(
            "task",
            task_name=lambda: d.pick(v.task_names),
            assigned_to_email=person,
            list_name=lambda: d.pick(LISTS),
            due_date=d.day,
            board=lambda: d.pick(BOARDS),
        ),
        "customer_relationship_manager_search_customers": lambda: paged(
            some(0.25, **crm_filters) or {"status": d.pick(STATUSES)}
        ),
        "customer_relationship_manager_update_customer": lambda: update(
            "customer",
            status=lambda: d.pick(STATUSES),
            product_interest=lambda: d.pick(PRODUCTS),
            assigned_to_email=person,
            follow_up_by=d.day,
            notes=lambda: "Called back.",
            customer_email=lambda: "new.address@example.com",
            last_contact_date=d.day,
        ),
        "customer_relationship_manager_add_customer": lambda: {
            "customer_name": "Ada Lovelace",
            "assigned_to_email": person(),
            "status": d.pick(STATUSES),
            **some(
                0.5,
                customer_email=lambda: "ada@example.com",
                product_interest=lambda: d.pick(PRODUCTS),
                follow_up_by=d.day,
                notes=lambda: "Met at a fair.",
                customer_phone=lambda: "555-0100",
            ),
        },
        "customer_relationship_manager_delete_customer": lambda: {"customer_id": d.pick(ids["customer"])},
    }


def _arguments_form(d: Draw, arguments: dict[str, Any]) -> Any:
    """The arguments as a dict (mostly), JSON text, malformed JSON or JSON that is not an object."""
    form = d.rng.random()
    if form < 0.75:
        return arguments
    if form < 0.9:
        return json.dumps(arguments, ensure_ascii=d.rng.random() < 0.5)
    return d.pick(["", "{", '{"a": ', "not json", json.dumps(arguments)[:-1], "[1, 2]", '"text"', "3", "null",
                   "true", "[]", "0", "{}", "[{}]"])  # fmt: skip


def _call(d: Draw, builders: dict[str, Callable[[], dict[str, Any]]]) -> Call:
    kind = d.rng.random()
    if kind < 0.06:
        name = d.pick(UNKNOWN_NAMES)
        return name, _arguments_form(d, {"query": d.anything()} if d.rng.random() < 0.5 else {})
    name = d.pick(TOOL_NAMES)
    arguments = builders[name]()
    if kind < 0.45:
        pass  # as built
    elif kind < 0.8:
        change = d.pick(["drop", "replace", "replace", "replace", "add", "null"])
        keys = sorted(arguments)
        if change == "drop" and keys:
            del arguments[d.pick(keys)]
        elif change in ("replace", "null") and keys:
            arguments[d.pick(keys)] = d.anything() if change == "replace" else None
        else:
            params = [p.name for p in SPECS_BY_NAME[name].params]
            arguments[d.pick([*params, "foo", "self", "state", "x y", "k\ud800"])] = d.anything()
    else:
        params = [p.name for p in SPECS_BY_NAME[name].params]
        arguments = {key: d.anything() for key in d.rng.sample(params, d.rng.randint(0, len(params)))}
    return name, _arguments_form(d, arguments)


def fuzz_sequences(
    count: int, seed: int, state: WorkplaceState, length: tuple[int, int] = (1, 8)
) -> list[list[Call]]:
    """``count`` call sequences of ``length`` calls (inclusive bounds), deterministic in ``seed``."""
    rng = random.Random(seed)
    draw = Draw(rng, Vocabulary.of(state, rng))
    builders = _valid_builders(draw)
    return [[_call(draw, builders) for _ in range(rng.randint(*length))] for _ in range(count)]
