"""The template registry and what a template works with.

A template is a function of a ``random.Random``, the ``World`` it draws from and a ``Plan`` that runs
and records its ground-truth calls; it returns the request text. ``@template(category, tier)`` files it
under its cell and ``make_task`` draws a task from a cell.

Templates read with the kit's tools (their answers are the plain JSON templates parse), and every
state-changing call also runs with NeMo-Gym's: a task is kept only when both tool sets accept all its
calls and both end in a changed state, so it is valid whichever ``env.tool_messages`` trains on it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kit.envs.workplace.generate_state import EMPLOYEES, address
from kit.envs.workplace.sandbox import WorkplaceSandbox
from kit.envs.workplace.schemas import STATE_CHANGING, toolkit_of
from kit.envs.workplace.state import WorkplaceState

CATEGORIES = (
    "email",
    "calendar",
    "analytics",
    "project_management",
    "customer_relationship_manager",
    "multi_domain",
)
TIERS = ("easy", "medium", "hard")


class Skip(Exception):
    """The random choices do not make a good task for this state; try other ones."""


@dataclass(frozen=True)
class GeneratedTask:
    """A generated task: request text, ground-truth calls and the toolkits they need."""

    category: str
    tier: str
    request: str
    calls: tuple[dict[str, str], ...]
    toolkits: tuple[str, ...]


class Plan:
    """Records ground-truth calls while running them on private sandboxes, one per tool set."""

    def __init__(self, world: World) -> None:
        self.sandbox = world.base.copy()
        self.gym = world.gym_base.copy()
        self.calls: list[dict[str, str]] = []
        self.toolkits: set[str] = set()

    def _run(self, tool: str, arguments: dict[str, Any]) -> str:
        observation = self.sandbox.call(tool, arguments)
        if observation.refused:
            raise Skip(observation)
        if tool in STATE_CHANGING and (refused := self.gym.call(tool, arguments)).refused:
            raise Skip(f"NeMo-Gym's tool refuses it: {refused}")
        self.calls.append({"name": tool, "arguments": json.dumps(arguments, ensure_ascii=False)})
        return observation

    def read(self, tool: str, /, **arguments: Any) -> Any:
        """Run a read-only tool and return its decoded JSON result."""
        return json.loads(self._run(tool, arguments))

    def act(self, tool: str, /, **arguments: Any) -> None:
        """Run a state-changing tool."""
        self._run(tool, arguments)

    def needs(self, *toolkits: str) -> None:
        """Declare toolkits the request may need beyond those of the calls made (the branch not taken)."""
        self.toolkits.update(toolkits)

    def lookup(self, first: str) -> str:
        """Find a colleague's address by first name, as the agent would."""
        found = self.read("company_directory_find_email_address", name=first.capitalize())
        if len(found) != 1:
            raise Skip(f"{first!r} is ambiguous in the directory")
        return found[0]


class World:
    """Read-only views of the base state that templates draw from."""

    def __init__(self, state: WorkplaceState) -> None:
        self.base = WorkplaceSandbox(state, tool_messages="kit")
        self.gym_base = WorkplaceSandbox(state, tool_messages="nemo_gym")
        self.emails = list(state.emails.rows())
        self.events = list(state.calendar.rows())
        self.tasks = list(state.tasks.rows())
        self.customers = list(state.customers.rows())
        self.visits = list(state.analytics)
        self.people = [(first, address(first, last), team) for first, last, team in EMPLOYEES]
        self.builders = [p for p in self.people if p[2] != "Sales"]
        self.sales = [p for p in self.people if p[2] == "Sales"]


Template = Callable[[random.Random, World, Plan], str]
TEMPLATES: dict[tuple[str, str], list[Template]] = {}


def template(category: str, tier: str) -> Callable[[Template], Template]:
    """Decorator filing a template under the (category, tier) cell, after those filed before."""

    def register(fn: Template) -> Template:
        TEMPLATES.setdefault((category, tier), []).append(fn)
        return fn

    return register


def make_task(category: str, tier: str, rng: random.Random, world: World) -> GeneratedTask:
    """One task of the given cell from a randomly chosen template; raises Skip when the draw is unusable."""
    plan = Plan(world)
    request = rng.choice(TEMPLATES[(category, tier)])(rng, world, plan)
    if any(call["name"] in STATE_CHANGING for call in plan.calls) and (
        plan.sandbox.same_state(world.base) or plan.gym.same_state(world.gym_base)
    ):
        raise Skip("the calls leave the state as it was")
    toolkits = plan.toolkits | {toolkit_of(call["name"]) for call in plan.calls}
    if category != "multi_domain":
        toolkits.add(category)
    if request.endswith(("!'.", ".'.", "?'.")):
        request = request[:-1]  # the quoted text already ends the sentence
    return GeneratedTask(
        category,
        tier,
        request,
        tuple(plan.calls),
        tuple(t for t in ("company_directory", *CATEGORIES) if t in toolkits),
    )
