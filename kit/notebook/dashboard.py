"""A live training dashboard for notebooks: a `TrainerCallback` that redraws reward, success rate,
tool calls, parse failures and tool errors on every log line (static output under papermill)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from kit.notebook.display import display, figure_png, try_widget
from kit.run_folder import RunFolder

# name in the log line -> panel title; the dashboard draws the ones present.
DASHBOARD_PANELS: dict[str, str] = {
    "reward": "mean reward",
    "episode/success_rate": "success rate",
    "episode/tool_calls": "tool calls / episode",
    "episode/parse_failure_rate": "parse failures / turn",
    "episode/tool_error_rate": "tool errors / call",
}


class TrainingDashboard(TrainerCallback):
    """Live GRPO dashboard: reward, success rate, tool calls, parse failures and tool errors per step.

    A `transformers.TrainerCallback`: `trainer.add_callback(dashboard)` and it redraws on every log
    line during `trainer.train()`. Also draws finished runs: `TrainingDashboard.from_run(RunFolder(...))`.
    The figure is a display handle updated in place (JupyterLab shows it live; papermill keeps the last
    frame); an ipywidgets progress bar is added when ipywidgets is installed.
    """

    replaces_progress_display = True  # KitGRPOTrainer drops transformers' notebook progress bar for it

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
        from matplotlib.ticker import MaxNLocator

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
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
            if self.max_steps:
                ax.set_xlim(0.5, self.max_steps + 0.5)
            if name != "episode/tool_calls":
                ax.set_ylim(-0.05, 1.05)
            else:  # a count from 0, not a zoom on a flat line (0.95-1.05 when every episode makes 1 call)
                peak = max((r[name] for r in self.records if name in r), default=0.0)
                ax.set_ylim(-0.05, max(1.0, peak * 1.15))
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

        self._progress = try_widget(progress)
        if self._progress is not None:
            display(self._progress)
        self._handle = display(Image(data=figure_png(self.figure()), format="png"), display_id=True)
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
        self._handle.update(Image(data=figure_png(self.figure()), format="png"))
