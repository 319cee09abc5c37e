"""Sandbox state: the workplace tables, copied cheaply and compared the way NeMo-Gym scores tasks.

Rows are plain ``dict[str, str]`` that are never changed in place: an update stores a new dict. A table
copy shares its parent's row index until either side first writes, so a fresh per-rollout state costs a
handful of object allocations whatever the table sizes. Each table remembers which pre-existing rows it
touched and which rows it created, so two states forked from one base compare in time proportional to
their changes rather than to the table sizes.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from operator import itemgetter
from pathlib import Path

Row = Mapping[str, str]

NOW = "2023-11-30 23:59:00"
"""The sandbox's fixed current time: outbox emails are stamped with it."""

EMAIL_COLUMNS = ("email_id", "inbox/outbox", "sender/recipient", "subject", "sent_datetime", "body")
CALENDAR_COLUMNS = ("event_id", "event_name", "participant_email", "event_start", "duration")
ANALYTICS_COLUMNS = (
    "date_of_visit",
    "visitor_id",
    "page_views",
    "session_duration_seconds",
    "traffic_source",
    "user_engaged",
)
TASK_COLUMNS = ("task_id", "task_name", "assigned_to_email", "list_name", "due_date", "board")
CUSTOMER_COLUMNS = (
    "customer_id",
    "assigned_to_email",
    "customer_name",
    "customer_email",
    "customer_phone",
    "last_contact_date",
    "product_interest",
    "status",
    "follow_up_by",
    "notes",
)

CSV_FILES = {
    "emails": "emails.csv",
    "calendar": "calendar_events.csv",
    "analytics": "analytics_data.csv",
    "tasks": "project_tasks.csv",
    "customers": "customer_relationship_manager_data.csv",
    "directory": "email_addresses.csv",
}
MUTABLE_TABLES = ("emails", "calendar", "tasks", "customers")
CASE_SENSITIVE_COLUMNS = frozenset({"status", "list_name", "board"})


@cache
def _normalizer(columns: tuple[str, ...]) -> Callable[[Row], tuple[str, ...]]:
    get = itemgetter(*columns)
    kept = [i for i, c in enumerate(columns) if c in CASE_SENSITIVE_COLUMNS]

    def normalize(row: Row) -> tuple[str, ...]:
        values = get(row)
        lowered = list(map(str.lower, values))
        for i in kept:
            lowered[i] = values[i]
        return tuple(lowered)

    return normalize


def normalize_row(columns: tuple[str, ...], row: Row | None) -> tuple[str, ...] | None:
    """A row as a tuple, lower-cased except in the columns NeMo-Gym compares case-sensitively."""
    return None if row is None else _normalizer(columns)(row)


class Table:
    """Rows keyed by their 8-digit id in insertion order, with copy-on-write sharing between copies."""

    __slots__ = ("columns", "id_column", "_rows", "_shared", "_base", "touched", "created")

    def __init__(self, columns: tuple[str, ...], rows: Iterable[Row]) -> None:
        self.columns = columns
        self.id_column = columns[0]
        rows = list(rows)
        self._rows: dict[str, Row] = {row[self.id_column]: row for row in rows}
        if len(self._rows) != len(rows):
            raise ValueError(f"duplicate {self.id_column} values: each row needs its own id")
        self._shared = True  # even the first write to a root table copies it: _base stays the original rows
        self._base = self._rows
        self.touched: set[str] = set()
        self.created: set[str] = set()

    def copy(self) -> Table:
        """An independent table that shares rows with this one until either is written."""
        clone = Table.__new__(Table)
        clone.columns, clone.id_column = self.columns, self.id_column
        clone._rows, clone._base = self._rows, self._base
        clone._shared = self._shared = True
        clone.touched, clone.created = set(self.touched), set(self.created)
        return clone

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, row_id: object) -> bool:
        return row_id in self._rows

    def get(self, row_id: str) -> Row | None:
        return self._rows.get(row_id)

    def rows(self) -> Iterator[Row]:
        return iter(self._rows.values())

    def next_id(self) -> str:
        """The id a new row gets: one more than the largest numeric id, zero-padded to 8 digits."""
        numeric = [int(i) for i in self._rows if i.isascii() and i.isdigit() and len(i) < 19]
        return str(max(numeric, default=-1) + 1).zfill(8)

    def _own(self) -> None:
        if self._shared:
            self._rows = dict(self._rows)
            self._shared = False

    def insert(self, row: Row) -> None:
        self._own()
        row_id = row[self.id_column]
        self._rows[row_id] = row
        self.created.add(row_id)

    def replace(self, row: Row) -> None:
        self._own()
        row_id = row[self.id_column]
        self._rows[row_id] = row
        self.touched.add(row_id)

    def delete(self, row_id: str) -> None:
        self._own()
        del self._rows[row_id]
        self.touched.add(row_id)

    def _as_base_row(self, row_id: str) -> Row | None:
        # A re-used id (a base row deleted, then a new row given the same id) no longer names the base row.
        return None if row_id in self.created else self._rows.get(row_id)

    def _created_rows(self) -> list[tuple[str, ...]]:
        # Created rows compare by content: their ids depend only on creation order.
        normalize = _normalizer(self.columns[1:])
        return sorted(normalize(self._rows[i]) for i in self.created if i in self._rows)

    def same_as(self, other: Table) -> bool:
        """Whether two tables forked from one base hold the same normalised rows."""
        if self._rows is other._rows:
            return True
        if self._base is not other._base:
            return self.snapshot(generic_new_ids=True) == other.snapshot(generic_new_ids=True)
        for row_id in self.touched | other.touched:
            if row_id in self._base and normalize_row(
                self.columns, self._as_base_row(row_id)
            ) != normalize_row(self.columns, other._as_base_row(row_id)):
                return False
        return self._created_rows() == other._created_rows()

    def snapshot(self, generic_new_ids: bool = False) -> tuple[tuple[str, ...], ...]:
        """Every row, normalised, in table order; created rows last (sorted, ids blanked) when
        ``generic_new_ids`` is set."""
        normalize = _normalizer(self.columns)
        if not generic_new_ids:
            return tuple(map(normalize, self._rows.values()))
        kept = tuple(normalize(row) for row_id, row in self._rows.items() if row_id not in self.created)
        return kept + tuple(("",) + row for row in self._created_rows())


