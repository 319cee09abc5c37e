"""The kit's own tool set (``env.tool_messages: kit``; NeMo-Gym's, the default, is ``gym``): the 27
workplace tools as functions of a ``WorkplaceState`` and already type-checked arguments.

Each tool validates everything before its single write, and reports a refused call by raising
``ToolError`` whose message tells the model what was wrong and what is valid; the sandbox turns that into
an ``Error: ...`` observation. Successful calls return a short sentence or JSON.

One module per toolkit (``company_directory``, ``email``, ``calendar``, ``analytics``,
``project_management``, ``customer_relationship_manager``), each with the value vocabularies its database
uses; ``checks`` holds the argument checks they share.
"""

from collections.abc import Callable

from kit.envs.workplace.tools.analytics import (
    PLOT_TYPES,
    PLOT_VALUES,
    TRAFFIC_SOURCES,
    analytics_create_plot,
    analytics_engaged_users_count,
    analytics_get_average_session_duration,
    analytics_get_visitor_information_by_id,
    analytics_total_visits_count,
    analytics_traffic_source_count,
)
from kit.envs.workplace.tools.calendar import (
    WORKDAY_END,
    WORKDAY_START,
    calendar_create_event,
    calendar_delete_event,
    calendar_get_event_information_by_id,
    calendar_search_events,
    calendar_update_event,
)
from kit.envs.workplace.tools.checks import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, ToolError
from kit.envs.workplace.tools.company_directory import company_directory_find_email_address
from kit.envs.workplace.tools.customer_relationship_manager import (
    CRM_TIME,
    PRODUCTS,
    STATUSES,
    customer_relationship_manager_add_customer,
    customer_relationship_manager_delete_customer,
    customer_relationship_manager_search_customers,
    customer_relationship_manager_update_customer,
)
from kit.envs.workplace.tools.email import (
    email_delete_email,
    email_forward_email,
    email_get_email_information_by_id,
    email_reply_email,
    email_search_emails,
    email_send_email,
)
from kit.envs.workplace.tools.project_management import (
    BOARDS,
    LIST_NAMES,
    project_management_create_task,
    project_management_delete_task,
    project_management_get_task_information_by_id,
    project_management_search_tasks,
    project_management_update_task,
)

TOOLS: dict[str, Callable[..., str]] = {
    fn.__name__: fn
    for fn in (
        company_directory_find_email_address,
        email_get_email_information_by_id,
        email_search_emails,
        email_send_email,
        email_delete_email,
        email_forward_email,
        email_reply_email,
        calendar_get_event_information_by_id,
        calendar_search_events,
        calendar_create_event,
        calendar_delete_event,
        calendar_update_event,
        analytics_get_visitor_information_by_id,
        analytics_create_plot,
        analytics_total_visits_count,
        analytics_engaged_users_count,
        analytics_traffic_source_count,
        analytics_get_average_session_duration,
        project_management_get_task_information_by_id,
        project_management_search_tasks,
        project_management_create_task,
        project_management_delete_task,
        project_management_update_task,
        customer_relationship_manager_search_customers,
        customer_relationship_manager_update_customer,
        customer_relationship_manager_add_customer,
        customer_relationship_manager_delete_customer,
    )
}
"""Tool name -> implementation, in canonical order."""

__all__ = [
    "BOARDS",
    "CRM_TIME",
    "DEFAULT_PAGE_SIZE",
    "LIST_NAMES",
    "MAX_PAGE_SIZE",
    "PLOT_TYPES",
    "PLOT_VALUES",
    "PRODUCTS",
    "STATUSES",
    "TOOLS",
    "TRAFFIC_SOURCES",
    "ToolError",
    "WORKDAY_END",
    "WORKDAY_START",
    "analytics_create_plot",
    "analytics_engaged_users_count",
    "analytics_get_average_session_duration",
    "analytics_get_visitor_information_by_id",
    "analytics_total_visits_count",
    "analytics_traffic_source_count",
    "calendar_create_event",
    "calendar_delete_event",
    "calendar_get_event_information_by_id",
    "calendar_search_events",
    "calendar_update_event",
    "company_directory_find_email_address",
    "customer_relationship_manager_add_customer",
    "customer_relationship_manager_delete_customer",
    "customer_relationship_manager_search_customers",
    "customer_relationship_manager_update_customer",
    "email_delete_email",
    "email_forward_email",
    "email_get_email_information_by_id",
    "email_reply_email",
    "email_search_emails",
    "email_send_email",
    "project_management_create_task",
    "project_management_delete_task",
    "project_management_get_task_information_by_id",
    "project_management_search_tasks",
    "project_management_update_task",
]
