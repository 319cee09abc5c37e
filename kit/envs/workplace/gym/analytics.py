"""NeMo-Gym's website analytics tools: counts and averages per day, and plots."""

from __future__ import annotations

from typing import Any

from kit.envs.workplace.gym.common import Refusal, matching
from kit.envs.workplace.gym.frame import FLOAT, STR, Frame, selected, series
from kit.envs.workplace.gym.state import GymState, durations_as_float

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


def _within(visits: Frame, time_min: Any, time_max: Any) -> Frame:
    """The visits on or after ``time_min`` and on or before ``time_max`` (compared as text)."""
    if time_min:
        visits = visits.keep(selected(visits.series("date_of_visit") >= time_min))
    if time_max:
        visits = visits.keep(selected(visits.series("date_of_visit") <= time_max))
    return visits


def _per_day(visits: Frame, values: Any = None, how: str = "size") -> dict[Any, Any]:
    """``{date: aggregate}`` over the visits, dates in order (pandas' groupby, so sums and means are
    its own)."""
    days = series(visits.column("date_of_visit"), STR)
    grouped = (days if values is None else values).groupby(days)
    return dict(getattr(grouped, how)().to_dict())


def analytics_get_visitor_information_by_id(state: GymState, visitor_id: Any = None) -> Any:
    """Every recorded visit of one visitor."""
    if not visitor_id:
        raise Refusal("Visitor ID not provided.")
    visits = state.analytics.keep(matching(state.analytics, "visitor_id", visitor_id)).records()
    if not visits:
        raise Refusal("Visitor not found.")
    return visits


def analytics_create_plot(
    state: GymState, time_min: Any = None, time_max: Any = None, value_to_plot: Any = None,
    plot_type: Any = None,
) -> str:  # fmt: skip
    """Record a plot; its path is returned."""
    if not time_min:
        raise Refusal("Start date not provided.")
    if not time_max:
        raise Refusal("End date not provided.")
    if value_to_plot not in PLOT_VALUES:
        raise Refusal(f"Value to plot must be one of {', '.join(repr(v) for v in PLOT_VALUES)}")
    if plot_type not in PLOT_TYPES:
        raise Refusal("Plot type must be one of 'bar', 'line', 'scatter', or 'histogram'")
    path = f"plots/{time_min}_{time_max}_{value_to_plot}_{plot_type}.png"
    path.encode("utf-8")  # the plots table is a pandas string column: it fails on a lone surrogate
    state.plots = (*state.plots, path)
    return path


def analytics_total_visits_count(state: GymState, time_min: Any = None, time_max: Any = None) -> Any:
    """Visits per day."""
    return _per_day(_within(state.analytics, time_min, time_max))


def analytics_engaged_users_count(state: GymState, time_min: Any = None, time_max: Any = None) -> Any:
    """Visits by engaged users per day."""
    visits = _within(state.analytics, time_min, time_max)
    engaged = visits.series("user_engaged").astype(bool).astype(int)
    return _per_day(visits, engaged, "sum")


def analytics_traffic_source_count(
    state: GymState, time_min: Any = None, time_max: Any = None, traffic_source: Any = None
) -> Any:
    """Visits per day from one traffic source (from all without one)."""
    visits = _within(state.analytics, time_min, time_max)
    if not traffic_source:
        return _per_day(visits)
    return _per_day(visits, (visits.series("traffic_source") == traffic_source).astype(int), "sum")


def analytics_get_average_session_duration(
    state: GymState, time_min: Any = None, time_max: Any = None
) -> Any:
    """Mean session length in seconds per day."""
    if not time_min and not time_max:
        # Over all dates NeMo-Gym converts its own table's column to floats, which later visitor look-ups
        # then show.
        state.analytics = durations_as_float(state.analytics)
        visits = state.analytics
    else:
        visits = durations_as_float(_within(state.analytics, time_min, time_max))
    seconds = series(visits.column("session_duration_seconds"), FLOAT)
    return _per_day(visits, seconds, "mean")
