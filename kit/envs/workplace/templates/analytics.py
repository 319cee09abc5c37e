"""Analytics templates: plots of a website metric over a range worked out from the visit data."""

from __future__ import annotations

import random
from datetime import date, timedelta

from kit.envs.workplace.state import NOW
from kit.envs.workplace.templates.helpers import shifted
from kit.envs.workplace.templates.registry import Plan, Skip, World, template
from kit.envs.workplace.tools import PLOT_TYPES, PLOT_VALUES, TRAFFIC_SOURCES

VALUE_WORDS = {
    "total_visits": "total visits",
    "session_duration_seconds": "session duration",
    "user_engaged": "engaged users",
    "visits_direct": "direct visits",
    "visits_referral": "referral visits",
    "visits_search_engine": "search engine visits",
    "visits_social_media": "social media visits",
}
TODAY = date.fromisoformat(NOW[:10])


def visit_range(rng: random.Random, longest: int = 30) -> tuple[str, str]:
    """A random date range of at most ``longest`` days within the visit data, ending by today."""
    start = date(2023, 9, 1) + timedelta(days=rng.randrange(91))
    end = min(start + timedelta(days=rng.randrange(longest)), TODAY)
    return f"{start:%Y-%m-%d}", f"{end:%Y-%m-%d}"


@template("analytics", "easy", "single_step")
def plot_explicit(rng: random.Random, world: World, plan: Plan) -> str:
    low, high = visit_range(rng)
    value, kind = rng.choice(PLOT_VALUES), rng.choice(PLOT_TYPES)
    plan.act("analytics_create_plot", time_min=low, time_max=high, value_to_plot=value, plot_type=kind)
    return rng.choice(
        (
            f"Create a {kind} plot of {value} from {low} to {high}.",
            f"Make a {kind} plot of '{value}' for {low} through {high}.",
        )
    )


@template("analytics", "medium", "analytics_visitor_deep_dive")
def plot_since_visitor(rng: random.Random, world: World, plan: Plan) -> str:
    visitor = rng.choice(world.visits)["visitor_id"]
    first_day = min(
        v["date_of_visit"] for v in plan.read("analytics_get_visitor_information_by_id", visitor_id=visitor)
    )
    value, kind = rng.choice(PLOT_VALUES), rng.choice(PLOT_TYPES)
    plan.act(
        "analytics_create_plot", time_min=first_day, time_max=NOW[:10], value_to_plot=value, plot_type=kind
    )
    return (
        f"Create a {kind} plot of {VALUE_WORDS[value]} from the day visitor {visitor} first visited the "
        f"site until today."
    )


@template("analytics", "medium", "analytics_query_then_plot")
def plot_last_days(rng: random.Random, world: World, plan: Plan) -> str:
    days = rng.choice((7, 14, 30))
    value, kind = rng.choice(PLOT_VALUES), rng.choice(PLOT_TYPES)
    plan.act(
        "analytics_create_plot",
        time_min=shifted(NOW, 1 - days),
        time_max=NOW[:10],
        value_to_plot=value,
        plot_type=kind,
    )
    return f"Plot {VALUE_WORDS[value]} as a {kind} chart for the last {days} days, including today."


@template("analytics", "hard", "analytics_traffic_comparison")
def plot_busier_source(rng: random.Random, world: World, plan: Plan) -> str:
    low, high = visit_range(rng, longest=14)
    first, second = rng.sample(TRAFFIC_SOURCES, 2)
    counts = [
        plan.read("analytics_traffic_source_count", time_min=low, time_max=high, traffic_source=s)["visits"]
        for s in (first, second)
    ]
    winner, kind = (first, "bar") if counts[0] > counts[1] else (second, "line")
    plan.act(
        "analytics_create_plot",
        time_min=low,
        time_max=high,
        value_to_plot=f"visits_{winner.replace(' ', '_')}",
        plot_type=kind,
    )
    return (
        f"If there were more {first} visits than {second} visits between {low} and {high}, create a bar "
        f"plot of {first} visits for that period; otherwise create a line plot of {second} visits."
    )


@template("analytics", "hard", "analytics_query_then_plot")
def plot_by_session_length(rng: random.Random, world: World, plan: Plan) -> str:
    low, high = visit_range(rng, longest=10)
    threshold = rng.choice((15, 20, 25, 30))
    average = plan.read("analytics_get_average_session_duration", time_min=low, time_max=high)
    seconds = average["average_session_duration_seconds"]
    if seconds is None:
        raise Skip("no visits")
    value, kind = (
        ("session_duration_seconds", "histogram") if seconds > threshold else ("user_engaged", "bar")
    )
    plan.act("analytics_create_plot", time_min=low, time_max=high, value_to_plot=value, plot_type=kind)
    return (
        f"If the average session between {low} and {high} lasted more than {threshold} seconds, make a "
        f"histogram of session_duration_seconds for those days; otherwise make a bar chart of user_engaged."
    )


@template("analytics", "hard", "analytics_multi_query")
def plot_engagement_share(rng: random.Random, world: World, plan: Plan) -> str:
    low, high = visit_range(rng, longest=14)
    share = rng.choice((40, 50, 60))
    visits = plan.read("analytics_total_visits_count", time_min=low, time_max=high)["total_visits"]
    engaged = plan.read("analytics_engaged_users_count", time_min=low, time_max=high)["engaged_users"]
    if not visits:
        raise Skip("no visits")
    value, kind = ("user_engaged", "bar") if 100 * engaged > share * visits else ("total_visits", "line")
    plan.act("analytics_create_plot", time_min=low, time_max=high, value_to_plot=value, plot_type=kind)
    return (
        f"If more than {share}% of the visits between {low} and {high} were engaged, make a bar plot of "
        f"user_engaged for that period; otherwise make a line plot of total_visits."
    )
