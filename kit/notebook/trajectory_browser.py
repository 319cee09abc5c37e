"""A trajectory browser for notebooks: one episode at a time, with a slider in JupyterLab and the
first episode as static output elsewhere."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kit.episode import is_success
from kit.notebook.display import display, try_widget
from kit.run_folder import RunFolder
from kit.train.analysis import call_text, classify_episode

_ROLE_COLOURS = {
    "system": "#eee",
    "user": "#e3f0ff",
    "assistant": "#fff4d6",
    "tool": "#e6f7e6",
    "simulated user": "#f1e4fb",
}


def _episode_turns(record: dict[str, Any]) -> list[tuple[str, Any]]:
    """(label, content) of each message the episode added; a user message there is the simulated user's
    reply (a dialogue task), not the request."""
    return [
        ("simulated user" if m.get("role") == "user" else m.get("role", "?"), m.get("content"))
        for m in record.get("messages", [])
    ]


def _escape(text: Any, limit: int = 1500) -> str:
    text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit] + f" ... [{len(text) - limit} more characters]"
    return html.escape(text)


def _when(record: dict[str, Any]) -> str:
    """'step N' for a GRPO episode; evaluations are recorded with step -1 (no training step)."""
    step = record.get("step")
    return f"step {step}" if isinstance(step, int) and step >= 0 else "evaluation"


def episode_html(record: dict[str, Any], index: int | None = None, total: int | None = None) -> str:
    """One episode as HTML: header (task, reward, counts), the conversation, calls vs ground truth."""
    task = record.get("task", {})
    verdict = classify_episode(record)
    colour = "#8a6d00" if record.get("user_breaks") else "#2a7d2a" if _succeeded(record) else "#b03030"
    where = f"episode {index + 1}/{total} &middot; " if index is not None and total else ""
    header = (
        f"<div style='font-weight:bold;color:{colour}'>{where}{_when(record)} &middot; "
        f"{_escape(task.get('category'))}/{_escape(task.get('tier'))} &middot; "
        f"{_escape(_reward_text(record))} &middot; {verdict}</div>"
        f"<div style='font-size:90%'>turns {record.get('turns')}, "
        f"parse failures {record.get('parse_failures')}, tool errors {record.get('tool_errors')}, "
        f"completion tokens {record.get('completion_tokens')}{_dialogue_line(record)}</div>"
    )
    prompt = [
        (m.get("role"), m.get("content")) for m in record.get("prompt", []) if m.get("role") != "system"
    ]
    rows = [
        f"<div style='background:{_ROLE_COLOURS.get(role, '#fff')};padding:4px 8px;margin:2px 0;"
        f"border-radius:4px'><b>{role}</b><pre style='white-space:pre-wrap;margin:2px 0'>"
        f"{_escape(content)}</pre></div>"
        for role, content in [*prompt, *_episode_turns(record)]
    ]
    calls = "".join(
        f"<li><code>{_escape(call_text(c), 400)}</code></li>" for c in record.get("tool_calls", [])
    )
    truth = "".join(
        f"<li><code>{_escape(call_text(c), 400)}</code></li>" for c in record.get("ground_truth", [])
    )
    column = "<div style='flex:1 1 0;min-width:0'>"  # equal halves: a long call no longer squeezes the other
    footer = (
        f"<div style='display:flex;gap:2em'>{column}<b>calls made</b><ul>"
        f"{calls or '<li>none</li>'}</ul></div>{column}<b>ground truth</b><ul>{truth or '<li>none</li>'}"
        "</ul></div></div>"
    )
    return f"<div>{header}{''.join(rows)}{footer}</div>"


def _succeeded(record: dict[str, Any]) -> bool:
    return is_success(record.get("reward") or 0.0)


def _reward_text(record: dict[str, Any]) -> str:
    """'reward 1.00', or what kept an episode whose simulated user broke a rule out of training."""
    if record.get("user_breaks"):
        return f"no reward: the user broke {', '.join(record['user_breaks'])} (kept out of training)"
    return f"reward {record.get('reward') or 0.0:.2f}"


def _dialogue_line(record: dict[str, Any]) -> str:
    if not record.get("ambiguity_type"):
        return ""
    failure = f" ({record['failure']})" if record.get("failure") else ""
    return (
        f"<br>dialogue ({_escape(record['ambiguity_type'])}): {record.get('user_turns')} user "
        f"replies, ended by {_escape(record.get('end_reason'))}{_escape(failure)}"
    )


def episode_text(record: dict[str, Any]) -> str:
    """One episode as plain text (for logs and terminals)."""
    task = record.get("task", {})
    lines = [
        f"{_when(record)}  {task.get('category')}/{task.get('tier')}  {_reward_text(record)}  "
        f"({classify_episode(record)})"
    ]
    for role, content in _episode_turns(record):
        lines.append(f"[{role}] {content}")
    lines.append(f"calls made:   {[call_text(c) for c in record.get('tool_calls', [])]}")
    lines.append(f"ground truth: {[call_text(c) for c in record.get('ground_truth', [])]}")
    return "\n".join(lines)


class _HTMLBundle:
    """HTML with a plain-text fallback, so text-only renderers show something readable."""

    def __init__(self, html_text: str, plain: str) -> None:
        self.html_text = html_text
        self.plain = plain

    def _repr_html_(self) -> str:
        return self.html_text

    def __repr__(self) -> str:
        return self.plain


class TrajectoryBrowser:
    """Step through episodes (records of trajectories.jsonl): messages, calls, tool results, reward.

    `show()` displays a slider plus a filter (all / failures / successes) in JupyterLab and the current
    episode below them as a display handle; without a widget front end (papermill, GitHub) the first
    episode is what stays on the page.
    """

    def __init__(self, records: Sequence[dict[str, Any]]) -> None:
        self.records = list(records)
        self.index = 0
        self._handle = None
        self._shown: list[int] = list(range(len(self.records)))

    @classmethod
    def from_run(cls, run: RunFolder | str | Path) -> TrajectoryBrowser:
        run = run if isinstance(run, RunFolder) else RunFolder(run)
        return cls(run.trajectories())

    def _view(self, position: int) -> _HTMLBundle:
        if not self._shown:
            return _HTMLBundle("<i>no episode matches</i>", "no episode matches")
        record = self.records[self._shown[position]]
        return _HTMLBundle(episode_html(record, position, len(self._shown)), episode_text(record))

    def select(self, which: str) -> list[int]:
        """Indices of the episodes to show: 'all', 'failures', 'successes' or 'user broke' (episodes
        kept out of training because their simulated user broke a rule; neither failures nor successes)."""
        keep = {
            "all": lambda r: True,
            "failures": lambda r: not r.get("user_breaks") and not _succeeded(r),
            "successes": lambda r: not r.get("user_breaks") and _succeeded(r),
            "user broke": lambda r: bool(r.get("user_breaks")),
        }[which]
        return [i for i, r in enumerate(self.records) if keep(r)]

    def show(self, start: int = 0) -> TrajectoryBrowser:
        """Display the controls (when ipywidgets is installed) and the episode at `start`."""
        if not self.records:
            print("no trajectories to browse")
            return self
        start = max(0, min(start, len(self._shown) - 1))

        def controls():
            import ipywidgets

            # 1-based, like the "episode i/n" header under it
            slider = ipywidgets.IntSlider(
                value=start + 1, min=1, max=max(len(self._shown), 1), description="episode"
            )
            which = ipywidgets.ToggleButtons(
                options=["all", "failures", "successes", "user broke"], value="all"
            )

            def on_slide(change: dict[str, Any]) -> None:
                self._handle.update(self._view(change["new"] - 1))

            def on_filter(change: dict[str, Any]) -> None:
                self._shown = self.select(change["new"])
                slider.max = max(len(self._shown), 1)
                slider.value = 1
                self._handle.update(self._view(0))

            slider.observe(on_slide, names="value")
            which.observe(on_filter, names="value")
            return ipywidgets.VBox([which, slider])

        box = try_widget(controls)
        if box is not None:
            display(box)
        self._handle = display(self._view(start), display_id=True)
        return self