class WorkplaceState:
    """The mutable tables (emails, calendar, tasks, customers, plots) plus the read-only ones
    (analytics visits, company directory)."""

    __slots__ = ("emails", "calendar", "tasks", "customers", "analytics", "directory", "plots", "now")

    def __init__(
        self,
        emails: Table,
        calendar: Table,
        tasks: Table,
        customers: Table,
        analytics: tuple[Row, ...],
        directory: tuple[str, ...],
        plots: tuple[str, ...] = (),
        now: str = NOW,
    ) -> None:
        self.emails, self.calendar, self.tasks, self.customers = emails, calendar, tasks, customers
        self.analytics, self.directory, self.plots, self.now = analytics, directory, plots, now

    @classmethod
    def from_rows(
        cls,
        emails: Iterable[Row],
        calendar: Iterable[Row],
        tasks: Iterable[Row],
        customers: Iterable[Row],
        analytics: Iterable[Row],
        directory: Iterable[str],
        now: str = NOW,
    ) -> WorkplaceState:
        """Build a state from row dicts (each holding at least its table's columns)."""

        def pick(columns: tuple[str, ...], rows: Iterable[Row]) -> list[dict[str, str]]:
            return [{c: str(row.get(c) or "") for c in columns} for row in rows]

        return cls(
            Table(EMAIL_COLUMNS, pick(EMAIL_COLUMNS, emails)),
            Table(CALENDAR_COLUMNS, pick(CALENDAR_COLUMNS, calendar)),
            Table(TASK_COLUMNS, pick(TASK_COLUMNS, tasks)),
            Table(CUSTOMER_COLUMNS, pick(CUSTOMER_COLUMNS, customers)),
            tuple(pick(ANALYTICS_COLUMNS, analytics)),
            tuple(directory),
            now=now,
        )

    def copy(self) -> WorkplaceState:
        """A fresh, isolated state; costs O(1) in the table sizes."""
        return WorkplaceState(
            self.emails.copy(),
            self.calendar.copy(),
            self.tasks.copy(),
            self.customers.copy(),
            self.analytics,
            self.directory,
            self.plots,
            self.now,
        )

    def same_as(self, other: WorkplaceState) -> bool:
        """NeMo-Gym's outcome comparison: equal mutable tables and plots, strings compared
        case-insensitively except ``status``, ``list_name`` and ``board``; created rows are matched by
        content, so creation order does not matter."""
        return sorted(p.lower() for p in self.plots) == sorted(p.lower() for p in other.plots) and all(
            getattr(self, name).same_as(getattr(other, name)) for name in MUTABLE_TABLES
        )

    def snapshot(self) -> dict[str, tuple]:
        """A comparable, normalised view: each mutable table as a tuple of row tuples (with real ids, in
        table order) and the plots."""
        view: dict[str, tuple] = {name: getattr(self, name).snapshot() for name in MUTABLE_TABLES}
        view["plots"] = tuple(p.lower() for p in self.plots)
        return view


def _read_csv(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in columns if c not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing}; expected {list(columns)}")
        return list(reader)


def load_csv_dir(directory: str | Path) -> WorkplaceState:
    """Read a state from CSVs in NeMo-Gym's layout (see ``CSV_FILES``; the directory file has one
    address per line and no header)."""
    root = Path(directory)
    missing = [name for name in CSV_FILES.values() if not (root / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{root}: missing {missing}; expected the files {sorted(CSV_FILES.values())}")
    addresses = (root / CSV_FILES["directory"]).read_text(encoding="utf-8").split()
    return WorkplaceState.from_rows(
        emails=_read_csv(root / CSV_FILES["emails"], EMAIL_COLUMNS),
        calendar=_read_csv(root / CSV_FILES["calendar"], CALENDAR_COLUMNS),
        tasks=_read_csv(root / CSV_FILES["tasks"], TASK_COLUMNS),
        customers=_read_csv(root / CSV_FILES["customers"], CUSTOMER_COLUMNS),
        analytics=_read_csv(root / CSV_FILES["analytics"], ANALYTICS_COLUMNS),
        directory=[a.strip() for a in addresses if a.strip()],
    )


def state_diff(before: WorkplaceState, after: WorkplaceState) -> list[str]:
    """Human-readable lines describing how ``after`` differs from ``before`` (rows added, removed or
    changed, plots created)."""
    lines: list[str] = []
    for name in MUTABLE_TABLES:
        old, new = getattr(before, name), getattr(after, name)
        for row in old.rows():
            row_id = row[old.id_column]
            changed = new.get(row_id)
            if changed is None:
                lines.append(f"{name}: removed {dict(row)}")
            elif changed != row:
                fields = {c: f"{row[c]!r} -> {changed[c]!r}" for c in old.columns if row[c] != changed[c]}
                lines.append(f"{name}: changed {row_id}: {fields}")
        for row in new.rows():
            if row[new.id_column] not in old:
                lines.append(f"{name}: added {dict(row)}")
    lines.extend(f"plots: added {p}" for p in after.plots[len(before.plots) :])
    return lines
