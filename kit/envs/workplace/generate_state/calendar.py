"""The calendar table: 300 meetings with colleagues on weekdays, within meeting hours."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta

from kit.envs.workplace.generate_state.company_directory import EMPLOYEES, address
from kit.envs.workplace.generate_state.draws import random_day, shuffled_ids

EVENT_NAMES = (
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
"""Event names; emails about meetings mention them too."""


def calendar_rows(rng: random.Random, count: int = 300) -> list[dict[str, str]]:
    """The calendar table: events on half-hour slots between 9am and 6pm, sorted by start."""
    rows = []
    for _ in range(count):
        first, last, _team = rng.choice(EMPLOYEES)
        minutes = rng.choice((30, 60, 60, 90, 120))
        slot = rng.randrange(9 * 2, (18 * 60 - minutes) // 30 + 1)  # half-hour slots inside meeting hours
        start = datetime.combine(
            random_day(date(2023, 8, 1), date(2023, 12, 29), rng, weekdays_only=True), datetime.min.time()
        ) + timedelta(minutes=30 * slot)
        rows.append(
            {
                "event_name": rng.choice(EVENT_NAMES),
                "participant_email": address(first, last),
                "event_start": f"{start:%Y-%m-%d %H:%M:%S}",
                "duration": str(minutes),
            }
        )
    rows.sort(key=lambda r: r["event_start"])
    for row, event_id in zip(rows, shuffled_ids(count, rng), strict=True):
        row["event_id"] = event_id
    return rows
