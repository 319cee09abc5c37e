"""The kit's own seeded workplace: a 20-person company at ``atlas.com`` seen from its manager's mailbox.

Sizes follow NeMo-Gym's reference databases (500 emails, 300 events, 1,000 visits, 300 tasks, 200
customers); every value is made up here from small vocabularies and one ``random.Random(seed)``, so the
same seed always yields the same state.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from functools import lru_cache

from kit.envs.workplace.state import NOW, WorkplaceState
from kit.envs.workplace.tools import CRM_TIME, LIST_NAMES, PRODUCTS, STATUSES, TRAFFIC_SOURCES

DOMAIN = "atlas.com"
OWNER = "Robin"
"""The mailbox owner: the person the assistant works for (not in the directory, like NeMo-Gym's)."""

# (first, last, team): team is a board name, or "Sales" for the five account owners in the CRM.
EMPLOYEES: tuple[tuple[str, str, str], ...] = (
    ("priya", "sharma", "Back end"),
    ("marco", "rossi", "Back end"),
    ("hana", "suzuki", "Front end"),
    ("omar", "haddad", "Back end"),
    ("grace", "obi", "Design"),
    ("lucas", "silva", "Front end"),
    ("emma", "larsen", "Design"),
    ("wei", "chen", "Back end"),
    ("diego", "herrera", "Front end"),
    ("sara", "novak", "Design"),
    ("kwame", "asante", "Back end"),
    ("ingrid", "berg", "Front end"),
    ("ravi", "menon", "Back end"),
    ("julia", "weber", "Front end"),
    ("tomas", "garcia", "Design"),
    ("mei", "lin", "Sales"),
    ("noah", "brooks", "Sales"),
    ("zara", "hussain", "Sales"),
    ("ivan", "petrov", "Sales"),
    ("chloe", "martin", "Sales"),
)


def address(first: str, last: str) -> str:
    return f"{first}.{last}@{DOMAIN}"


_TASK_PATTERNS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "Front end": (
        (
            "Add animation to {}",
            "Fix alignment issue in {}",
            "Implement responsive layout for {}",
            "Improve accessibility of {}",
        ),
        (
            "checkout page",
            "navigation bar",
            "settings page",
            "search results",
            "dashboard",
            "login form",
            "image carousel",
            "pricing table",
        ),
    ),
    "Back end": (
        (
            "Add rate limiting to {}",
            "Write unit tests for {}",
            "Optimize queries for {}",
            "Add logging to {}",
        ),
        (
            "payment service",
            "invoice export",
            "user sessions",
            "notification worker",
            "report generator",
            "audit trail",
            "file uploads",
            "search index",
        ),
    ),
    "Design": (
        (
            "Design icons for {}",
            "Create wireframe for {}",
            "Design onboarding flow for {}",
            "Prepare style guide for {}",
        ),
        ("mobile app", "partner portal", "help center", "billing page", "admin console", "newsletter"),
    ),
}
_LIBRARIES = ("Django", "React", "Postgres", "Redis", "Node", "Kafka")

_EVENT_NAMES = (
    "sync up",
    "1:1 check-in",
    "coffee chat",
    "design review",
    "sprint planning",
    "retrospective",
    "code review session",
    "budget review",
    "product demo",
    "client call",
    "onboarding session",
    "roadmap discussion",
    "hiring debrief",
    "incident postmortem",
    "standup",
    "lunch and learn",
    "quarterly planning",
    "vendor meeting",
    "feedback session",
    "architecture review",
    "Leadership Workshop",
    "Cloud Security Training",
    "Customer Success Summit",
    "Data Privacy Training",
    "Agile Coaching Session",
    "Annual Strategy Offsite",
    "Product Launch Rehearsal",
    "Sales Kickoff",
    "Accessibility Workshop",
    "Public Speaking Course",
    "Wellness Webinar",
    "Board Meeting Prep",
    "Marketing Campaign Review",
    "Partner Integration Kickoff",
    "Quarterly Business Review",
    "Mentorship Program Meetup",
    "Team Building Day",
    "Compliance Refresher",
    "Innovation Hackathon",
    "Design Thinking Workshop",
)

