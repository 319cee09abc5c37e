"""A progress bar for long work that is made of items (episodes, rows): items done of the total, success so
far where items are scored, and tqdm's elapsed and remaining time.

`tqdm.auto` draws a text bar in a terminal and a widget in JupyterLab. The bar goes to stderr, so a
command's stdout (`kit eval`'s JSON report) stays clean, and it stays off where stderr is neither a
terminal nor a notebook (a log file), and in trainer processes other than the first.
"""

from __future__ import annotations

from types import TracebackType

from tqdm.auto import tqdm

from kit.episode import Episode, episode_reward, is_success
from kit.run_folder import process_rank


class Progress:
    """Items done of `total`, drawn as a bar; `scored` counts an item with its reward, `done` one
    without. `text` says the counts in words, without tqdm's times."""

    def __init__(self, total: int, unit: str, desc: str | None = None) -> None:
        self.total = total
        self.unit = unit
        self.finished = 0
        self.rewarded = 0  # items with a reward, the denominator of the success share
        self.successes = 0
        self.excluded = 0  # episodes whose simulated user broke a rule: no reward, counted apart
        # disable=None: off where stderr is no terminal (tqdm.notebook turns None into "on").
        # leave=None: in a terminal the bar stays when it is the only one and is cleared when it ran under
        # another (the trainer's, for the held-out evaluations); a notebook's widget goes when done.
        self.bar = tqdm(
            total=total, unit=unit, desc=desc, disable=None if process_rank() == 0 else True, leave=None
        )

    def done(self) -> None:
        """One more item done, with no outcome to count (a row of `kit user check`)."""
        self.finished += 1
        self.bar.update(1)

    def scored(self, reward: float | None) -> None:
        """One more item done with its reward; None: its simulated user broke a rule (counted apart)."""
        if reward is None:
            self.excluded += 1
        else:
            self.rewarded += 1
            self.successes += is_success(reward)
        self.finished += 1
        self.bar.set_postfix_str(self._outcomes(), refresh=False)
        self.bar.update(1)

    def episode(self, episode: Episode) -> None:
        """One more episode done and scored: a `progress` callback of the rollout loop."""
        self.scored(episode_reward(episode))

    @property
    def text(self) -> str:
        """Items done of the total and, once any was scored, the success so far: "3/10 episodes, success
        2/3 (66.7%), 1 user-excluded"."""
        counts = f"{self.finished}/{self.total} {self.unit}s"
        return f"{counts}, {self._outcomes()}" if self.rewarded or self.excluded else counts

    def _outcomes(self) -> str:
        rate = f" ({self.successes / self.rewarded:.1%})" if self.rewarded else ""
        excluded = f", {self.excluded} user-excluded" if self.excluded else ""
        return f"success {self.successes}/{self.rewarded}{rate}{excluded}"

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
