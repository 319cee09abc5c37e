"""The company: its email domain, the mailbox owner and the 20 employees in the directory."""

from __future__ import annotations

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
    """An employee's directory address, ``first.last@atlas.com``."""
    return f"{first}.{last}@{DOMAIN}"