_GENERAL_SUBJECTS = (
    "Quarterly report draft",
    "Team lunch on Friday",
    "Client feedback on onboarding",
    "Budget approval needed",
    "Office move logistics",
    "Hiring plan for next quarter",
    "Conference travel request",
    "Laptop replacement",
    "Holiday schedule",
    "Customer escalation",
    "New vendor contract",
    "Training budget question",
    "Weekly metrics summary",
    "Parking permits",
    "Offsite venue options",
)
_GREETINGS = ("Hi {},", "Hey {},", "Dear {},", "{},", "Hello {},")
_SIGNOFFS = ("Best,", "Thanks,", "Regards,", "Cheers,", "Kind regards,")
_TASK_LINES = (
    "I finished '{}' ahead of schedule. Could you take a look when you have a moment?",
    "Quick update on '{}': I am about halfway through and expect to wrap up this week.",
    "I started on '{}' today. Do you have any notes before I go further?",
    "I hit a blocker on '{}' and could use twenty minutes of your time.",
    "'{}' is ready for review. Let me know if anything needs changing.",
)
_EVENT_LINES = (
    "I am preparing the agenda for the {}. Anything you want me to add?",
    "Can we move the {} to later in the week? Something came up on my side.",
    "Notes from the {} are in the shared folder.",
    "Looking forward to the {}. I will bring the latest numbers.",
)
_GENERAL_LINES = (
    "Could you weigh in on this before Friday? I would like to close it out.",
    "Sharing this for visibility; no action needed from you yet.",
    "I put together a short summary. Happy to walk you through it.",
    "We need a decision on this soon, so I have added it to our next one-on-one.",
)
_EXTRA_PARAGRAPHS = (
    "On a separate note, the team is settling well into the new planning rhythm and the feedback so far "
    "has been positive.",
    "Also, the quarterly survey closes next week, so please remind your reports to fill it in.",
    "By the way, the shared drive is being reorganised over the weekend, so some links may move.",
)

_CUSTOMER_FIRST = (
    "Avery",
    "Blake",
    "Casey",
    "Devon",
    "Emerson",
    "Finley",
    "Harper",
    "Jamie",
    "Kai",
    "Logan",
    "Morgan",
    "Noel",
    "Parker",
    "Quinn",
    "Riley",
    "Rowan",
    "Sage",
    "Skyler",
    "Taylor",
    "Drew",
)
_CUSTOMER_LAST = (
    "Adams",
    "Baker",
    "Carter",
    "Diaz",
    "Evans",
    "Foster",
    "Gray",
    "Hayes",
    "Ingram",
    "James",
    "Keller",
    "Lopez",
    "Mason",
    "Nguyen",
    "Owens",
    "Price",
    "Reed",
    "Stone",
    "Turner",
    "Walsh",
)
_COMPANIES = (
    "brightwave",
    "northpeak",
    "bluecanyon",
    "ironleaf",
    "quantaforge",
    "silverline",
    "greenmesa",
    "orbitly",
    "clearpath",
    "sunharbor",
    "redkite",
    "novastream",
)
_NOTES = (
    "Had a call.",
    "Saw the demo.",
    "Met in person.",
    "Sent a quote.",
    "On holiday.",
    "Asked for references.",
)


def task_names() -> list[str]:
    """Every task name the generator can use, by board then pattern."""
    names = [
        pattern.format(thing)
        for patterns, things in _TASK_PATTERNS.values()
        for pattern in patterns
        for thing in things
    ]
    return names + [f"Update {lib} to latest version" for lib in _LIBRARIES]


def _board_of(task_name: str) -> str:
    if task_name.startswith("Update "):
        return "Back end"
    return next(
        board
        for board, (patterns, things) in _TASK_PATTERNS.items()
        for pattern in patterns
        for thing in things
        if pattern.format(thing) == task_name
    )


def _day(start: date, end: date, rng: random.Random, weekdays_only: bool = False) -> date:
    while True:
        day = start + timedelta(days=rng.randrange((end - start).days + 1))
        if not weekdays_only or day.weekday() < 5:
            return day


def _ids(count: int, rng: random.Random) -> list[str]:
    ids = [str(i).zfill(8) for i in range(count)]
    rng.shuffle(ids)
    return ids


def _emails(rng: random.Random, tasks: list[dict[str, str]], count: int = 500) -> list[dict[str, str]]:
    rows = []
    for _ in range(count):
        first, last, _team = rng.choice(EMPLOYEES)
        kind = rng.random()
        if kind < 0.45:
            topic = rng.choice(tasks)["task_name"]
            subject, line = f"Task update on {topic}", rng.choice(_TASK_LINES).format(topic)
        elif kind < 0.75:
            topic = rng.choice(_EVENT_NAMES)
            subject, line = f"Update on {topic}", rng.choice(_EVENT_LINES).format(topic)
        else:
            subject, line = rng.choice(_GENERAL_SUBJECTS), rng.choice(_GENERAL_LINES)
        paragraphs = [rng.choice(_GREETINGS).format(OWNER), line]
        if rng.random() < 0.4:
            paragraphs.append(rng.choice(_EXTRA_PARAGRAPHS))
        paragraphs.append(f"{rng.choice(_SIGNOFFS)}\n{first.capitalize()}")
        sent = datetime.combine(_day(date(2023, 10, 1), date(2023, 11, 30), rng), datetime.min.time())
        sent += timedelta(seconds=rng.randrange(8 * 3600, 18 * 3600))
        rows.append(
            {
                "inbox/outbox": "inbox",
                "sender/recipient": address(first, last),
                "subject": subject,
                "sent_datetime": f"{sent:%Y-%m-%d %H:%M:%S}",
                "body": "\n\n".join(paragraphs),
            }
        )
    rows.sort(key=lambda r: r["sent_datetime"])
    for row, email_id in zip(rows, _ids(count, rng), strict=True):
        row["email_id"] = email_id
    return rows


