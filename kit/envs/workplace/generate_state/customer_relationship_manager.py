"""The customer relationship manager (CRM) table: 200 customers owned by the five sales employees."""

from __future__ import annotations

import random
from datetime import date, timedelta

from kit.envs.workplace.generate_state.company_directory import EMPLOYEES, address
from kit.envs.workplace.generate_state.draws import random_day, shuffled_ids
from kit.envs.workplace.tools import CRM_TIME, PRODUCTS, STATUSES

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


def customer_rows(rng: random.Random, count: int = 200) -> list[dict[str, str]]:
    """The CRM table: customers with distinct names, each owned by one sales employee."""
    names = [(f, la) for f in _CUSTOMER_FIRST for la in _CUSTOMER_LAST]
    rng.shuffle(names)
    owners = [address(f, la) for f, la, team in EMPLOYEES if team == "Sales"]
    rows = []
    for first, last in names[:count]:
        contacted = random_day(date(2023, 9, 1), date(2023, 11, 30), rng)
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
    for row, customer_id in zip(rows, shuffled_ids(count, rng), strict=True):
        row["customer_id"] = customer_id
    return rows
