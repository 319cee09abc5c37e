"""``GymState``: the databases of one NeMo-Gym session, and the comparison its verify scores with.

NeMo-Gym reads each CSV with pandas (``dtype=str``), so an empty cell, or one that reads ``NA``, ``null``
and the like, is a missing value; here it is NaN, as there (a ``None`` only where NeMo-Gym's tools store
one). ``user_engaged`` is a boolean column. The plots are file paths.

Verify replays the predicted and the ground-truth calls on two fresh sessions and asks pandas whether
the tables are ``equals`` after lower-casing every column but ``status``, ``list_name`` and ``board``:
same rows in the same order, same index labels, same column dtypes, same (lower-cased) values, a missing
value matching a missing value. ``same_as`` answers the same question, comparing only the rows that are
not shared between the two states.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from kit.envs.workplace.gym.frame import BOOL, FLOAT, STR, Frame, is_missing, series
from kit.envs.workplace.state import (
    ANALYTICS_COLUMNS,
    CALENDAR_COLUMNS,
    CASE_SENSITIVE_COLUMNS,
    CUSTOMER_COLUMNS,
    EMAIL_COLUMNS,
    MUTABLE_TABLES,
    NOW,
    TASK_COLUMNS,
    WorkplaceState,
)

NAN = math.nan
# The cell texts pandas' read_csv takes for a missing value by default.
CSV_MISSING = frozenset(
    {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>",
     "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"}
)  # fmt: skip


def _cell(value: Any) -> Any:
    return NAN if value is None or (isinstance(value, str) and value in CSV_MISSING) else value


def _frame(columns: tuple[str, ...], rows: Any) -> Frame:
    return Frame.of(columns, [{c: _cell(row.get(c)) for c in columns} for row in rows])


def _analytics(rows: Any) -> Frame:
    visits = [{c: _cell(row.get(c)) for c in ANALYTICS_COLUMNS} for row in rows]
    for visit in visits:
        visit["user_engaged"] = visit["user_engaged"] == "True"
    frame = Frame.of(ANALYTICS_COLUMNS, visits)
    return Frame(frame.columns, frame.data, frame.labels, (*frame.dtypes[:-1], ("user_engaged", BOOL)))


def durations_as_float(analytics: Frame) -> Frame:
    """The visits with ``session_duration_seconds`` as floats (what NeMo-Gym's average-duration tool
    leaves in its table when asked for all dates)."""
    column = "session_duration_seconds"
    values = series(analytics.column(column), analytics.dtype(column)).astype(float).tolist()
    rows = tuple({**row, column: value} for row, value in zip(analytics.data, values, strict=True))
    dtypes = tuple((c, FLOAT if c == column else d) for c, d in analytics.dtypes)
    return Frame(analytics.columns, rows, analytics.labels, dtypes)


class GymState:
    """The tables of one session; a copy shares the (immutable) frames until a tool replaces one."""

    __slots__ = ("emails", "calendar", "tasks", "customers", "analytics", "directory", "plots", "now")

    def __init__(
        self,
        emails: Frame,
        calendar: Frame,
        tasks: Frame,
        customers: Frame,
        analytics: Frame,
        directory: Frame,
        plots: tuple[str, ...] = (),
        now: str = NOW,
    ) -> None:
        self.emails, self.calendar, self.tasks, self.customers = emails, calendar, tasks, customers
        self.analytics, self.directory, self.plots, self.now = analytics, directory, plots, now

    @classmethod
    def from_workplace(cls, state: WorkplaceState) -> GymState:
        """The kit's tables as NeMo-Gym would read them from CSV files."""
        return cls(
            _frame(EMAIL_COLUMNS, state.emails.rows()),
            _frame(CALENDAR_COLUMNS, state.calendar.rows()),
            _frame(TASK_COLUMNS, state.tasks.rows()),
            _frame(CUSTOMER_COLUMNS, state.customers.rows()),
            _analytics(state.analytics),
            _frame(("email_address",), [{"email_address": a} for a in state.directory]),
            now=state.now,
        )

    def copy(self) -> GymState:
        return GymState(
            self.emails,
            self.calendar,
            self.tasks,
            self.customers,
            self.analytics,
            self.directory,
            self.plots,
            self.now,
        )

    def same_as(self, other: GymState) -> bool:
        """Whether NeMo-Gym's verify would find the two sessions' outcomes equal."""
        return _same_plots(self.plots, other.plots) and all(
            _same_frames(getattr(self, name), getattr(other, name)) for name in MUTABLE_TABLES
        )

    def snapshot(self) -> dict[str, tuple]:
        """A comparable view: each mutable table's labels, dtypes and rows, and the plots."""
        view: dict[str, tuple] = {
            name: (frame.labels, frame.dtypes, tuple(tuple(map(_comparable, r.values())) for r in frame.data))
            for name in MUTABLE_TABLES
            for frame in (getattr(self, name),)
        }
        view["plots"] = self.plots
        return view


def _comparable(value: Any) -> Any:
    return None if is_missing(value) else repr(value) if isinstance(value, (list, dict)) else value


@lru_cache(maxsize=4096)
def _lower_text(value: str) -> str:
    # What `.str.lower()` gives on a pandas string column (pyarrow's utf8_lower, not str.lower).
    return series([value], STR).str.lower().iloc[0]


def _lowered(value: Any, dtype: str) -> Any:
    if not isinstance(value, str):
        return None  # `.str.lower()` turns missing and non-string cells into NaN
    return _lower_text(value) if dtype == STR else value.lower()


def _equivalent(a: Any, b: Any) -> bool:
    if is_missing(a) or is_missing(b):
        return is_missing(a) and is_missing(b)
    return a is b or bool(a == b)


def _same_rows(a: dict[str, Any], b: dict[str, Any], dtypes: tuple[tuple[str, str], ...]) -> bool:
    for column, dtype in dtypes:
        x, y = a[column], b[column]
        if column not in CASE_SENSITIVE_COLUMNS:
            x, y = _lowered(x, dtype), _lowered(y, dtype)
        if not _equivalent(x, y):
            return False
    return True


def _same_frames(a: Frame, b: Frame) -> bool:
    if a is b:
        return True
    if len(a) != len(b) or a.labels != b.labels or a.dtypes != b.dtypes:
        return False
    return all(x is y or _same_rows(x, y, a.dtypes) for x, y in zip(a.data, b.data, strict=True))


def _same_plots(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    same = len(a) == len(b) and all(_lowered(x, STR) == _lowered(y, STR) for x, y in zip(a, b, strict=True))
    return a is b or same
