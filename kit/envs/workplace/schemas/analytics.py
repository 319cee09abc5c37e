"""The website analytics tools' schemas."""

from kit.envs.workplace.schemas.spec import DATE_FORMAT, Param, ToolSpec

_DATE_RANGE = (
    Param("time_min", "string", f"First day of the range (inclusive). {DATE_FORMAT}", "YYYY-MM-DD"),
    Param("time_max", "string", f"Last day of the range (inclusive). {DATE_FORMAT}", "YYYY-MM-DD"),
)

ANALYTICS_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "analytics_get_visitor_information_by_id",
        "analytics",
        False,
        "Returns every recorded website visit of the visitor with the given ID.",
        "Get a visitor's visits.",
        (Param("visitor_id", "string", "The 4-digit visitor ID.", "4-digit id", True),),
    ),
    ToolSpec(
        "analytics_create_plot",
        "analytics",
        True,
        "Creates a plot of one website metric over a date range and returns the plot's file path.",
        "Create a plot of a metric.",
        (
            Param("time_min", "string", f"First day to plot. {DATE_FORMAT}", "YYYY-MM-DD", True),
            Param("time_max", "string", f"Last day to plot. {DATE_FORMAT}", "YYYY-MM-DD", True),
            Param(
                "value_to_plot",
                "string",
                "The metric: 'total_visits', 'session_duration_seconds', 'user_engaged', 'visits_direct', "
                "'visits_referral', 'visits_search_engine' or 'visits_social_media'.",
                "total_visits|session_duration_seconds|user_engaged|visits_direct|visits_referral|"
                "visits_search_engine|visits_social_media",
                True,
            ),
            Param(
                "plot_type",
                "string",
                "The chart type: 'bar', 'line', 'scatter' or 'histogram'.",
                "bar|line|scatter|histogram",
                True,
            ),
        ),
    ),
    ToolSpec(
        "analytics_total_visits_count",
        "analytics",
        False,
        "Counts the website visits in a date range (all days when no range is given).",
        "Count visits.",
        _DATE_RANGE,
    ),
    ToolSpec(
        "analytics_engaged_users_count",
        "analytics",
        False,
        "Counts the visits by engaged users in a date range.",
        "Count engaged-user visits.",
        _DATE_RANGE,
    ),
    ToolSpec(
        "analytics_traffic_source_count",
        "analytics",
        False,
        "Counts the visits that came from one traffic source in a date range.",
        "Count visits from a traffic source.",
        (
            *_DATE_RANGE,
            Param(
                "traffic_source",
                "string",
                "The source: 'direct', 'referral', 'search engine' or 'social media'.",
                "direct|referral|search engine|social media",
            ),
        ),
    ),
    ToolSpec(
        "analytics_get_average_session_duration",
        "analytics",
        False,
        "Returns the mean session length, in seconds, of the visits in a date range.",
        "Average session seconds.",
        _DATE_RANGE,
    ),
)
