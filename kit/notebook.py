"""Helpers the tutorial notebooks call: a live training dashboard, a trajectory browser, small displays.

Everything here renders in two places:

* JupyterLab, with a widget front end: the dashboard redraws during `trainer.train()` and the browser
  has a slider to step through episodes;
* papermill / nbconvert / GitHub, with no widget front end: the same calls leave static output (the
  last dashboard figure, the first episode), and nothing fails.

Both work through IPython display handles (`display(..., display_id=True)` then `handle.update(...)`),
which every front end understands; widgets only add controls on top. Figures are rendered to PNG with
matplotlib's Agg canvas, so they show whichever matplotlib backend is active.
"""

from __future__ import annotations

import html
import importlib.metadata
import io
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from kit.analysis import classify_episode, token_segments
from kit.runlog import RunFolder
from kit.runlog import episode_records as episode_records  # re-exported: the notebooks import it from here

# name in the log line -> panel title; the dashboard draws the ones present.
DASHBOARD_PANELS: dict[str, str] = {
    "reward": "mean reward",
    "episode/success_rate": "success rate",
    "episode/tool_calls": "tool calls / episode",
    "episode/parse_failure_rate": "parse failures / turn",
    "episode/tool_error_rate": "tool errors / call",
}


def _display(obj: Any, **kwargs: Any) -> Any:
    from IPython.display import display

    return display(obj, **kwargs)


