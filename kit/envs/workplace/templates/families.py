"""The task families a template stands for: NeMo-Gym's workplace patterns (the public list in its
`tool_schemas/environment.json`, `common_multi_step_patterns`), plus the two the kit adds.

Each family is what a solver does, not how the request words it; a request in any family names people,
subjects, meetings, tasks and customers the way people do, and the solver finds the ids.
"""

from __future__ import annotations

NEMO_GYM_FAMILIES = {
    "email_lookup_send": "look up a colleague's address, then email them",
    "email_lookup_forward": "find an email, look up a colleague, forward it to them",
    "email_search_reply": "find an email, then reply to it",
    "email_search_delete_batch": "find emails matching criteria, then delete them",
    "email_get_info_then_act": "read something from an email, then act on it",
    "calendar_lookup_create": "look up a colleague, then schedule a meeting with them",
    "calendar_search_update_batch": "find meetings, then change them",
    "calendar_search_delete_batch": "find meetings, then cancel them",
    "calendar_get_info_update": "find one meeting by when or what it is, then change it",
    "analytics_multi_query": "query several metrics, then act on the comparison",
    "analytics_query_then_plot": "query or pick a period, then plot it",
    "analytics_visitor_deep_dive": "look up a visitor, then act on their visits",
    "analytics_traffic_comparison": "compare traffic sources over a period, then act",
    "pm_lookup_create_task": "look up a colleague, then create a task for them",
    "pm_search_update_batch": "find tasks, then update them",
    "pm_search_delete_batch": "find tasks, then delete them",
    "pm_reassign_tasks": "look up two colleagues, find one's tasks, give them to the other",
    "pm_get_info_update": "read a task's details, then update it from them",
    "crm_lookup_add": "look up a sales rep, then add a customer for them",
    "crm_search_update_batch": "find customers, then update them",
    "crm_search_delete_batch": "find customers, then delete them",
    "crm_status_update": "find customers by status, product or last contact, then change their status",
    "cross_email_calendar": "find an email, then schedule a meeting from it",
    "cross_calendar_email": "find a meeting, then email its participant",
    "cross_pm_email": "find tasks, then email about them",
    "cross_crm_calendar": "find customers or their owner, then schedule a meeting",
    "cross_crm_email": "find customers, then email them or their owner",
    "cross_analytics_email": "query analytics, then email a report (or plot)",
}
KIT_FAMILIES = {
    "single_step": "one call with every argument given (NeMo-Gym's single-step tasks)",
    "cross_email_pm": "find an email, then create a task for its sender",
}
FAMILIES = {**NEMO_GYM_FAMILIES, **KIT_FAMILIES}
