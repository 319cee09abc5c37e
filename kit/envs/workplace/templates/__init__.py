"""Task templates: each turns random choices over the kit's state into a request, the solver's calls and
the ground truth (their state-changing part).

A template writes the request and performs a solver's calls through a ``Plan``, which runs them on its
own sandboxes: look-ups return what the real tools return, so the calls are right for the state by
construction, and a template whose choice turns out ambiguous or invalid raises ``Skip``. Requests name
records the way people do (a sender and a subject, a meeting's title and day, a task's name and board, a
customer's name, a relative time), never by the internal id a solver finds; visitor ids are the one kind
the analytics dashboard shows people. Each template stands for a task family (``families``).

Tiers: ``easy`` is one state-changing call, its record named exactly (found with one search) or every
argument spelled out; ``medium`` looks someone or something up (or works out a value) and then acts;
``hard`` acts on several records, across domains, or on a condition.

One module per category (a toolkit, or ``multi_domain``) holds its templates and the vocabulary they draw
from; ``registry`` files them by cell and ``helpers`` holds what several categories share.
"""

# Importing a category's module files its templates in TEMPLATES, in the order the module defines them.
from kit.envs.workplace.templates import (  # noqa: F401
    analytics,
    calendar,
    customer_relationship_manager,
    email,
    multi_domain,
    project_management,
)
from kit.envs.workplace.templates.registry import (
    CATEGORIES,
    TEMPLATES,
    TIERS,
    GeneratedTask,
    Plan,
    Skip,
    Template,
    World,
    make_task,
    template,
)

__all__ = [
    "CATEGORIES",
    "TEMPLATES",
    "TIERS",
    "GeneratedTask",
    "Plan",
    "Skip",
    "Template",
    "World",
    "make_task",
    "template",
]
