"""The template registry and what a template works with.

A template is a function of a ``random.Random``, the ``World`` it draws from and a ``Plan`` that runs
and records its calls; it returns the request text. ``@template(category, tier, family)`` files it under
its cell and the task family it stands for (``families``), and ``make_task`` draws a task from a cell.

A task's calls are a solver's path: the searches and reads that find what the request names, then the
writes. The writes alone are its ground truth (what NeMo-Gym's verifier replays); the whole path is its
solution, which the SFT warm-up demonstrates. Templates read with the kit's tools (their answers are the
plain JSON templates parse), and every call also runs with NeMo-Gym's, whose answers are what a solver
sees: a task is kept only when both tool sets accept its calls, both end in a changed state, and every id
a call uses was in the request or in an answer before it (no demonstration shows an id from nowhere).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kit.envs.workplace.generate_state import EMPLOYEES, address
from kit.envs.workplace.sandbox import WorkplaceSandbox
from kit.envs.workplace.schemas import STATE_CHANGING, toolkit_of
from kit.envs.workplace.state import WorkplaceState
from kit.envs.workplace.templates.families import FAMILIES

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


ID_ARGUMENTS = ("email_id", "event_id", "task_id", "customer_id", "visitor_id")
"""Arguments holding a record's id, which a solver must have seen before using."""


@dataclass(frozen=True)
class GeneratedTask:
    """A generated task: request text, the solver's calls (reads and writes, in order), the toolkits they
    need and the task family."""

    category: str
    tier: str
    request: str
    calls: tuple[dict[str, str], ...]
    toolkits: tuple[str, ...]
    family: str

    @property
    def ground_truth(self) -> tuple[dict[str, str], ...]:
        """The state-changing calls: what NeMo-Gym's verifier replays."""
        return tuple(call for call in self.calls if call["name"] in STATE_CHANGING)


class Plan:
    """Records a solver's calls while running them on private sandboxes, one per tool set, keeping what
    NeMo-Gym's tools answered to each (``shown``)."""

    def __init__(self, world: World) -> None:
        self.sandbox = world.base.copy()
        self.gym = world.gym_base.copy()
        self.calls: list[dict[str, str]] = []
        self.shown: list[str] = []
        self.toolkits: set[str] = set()

    def _run(self, tool: str, arguments: dict[str, Any]) -> str:
        observation = self.sandbox.call(tool, arguments)
        if observation.refused:
            raise Skip(observation)
        if (shown := self.gym.call(tool, arguments)).refused:
            raise Skip(f"NeMo-Gym's tool refuses it: {shown}")
        self.calls.append({"name": tool, "arguments": json.dumps(arguments, ensure_ascii=False)})
        self.shown.append(str(shown))
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
        named = Counter((task["task_name"], task["due_date"]) for task in self.tasks)
        # Tasks a request can name by their name and due date (a name alone recurs across people and boards).
        self.named_tasks = [task for task in self.tasks if named[task["task_name"], task["due_date"]] == 1]
        self.customers = list(state.customers.rows())
        self.visits = list(state.analytics)
        self.people = [(first, address(first, last), team) for first, last, team in EMPLOYEES]
        self.builders = [p for p in self.people if p[2] != "Sales"]
        self.sales = [p for p in self.people if p[2] == "Sales"]


Template = Callable[[random.Random, World, Plan], str]
TEMPLATES: dict[tuple[str, str], list[Template]] = {}


def template(category: str, tier: str, family: str) -> Callable[[Template], Template]:
    """Decorator filing a template under the (category, tier) cell, after those filed before, as one of
    `family` (a key of ``families.FAMILIES``)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown task family {family!r}; known: {', '.join(FAMILIES)}")

    def register(fn: Template) -> Template:
        fn.family = family  # type: ignore[attr-defined]
        TEMPLATES.setdefault((category, tier), []).append(fn)
        return fn

    return register


def unseen_id(request: str, calls: list[dict[str, str]], shown: list[str]) -> str | None:
    """The first id a call uses that neither the request nor an answer before that call showed."""
    for position, call in enumerate(calls):
        arguments = json.loads(call["arguments"])
        for key in ID_ARGUMENTS:
            value = arguments.get(key)
            if value and value not in request and not any(value in answer for answer in shown[:position]):
                return f"{call['name']} uses {key} {value}"
    return None


def make_task(category: str, tier: str, rng: random.Random, world: World) -> GeneratedTask:
    """One task of the given cell from a randomly chosen template; raises Skip when the draw is unusable."""
    plan = Plan(world)
    chosen = rng.choice(TEMPLATES[(category, tier)])
    request = chosen(rng, world, plan)
    if any(call["name"] in STATE_CHANGING for call in plan.calls) and (
        plan.sandbox.same_state(world.base) or plan.gym.same_state(world.gym_base)
    ):
        raise Skip("the calls leave the state as it was")
    toolkits = plan.toolkits | {toolkit_of(call["name"]) for call in plan.calls}
    if category != "multi_domain":
        toolkits.add(category)
    if request.endswith(("!'.", ".'.", "?'.")):
        request = request[:-1]  # the quoted text already ends the sentence
    if (unseen := unseen_id(request, plan.calls, plan.shown)) is not None:
        raise Skip(f"a solver could not know the id: {unseen}")
    return GeneratedTask(
        category,
        tier,
        request,
        tuple(plan.calls),
        tuple(t for t in ("company_directory", *CATEGORIES) if t in toolkits),
        chosen.family,
    )
