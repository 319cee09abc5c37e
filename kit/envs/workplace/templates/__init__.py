"""Task templates: each turns random choices over the kit's state into a request and its ground truth.

A template writes the request and performs the ground-truth calls through a ``Plan``, which runs them on
its own sandbox: look-ups return what the real tools return, so the ground truth is right for the state
by construction, and a template whose choice turns out ambiguous or invalid raises ``Skip``.

Tiers: ``easy`` is one state-changing call with every argument spelled out; ``medium`` looks something up
(or works out a value) and then acts; ``hard`` acts on several records, across domains, or on a condition.

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
