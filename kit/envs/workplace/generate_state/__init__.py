"""The kit's own seeded workplace: a 20-person company at ``atlas.com`` seen from its manager's mailbox.

Sizes follow NeMo-Gym's reference databases (500 emails, 300 events, 1,000 visits, 300 tasks, 200
customers); every value is made up here from small vocabularies and one ``random.Random(seed)``, so the
same seed always yields the same state.

One module per database makes its table from its own vocabulary; ``company_directory`` holds the company's
people and ``draws`` the random draws the tables share.
"""

from __future__ import annotations

import random
from functools import lru_cache

from kit.envs.workplace.generate_state.analytics import analytics_rows
from kit.envs.workplace.generate_state.calendar import calendar_rows
from kit.envs.workplace.generate_state.company_directory import DOMAIN, EMPLOYEES, OWNER, address
from kit.envs.workplace.generate_state.customer_relationship_manager import customer_rows
from kit.envs.workplace.generate_state.email import email_rows
from kit.envs.workplace.generate_state.project_management import task_names, task_rows
from kit.envs.workplace.state import NOW, WorkplaceState


def generate_state(seed: int = 0) -> WorkplaceState:
    """The kit's workplace for ``seed``: same seed, same state."""
    rng = random.Random(seed)
    tasks = task_rows(rng)  # the tables draw from one generator, in this order
    return WorkplaceState.from_rows(
        emails=email_rows(rng, tasks),
        calendar=calendar_rows(rng),
        tasks=tasks,
        customers=customer_rows(rng),
        analytics=analytics_rows(rng),
        directory=[address(f, la) for f, la, _team in EMPLOYEES],
        now=NOW,
    )


@lru_cache(maxsize=1)
def default_state() -> WorkplaceState:
    """The default state (seed 0), built once per process; never mutated (copies are copy-on-write)."""
    return generate_state(0)


__all__ = ["DOMAIN", "EMPLOYEES", "OWNER", "address", "default_state", "generate_state", "task_names"]
