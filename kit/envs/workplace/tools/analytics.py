"""The website analytics tools: a visitor's visits, counts and averages over a date range, and plots."""

from __future__ import annotations

from kit.envs.workplace.state import Row, WorkplaceState
from kit.envs.workplace.tools.checks import (
    ToolError,
    check_choice,
    check_date,
    check_exact,
    in_range,
    to_json,
)

TRAFFIC_SOURCES = ("direct", "referral", "search engine", "social media")
PLOT_VALUES = (
    "total_visits",
    "session_duration_seconds",
    "user_engaged",
    "visits_direct",
    "visits_referral",
    "visits_search_engine",
    "visits_social_media",
)
PLOT_TYPES = ("bar", "line", "scatter", "histogram")


def _visits(state: WorkplaceState, time_min: str | None, time_max: str | None) -> list[Row]:
    low = check_date(time_min, "time_min") if time_min else None
    high = check_date(time_max, "time_max") if time_max else None
    return [row for row in state.analytics if in_range(row["date_of_visit"], low, high)]


def analytics_get_visitor_information_by_id(state: WorkplaceState, visitor_id: str) -> str:
    """Every recorded visit of one visitor."""
    visits = [dict(row) for row in state.analytics if row["visitor_id"] == visitor_id]
    if not visits:
        raise ToolError(f"no visitor has id {visitor_id!r}; visitor ids are 4-digit strings such as '0421'.")
    return to_json(visits)


def analytics_create_plot(
    state: WorkplaceState, time_min: str, time_max: str, value_to_plot: str, plot_type: str
) -> str:
    """Record a plot of one metric over a date range; its path names the range, metric and chart type."""
    low, high = check_date(time_min, "time_min"), check_date(time_max, "time_max")
    if low > high:
        raise ToolError(f"'time_min' ({low}) must not be after 'time_max' ({high}).")
    value = check_exact(value_to_plot, PLOT_VALUES, "value_to_plot")
    kind = check_exact(plot_type, PLOT_TYPES, "plot_type")
    path = f"plots/{low}_{high}_{value}_{kind}.png"
    state.plots = state.plots + (path,)
    return f"Plot saved to {path}."


def analytics_total_visits_count(
    state: WorkplaceState, time_min: str | None = None, time_max: str | None = None
) -> str:
    """The number of visits in the date range."""
    return to_json({"total_visits": len(_visits(state, time_min, time_max))})


def analytics_engaged_users_count(
    state: WorkplaceState, time_min: str | None = None, time_max: str | None = None
) -> str:
    """The number of visits by engaged users in the date range."""
    visits = _visits(state, time_min, time_max)
    return to_json({"engaged_users": sum(row["user_engaged"].lower() == "true" for row in visits)})


def analytics_traffic_source_count(
    state: WorkplaceState,
    time_min: str | None = None,
    time_max: str | None = None,
    traffic_source: str | None = None,
) -> str:
    """The number of visits in the date range from one traffic source (from all without one)."""
    source = check_choice(traffic_source, TRAFFIC_SOURCES, "traffic_source") if traffic_source else None
    visits = _visits(state, time_min, time_max)
    count = sum(source is None or row["traffic_source"] == source for row in visits)
    return to_json({"traffic_source": source or "all", "visits": count})


def analytics_get_average_session_duration(
    state: WorkplaceState, time_min: str | None = None, time_max: str | None = None
) -> str:
    """The mean session length in seconds of the visits in the date range (null without visits)."""
    visits = _visits(state, time_min, time_max)
    seconds = [float(row["session_duration_seconds"]) for row in visits]
    average = round(sum(seconds) / len(seconds), 2) if seconds else None
    return to_json({"visits": len(seconds), "average_session_duration_seconds": average})
