"""Child processes the kit starts in their own process group (vLLM servers, node roles, rehearsal nodes)."""

from __future__ import annotations

import os
import signal
import subprocess


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


def interrupt_on_sigterm() -> None:
    """Make SIGTERM raise KeyboardInterrupt, so that `finally:` blocks stop the children as Ctrl-C does."""

    def _interrupt(signum, frame) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _interrupt)
