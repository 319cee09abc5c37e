"""The website analytics table: 1,000 visits with their traffic source and engagement."""

from __future__ import annotations

import random
from datetime import date

from kit.envs.workplace.generate_state.draws import random_day
from kit.envs.workplace.tools import TRAFFIC_SOURCES


def analytics_rows(rng: random.Random, count: int = 1000) -> list[dict[str, str]]:
    """The analytics table: one row per visit; longer sessions view more pages and engage more."""
    rows = []
    for _ in range(count):
        seconds = min(int(rng.expovariate(1 / 25)), 120)
        rows.append(
            {
                "date_of_visit": f"{random_day(date(2023, 9, 1), date(2023, 11, 30), rng):%Y-%m-%d}",
                "visitor_id": str(rng.randrange(10000)).zfill(4),
                "page_views": str(max(1, min(30, int(rng.gauss(seconds / 5 + 3, 3))))),
                "session_duration_seconds": str(seconds),
                "traffic_source": rng.choices(TRAFFIC_SOURCES, weights=(3, 2, 4, 3))[0],
                "user_engaged": str(seconds >= 20 and rng.random() < 0.85),
            }
        )
    return rows
