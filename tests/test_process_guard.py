"""`kit.process_guard`: a command the kit starts (a vLLM server) goes with its whole process group
when the job that started it stops or is killed, even when the command ignores SIGTERM, as vLLM does while it
waits for its engine at startup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from process_checks import wait_gone

from kit.processes import guarded, start_in_own_group, stop_process_group

# Ignores SIGTERM, starts a grandchild in its group, prints both pids, then waits: a server stuck in startup.
STUBBORN = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
import os; print(os.getpid(), grandchild.pid, flush=True)
time.sleep(300)
"""

# A job that starts the guarded command as the kit starts its servers, prints the guard's pid, then waits.
JOB = """
import subprocess, sys, time
from kit.processes import guarded, start_in_own_group
guard = start_in_own_group(guarded([sys.executable, "-c", sys.argv[1]], grace=1.0))
print(guard.pid, flush=True)
time.sleep(300)
"""


def test_a_killed_job_takes_a_stubborn_server_and_its_children_down():
    job = subprocess.Popen([sys.executable, "-c", JOB, STUBBORN], stdout=subprocess.PIPE, text=True)
    # The guard and the command inherit the job's stdout: one line has the guard's pid, one the command's two.
    lines = sorted((job.stdout.readline().split(), job.stdout.readline().split()), key=len)
    (guard_pid,), (server_pid, grandchild_pid) = [map(int, line) for line in lines]
    job.kill()  # SIGKILL: the job runs no cleanup
    job.wait()
    left = wait_gone([guard_pid, server_pid, grandchild_pid], seconds=15)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"still alive after the job was killed: {left}"


def test_stop_process_group_stops_a_guarded_stubborn_command_after_the_grace():
    process = start_in_own_group(
        guarded([sys.executable, "-c", STUBBORN], grace=1.0), stdout=subprocess.PIPE, text=True
    )
    server_pid, grandchild_pid = map(int, process.stdout.readline().split())
    started = time.monotonic()
    stop_process_group(process, grace=5.0)
    assert process.returncode == -signal.SIGKILL  # the guard killed its group, itself included
    assert time.monotonic() - started < 5.0  # the guard's own grace (1 s), not stop_process_group's
    assert not wait_gone([server_pid, grandchild_pid], seconds=5)


def test_the_guard_exits_with_its_commands_exit_code():
    done = subprocess.run(guarded([sys.executable, "-c", "raise SystemExit(3)"], grace=1.0), timeout=60)
    assert done.returncode == 3


def test_a_command_that_stops_on_sigterm_is_not_held_for_the_grace():
    """The guard waits for its command in its SIGTERM handler; a command that exits at once frees it at once
    (a vLLM server stops in under a second, where the handler once sat out the whole grace)."""
    process = start_in_own_group(
        guarded([sys.executable, "-c", "import time; print(1, flush=True); time.sleep(300)"], grace=20.0),
        stdout=subprocess.PIPE,
        text=True,
    )
    process.stdout.readline()
    started = time.monotonic()
    stop_process_group(process, grace=30.0)
    assert time.monotonic() - started < 5.0
