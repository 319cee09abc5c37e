"""The progress display of evaluations and `kit user check`: what it says, that a terminal gets it as a bar
with tqdm's times, and that it stays silent where stderr is no terminal (a log file, a test's capture)."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import sys
import termios

from kit.episode import Episode
from kit.progress import Progress


def test_progress_says_items_done_success_so_far_and_excluded_apart(capsys):
    with Progress(4, "episode", desc="eval") as progress:
        assert progress.text == "0/4 episodes"
        progress.scored(1.0)
        progress.scored(0.0)
        assert progress.text == "2/4 episodes, success 1/2 (50.0%)"
        progress.episode(Episode(prompt_ids=[], user_breaks=["no_reply"], failure="no reply"))
        assert progress.text == "3/4 episodes, success 1/2 (50.0%), 1 user-excluded"
    assert capsys.readouterr().err == ""  # stderr is no terminal here: no bar in the log


def test_rows_without_outcomes_show_their_count_only():
    with Progress(2, "row") as progress:
        progress.done()
        assert progress.text == "1/2 rows"


def test_a_terminal_gets_the_bar_with_success_and_time_left(monkeypatch):
    reader, writer = os.openpty()
    fcntl.ioctl(writer, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 160, 0, 0))  # a new pty is 0 wide
    with open(writer, "w") as terminal:
        monkeypatch.setattr(sys, "stderr", terminal)
        with Progress(4, "episode", desc="eval") as progress:
            progress.scored(1.0)
            progress.scored(0.5)
        drawn = os.read(reader, 4096).decode()
    os.close(reader)
    assert "eval" in drawn and "2/4" in drawn and "success 1/2 (50.0%)" in drawn
    assert re.search(r"\[\d\d:\d\d<\d\d:\d\d", drawn)  # tqdm's elapsed<remaining