def _figure_png(fig) -> bytes:
    """PNG bytes of a matplotlib Figure through the Agg canvas (independent of the active backend)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()


def show_figure(fig) -> Any:
    """Display a matplotlib Figure as a PNG image; returns the display handle."""
    from IPython.display import Image

    return _display(Image(data=_figure_png(fig), format="png"), display_id=True)


def _try_widget(factory) -> Any:
    """An ipywidgets control, or None when ipywidgets is missing."""
    try:
        return factory()
    except ImportError:
        return None


# ---------------------------------------------------------------- environment and versions


def package_versions(names: Sequence[str]) -> list[dict[str, str]]:
    """Installed version of each distribution (or 'not installed'), as table rows."""
    rows = []
    for name in names:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "not installed"
        rows.append({"package": name, "version": version})
    return rows


def show_table(rows: Sequence[dict[str, Any]] | Any, caption: str | None = None) -> None:
    """Display rows (list of dicts) or a DataFrame as a table: HTML in a notebook, text in plain output."""
    import pandas as pd

    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if caption:
        _display(frame.style.set_caption(caption) if len(frame) else frame)
    else:
        _display(frame)


def show_file(path: str | Path, language: str | None = None, max_lines: int | None = None) -> None:
    """Display a text file as a fenced code block (YAML recipes, plugin files, task YAMLs)."""
    from IPython.display import Markdown

    path = Path(path)
    lines = path.read_text().splitlines()
    cut = max_lines is not None and len(lines) > max_lines
    text = "\n".join(lines[:max_lines] if cut else lines)
    if cut:
        text += f"\n# ... {len(lines) - max_lines} more lines"
    lang = language or {".yaml": "yaml", ".yml": "yaml", ".py": "python"}.get(path.suffix, "")
    _display(Markdown(f"**{path}**\n\n```{lang}\n{text}\n```"))


# ---------------------------------------------------------------- tasks and evaluation


def show_task(task, max_tools: int = 8) -> None:
    """Print one task: the request, the tools the policy is shown, and the ground-truth calls."""
    for message in task.messages:
        content = message["content"]
        if message["role"] == "system" and len(content) > 400:
            content = content[:400] + f"... [{len(content) - 400} more characters]"
        print(f"[{message['role']}] {content}\n")
    names = [tool.get("function", tool).get("name") for tool in task.tools]
    shown = ", ".join(names[:max_tools]) + (f", ... ({len(names)} in all)" if len(names) > max_tools else "")
    print(f"tools shown to the policy ({len(names)}): {shown}")
    print(f"category: {task.info.get('category')}   tier: {task.info.get('tier')}")
    print("ground truth:")
    for call in task.ground_truth:
        print(f"  {call['name']}({call['arguments']})")
    if not task.ground_truth:
        print("  (no call: nothing should change)")


# ---------------------------------------------------------------- the live training dashboard


class TrainingDashboard(TrainerCallback):
    """Live GRPO dashboard: reward, success rate, tool calls, parse failures and tool errors per step.

    A `transformers.TrainerCallback`: `trainer.add_callback(dashboard)` and it redraws on every log
    line during `trainer.train()`. Also draws finished runs: `TrainingDashboard.from_run(RunFolder(...))`.
    The figure is a display handle updated in place (JupyterLab shows it live; papermill keeps the last
    frame); an ipywidgets progress bar is added when ipywidgets is installed.
    """

    def __init__(
        self,
        metrics: Sequence[dict[str, Any]] | None = None,
        max_steps: int | None = None,
        title: str = "GRPO",
        panels: dict[str, str] | None = None,
    ) -> None:
        self.records: list[dict[str, Any]] = [m for m in (metrics or []) if "reward" in m]
        self.max_steps = max_steps
        self.title = title
        self.panels = panels or DASHBOARD_PANELS
        self.started = time.perf_counter()
        self._handle = None
        self._progress = None

    @classmethod
    def from_run(cls, run: RunFolder | str | Path, **kwargs: Any) -> TrainingDashboard:
        """A dashboard over a run folder's metrics.jsonl (call `.show()` to draw it)."""
        run = run if isinstance(run, RunFolder) else RunFolder(run)
        return cls(run.training_steps(), title=kwargs.pop("title", run.path.name), **kwargs)

    # --- TrainerCallback hooks
    def on_train_begin(self, args, state, control, **kwargs):
        self.max_steps = self.max_steps or state.max_steps
        self.started = time.perf_counter()
        self.show()

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs and "reward" in logs:
            self.records.append({"step": state.global_step, **logs})
            self.redraw()

    # --- drawing
    def figure(self):
        """The dashboard as a matplotlib Figure (one panel per metric present in the logs)."""
        from matplotlib.figure import Figure

        names = [n for n in self.panels if any(n in r for r in self.records)] or list(self.panels)[:2]
        cols = min(3, len(names))
        rows = (len(names) + cols - 1) // cols
        fig = Figure(figsize=(4.0 * cols, 2.8 * rows))
        steps = [r["step"] for r in self.records]
        for index, name in enumerate(names):
            ax = fig.add_subplot(rows, cols, index + 1)
            points = [(r["step"], r[name]) for r in self.records if name in r]
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, marker="o", color=f"C{index}")
            ax.set_title(self.panels[name], fontsize=10)
            ax.set_xlabel("GRPO step", fontsize=8)
            if self.max_steps:
                ax.set_xlim(0.5, self.max_steps + 0.5)
            if name != "episode/tool_calls":
                ax.set_ylim(-0.05, 1.05)
            ax.grid(alpha=0.3)
        fig.suptitle(self.status(steps), fontsize=10)
        fig.tight_layout()
        return fig

    def status(self, steps: Sequence[int] | None = None) -> str:
        """One line: step, latest reward and success rate, elapsed time."""
        if not self.records:
            return f"{self.title}: waiting for the first step"
        last = self.records[-1]
        of = f"/{self.max_steps}" if self.max_steps else ""
        success = last.get("episode/success_rate")
        parts = [f"{self.title}: step {last['step']}{of}", f"reward {last['reward']:.3f}"]
        if success is not None:
            parts.append(f"success {success:.0%}")
        parts.append(f"{time.perf_counter() - self.started:.0f} s")
        return "   ".join(parts)

    def show(self) -> TrainingDashboard:
        """Display the dashboard (a progress bar when ipywidgets is there, and the figure)."""
        from IPython.display import Image

        def progress():
            import ipywidgets

            return ipywidgets.IntProgress(
                value=len(self.records), min=0, max=self.max_steps or 1, description="steps"
            )

        self._progress = _try_widget(progress)
        if self._progress is not None:
            _display(self._progress)
        self._handle = _display(Image(data=_figure_png(self.figure()), format="png"), display_id=True)
        return self

    def redraw(self) -> None:
        """Redraw in place (shows the dashboard first if it is not on screen yet)."""
        from IPython.display import Image

        if self._handle is None:
            self.show()
            return
        if self._progress is not None:
            self._progress.max = self.max_steps or max(len(self.records), 1)
            self._progress.value = len(self.records)
        self._handle.update(Image(data=_figure_png(self.figure()), format="png"))


# ---------------------------------------------------------------- the trajectory browser

_ROLE_COLOURS = {"system": "#eee", "user": "#e3f0ff", "assistant": "#fff4d6", "tool": "#e6f7e6"}


def _escape(text: Any, limit: int = 1500) -> str:
    text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit] + f" ... [{len(text) - limit} more characters]"
    return html.escape(text)