def _calendar(rng: random.Random, count: int = 300) -> list[dict[str, str]]:
    rows = []
    for _ in range(count):
        first, last, _team = rng.choice(EMPLOYEES)
        minutes = rng.choice((30, 60, 60, 90, 120))
        slot = rng.randrange(9 * 2, (18 * 60 - minutes) // 30 + 1)  # half-hour slots inside meeting hours
        start = datetime.combine(
            _day(date(2023, 8, 1), date(2023, 12, 29), rng, weekdays_only=True), datetime.min.time()
        ) + timedelta(minutes=30 * slot)
        rows.append(
            {
                "event_name": rng.choice(_EVENT_NAMES),
                "participant_email": address(first, last),
                "event_start": f"{start:%Y-%m-%d %H:%M:%S}",
                "duration": str(minutes),
            }
        )
    rows.sort(key=lambda r: r["event_start"])
    for row, event_id in zip(rows, _ids(count, rng), strict=True):
        row["event_id"] = event_id
    return rows


def _analytics(rng: random.Random, count: int = 1000) -> list[dict[str, str]]:
    rows = []
    for _ in range(count):
        seconds = min(int(rng.expovariate(1 / 25)), 120)
        rows.append(
            {
                "date_of_visit": f"{_day(date(2023, 9, 1), date(2023, 11, 30), rng):%Y-%m-%d}",
                "visitor_id": str(rng.randrange(10000)).zfill(4),
                "page_views": str(max(1, min(30, int(rng.gauss(seconds / 5 + 3, 3))))),
                "session_duration_seconds": str(seconds),
                "traffic_source": rng.choices(TRAFFIC_SOURCES, weights=(3, 2, 4, 3))[0],
                "user_engaged": str(seconds >= 20 and rng.random() < 0.85),
            }
        )
    return rows


def _tasks(rng: random.Random, count: int = 300) -> list[dict[str, str]]:
    names = task_names()
    builders = [(f, la, team) for f, la, team in EMPLOYEES if team != "Sales"]
    rows = []
    for _ in range(count):
        name = rng.choice(names)
        board = _board_of(name)
        first, last, _team = rng.choice(
            [b for b in builders if b[2] == board] if rng.random() < 0.8 else builders
        )
        rows.append(
            {
                "task_name": name,
                "assigned_to_email": address(first, last),
                "list_name": rng.choices(LIST_NAMES, weights=(3, 3, 2, 4))[0],
                "due_date": f"{_day(date(2023, 11, 20), date(2023, 12, 15), rng):%Y-%m-%d}",
                "board": board,
            }
        )
    rows.sort(key=lambda r: r["due_date"])
    for row, task_id in zip(rows, _ids(count, rng), strict=True):
        row["task_id"] = task_id
    return rows


def _customers(rng: random.Random, count: int = 200) -> list[dict[str, str]]:
    names = [(f, la) for f in _CUSTOMER_FIRST for la in _CUSTOMER_LAST]
    rng.shuffle(names)
    owners = [address(f, la) for f, la, team in EMPLOYEES if team == "Sales"]
    rows = []
    for first, last in names[:count]:
        contacted = _day(date(2023, 9, 1), date(2023, 11, 30), rng)
        notes = []
        for _ in range(rng.randrange(4)):
            noted = contacted - timedelta(days=rng.randrange(60))
            notes.append(f"{noted:%Y-%m-%d}: {rng.choice(_NOTES)}")
        phone = f"{rng.randrange(200, 1000)}-{rng.randrange(200, 1000)}-{rng.randrange(10000):04d}"
        rows.append(
            {
                "assigned_to_email": rng.choice(owners),
                "customer_name": f"{first} {last}",
                "customer_email": f"{first.lower()}.{last.lower()}@{rng.choice(_COMPANIES)}.com",
                "customer_phone": phone if rng.random() < 0.5 else "",
                "last_contact_date": f"{contacted:%Y-%m-%d}{CRM_TIME}",
                "product_interest": rng.choice(PRODUCTS),
                "status": rng.choices(STATUSES, weights=(2, 2, 2, 3, 2))[0],
                "follow_up_by": f"{contacted + timedelta(days=rng.randrange(7, 46)):%Y-%m-%d}{CRM_TIME}",
                "notes": " ".join(notes),
            }
        )
    for row, customer_id in zip(rows, _ids(count, rng), strict=True):
        row["customer_id"] = customer_id
    return rows


def generate_state(seed: int = 0) -> WorkplaceState:
    """The kit's workplace for ``seed``: same seed, same state."""
    rng = random.Random(seed)
    tasks = _tasks(rng)
    return WorkplaceState.from_rows(
        emails=_emails(rng, tasks),
        calendar=_calendar(rng),
        tasks=tasks,
        customers=_customers(rng),
        analytics=_analytics(rng),
        directory=[address(f, la) for f, la, _team in EMPLOYEES],
        now=NOW,
    )


@lru_cache(maxsize=1)
def default_state() -> WorkplaceState:
    """The default state (seed 0), built once per process; never mutated (copies are copy-on-write)."""
    return generate_state(0)
