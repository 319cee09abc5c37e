"""The email table: 500 inbox emails from colleagues about their tasks, meetings and general matters."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta

from kit.envs.workplace.generate_state.calendar import EVENT_NAMES
from kit.envs.workplace.generate_state.company_directory import EMPLOYEES, OWNER, address
from kit.envs.workplace.generate_state.draws import random_day, shuffled_ids

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


def email_rows(rng: random.Random, tasks: list[dict[str, str]], count: int = 500) -> list[dict[str, str]]:
    """The email table: inbox emails, many about the given ``tasks`` or an event, sorted by time sent."""
    rows = []
    for _ in range(count):
        first, last, _team = rng.choice(EMPLOYEES)
        kind = rng.random()
        if kind < 0.45:
            topic = rng.choice(tasks)["task_name"]
            subject, line = f"Task update on {topic}", rng.choice(_TASK_LINES).format(topic)
        elif kind < 0.75:
            topic = rng.choice(EVENT_NAMES)
            subject, line = f"Update on {topic}", rng.choice(_EVENT_LINES).format(topic)
        else:
            subject, line = rng.choice(_GENERAL_SUBJECTS), rng.choice(_GENERAL_LINES)
        paragraphs = [rng.choice(_GREETINGS).format(OWNER), line]
        if rng.random() < 0.4:
            paragraphs.append(rng.choice(_EXTRA_PARAGRAPHS))
        paragraphs.append(f"{rng.choice(_SIGNOFFS)}\n{first.capitalize()}")
        sent = datetime.combine(random_day(date(2023, 10, 1), date(2023, 11, 30), rng), datetime.min.time())
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
    for row, email_id in zip(rows, shuffled_ids(count, rng), strict=True):
        row["email_id"] = email_id
    return rows
