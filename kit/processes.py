"""Child processes the kit starts in their own process group (vLLM servers, node roles, rehearsal nodes)."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def stop_process_group(process: subprocess.Popen | None, grace: float) -> None:
    """SIGTERM the process's group, SIGKILL it if still alive after `grace` seconds; no-op once it exited.

    The process must have been started with `start_new_session=True` (its pid is its group id), so that
    vLLM's engine workers and accelerate's ranks stop with it.
    """
    if process is None or process.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def start_in_own_group(command: list[str], **popen_kwargs) -> subprocess.Popen:
    """Popen ``command`` as the leader of a new session, so that `stop_process_group` stops it with all its
    children, and with the parent-death signal set (`stop_with_parent`), so that it stops with this
    thread, even when the process is SIGKILLed."""
    return subprocess.Popen(command, start_new_session=True, preexec_fn=stop_with_parent(), **popen_kwargs)


def guarded(command: list[str], grace: float) -> list[str]:
    """``command`` run by `kit.process_guard`, which takes the command's whole process group down,
    with a SIGKILL `grace` seconds after forwarding SIGTERM, when it gets SIGTERM itself. Start it with
    `start_in_own_group`."""
    return [sys.executable, "-m", "kit.process_guard", "--grace", str(grace), "--", *command]


def interrupt_on_sigterm() -> None:
    """Make SIGTERM raise KeyboardInterrupt, so that `finally:` blocks stop the children as Ctrl-C does."""

    def _interrupt(signum, frame) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _interrupt)


def stop_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` for Popen that makes the child get SIGTERM when the thread starting it ends, as it
    does when this process dies, SIGKILL included (Linux; None elsewhere). A child in its own session
    would outlive a killed parent otherwise."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # loaded in the parent: between fork and exec, only prctl

    def set_parent_death_signal() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)

    return set_parent_death_signal
