"""Small displays the tutorial notebooks call (tables, files, tasks, figures, token masks); the live
dashboard is in `kit.notebook.dashboard`, the trajectory browser in `kit.notebook.trajectory_browser`.

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

import importlib.metadata
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kit.run_folder import (
    episode_records as episode_records,  # re-exported: the notebooks import it from here
)
from kit.train.analysis import token_segments


def display(obj: Any, **kwargs: Any) -> Any:
    """IPython's display (imported late: the kit itself does not need IPython)."""
    from IPython.display import display as ipython_display

    return ipython_display(obj, **kwargs)


def figure_png(fig) -> bytes:
    """PNG bytes of a matplotlib Figure through the Agg canvas (independent of the active backend)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()


def show_figure(fig) -> Any:
    """Display a matplotlib Figure as a PNG image; returns the display handle."""
    from IPython.display import Image

    return display(Image(data=figure_png(fig), format="png"), display_id=True)


def try_widget(factory) -> Any:
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
        display(frame.style.set_caption(caption) if len(frame) else frame)
    else:
        display(frame)


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
    display(Markdown(f"**{path}**\n\n```{lang}\n{text}\n```"))


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


# ---------------------------------------------------------------- throughput


TIER_ORDER = ("easy", "medium", "hard")


def success_bars(reports: dict[str, dict[str, Any]]):
    """Side-by-side success bars per category and per tier (tiers easy -> hard), one colour per report,
    each bar labelled with its rate so a 0 % bar still shows."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.4))
    labels = list(reports)
    width = 0.8 / len(labels)
    for index, group in enumerate(("by_category", "by_tier")):
        ax = fig.add_subplot(1, 2, index + 1)
        keys = sorted(
            reports[labels[0]][group],
            key=lambda k: (k not in TIER_ORDER, TIER_ORDER.index(k) if k in TIER_ORDER else 0, k),
        )
        for shift, label in enumerate(labels):
            values = [reports[label][group].get(k, {}).get("success_rate", 0.0) for k in keys]
            xs = [i + (shift - (len(labels) - 1) / 2) * width for i in range(len(keys))]
            ax.bar(xs, values, width, label=label, edgecolor="black", linewidth=0.5)
            for x, value in zip(xs, values, strict=True):
                ax.text(x, value + 0.02, f"{value:.0%}", ha="center", fontsize=7)
        ax.set_xticks(
            range(len(keys)), [k.replace("workplace_assistant_", "") for k in keys], rotation=30, fontsize=8
        )
        ax.set_ylim(0, 1.1)
        ax.set_ylabel("success rate")
        ax.set_title(group.replace("by_", "by "), fontsize=10)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


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