def episode_html(record: dict[str, Any], index: int | None = None, total: int | None = None) -> str:
    """One episode as HTML: header (task, reward, counts), the conversation, calls vs ground truth."""
    task = record.get("task", {})
    reward = record.get("reward", 0.0)
    verdict = classify_episode(record)
    colour = "#2a7d2a" if reward >= 1.0 else "#b03030"
    where = f"episode {index + 1}/{total} &middot; " if index is not None and total else ""
    header = (
        f"<div style='font-weight:bold;color:{colour}'>{where}step {record.get('step')} &middot; "
        f"{_escape(task.get('category'))}/{_escape(task.get('tier'))} &middot; reward {reward:.2f} "
        f"&middot; {verdict}</div><div style='font-size:90%'>turns {record.get('turns')}, "
        f"parse failures {record.get('parse_failures')}, tool errors {record.get('tool_errors')}, "
        f"completion tokens {record.get('completion_tokens')}</div>"
    )
    rows = []
    conversation = [m for m in record.get("prompt", []) if m.get("role") != "system"]
    for message in [*conversation, *record.get("messages", [])]:
        role = message.get("role", "?")
        rows.append(
            f"<div style='background:{_ROLE_COLOURS.get(role, '#fff')};padding:4px 8px;margin:2px 0;"
            f"border-radius:4px'><b>{role}</b><pre style='white-space:pre-wrap;margin:2px 0'>"
            f"{_escape(message.get('content'))}</pre></div>"
        )
    calls = "".join(f"<li><code>{_escape(c, 400)}</code></li>" for c in record.get("tool_calls", []))
    truth = "".join(f"<li><code>{_escape(c, 400)}</code></li>" for c in record.get("ground_truth", []))
    footer = (
        "<div style='display:flex;gap:2em'><div><b>calls made</b><ul>"
        f"{calls or '<li>none</li>'}</ul></div><div><b>ground truth</b><ul>{truth or '<li>none</li>'}"
        "</ul></div></div>"
    )
    return f"<div>{header}{''.join(rows)}{footer}</div>"


def episode_text(record: dict[str, Any]) -> str:
    """One episode as plain text (for logs and terminals)."""
    task = record.get("task", {})
    lines = [
        f"step {record.get('step')}  {task.get('category')}/{task.get('tier')}  reward "
        f"{record.get('reward', 0.0):.2f}  ({classify_episode(record)})"
    ]
    for message in record.get("messages", []):
        lines.append(f"[{message.get('role')}] {message.get('content')}")
    lines.append(f"calls made:   {record.get('tool_calls')}")
    lines.append(f"ground truth: {record.get('ground_truth')}")
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
        """Indices of the episodes to show: 'all', 'failures' or 'successes'."""
        keep = {
            "all": lambda r: True,
            "failures": lambda r: r.get("reward", 0.0) < 1.0,
            "successes": lambda r: r.get("reward", 0.0) >= 1.0,
        }[which]
        return [i for i, r in enumerate(self.records) if keep(r)]

    def show(self, start: int = 0) -> TrajectoryBrowser:
        """Display the controls (when ipywidgets is installed) and the episode at `start`."""
        if not self.records:
            print("no trajectories to browse")
            return self

        def controls():
            import ipywidgets

            slider = ipywidgets.IntSlider(
                value=start, min=0, max=max(len(self._shown) - 1, 0), description="episode"
            )
            which = ipywidgets.ToggleButtons(options=["all", "failures", "successes"], value="all")

            def on_slide(change: dict[str, Any]) -> None:
                self._handle.update(self._view(change["new"]))

            def on_filter(change: dict[str, Any]) -> None:
                self._shown = self.select(change["new"])
                slider.max = max(len(self._shown) - 1, 0)
                slider.value = 0
                self._handle.update(self._view(0))

            slider.observe(on_slide, names="value")
            which.observe(on_filter, names="value")
            return ipywidgets.VBox([which, slider])

        box = _try_widget(controls)
        if box is not None:
            _display(box)
        self._handle = _display(self._view(min(start, len(self._shown) - 1)), display_id=True)
        return self


# ---------------------------------------------------------------- throughput


def throughput_figure(rows: Sequence[dict[str, Any]]):
    """A bar chart of generated tokens/s per generator (rows from `time_rollouts`)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3))
    ax = fig.add_subplot(1, 1, 1)
    labels = [r["generator"] for r in rows]
    values = [r["tokens_per_s"] for r in rows]
    bars = ax.bar(labels, values, color=[f"C{i}" for i in range(len(rows))])
    ax.bar_label(bars, fmt="%.0f")
    ax.set_ylabel("generated tokens / s")
    ax.set_title(f"rollout throughput ({rows[0]['episodes'] if rows else 0} episodes)", fontsize=10)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- small utilities


def show_token_mask(episode, tokenizer, max_chars: int = 300) -> None:
    """Print an episode's prompt length and its completion as sampled / masked segments."""
    print(f"prompt: {len(episode.prompt_ids)} tokens (not trained on)")
    for segment in token_segments(episode, tokenizer):
        text = segment["text"]
        text = text if len(text) <= max_chars else text[:max_chars] + " ..."
        print(f"--- {segment['source']}: {segment['tokens']} tokens\n{text}")
