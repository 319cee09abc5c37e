"""Looking at processes from tests: which are still alive after a kill, and which a process started."""

from __future__ import annotations

import subprocess
import time


def running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie counts as gone: nothing may reap it in a container)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False


def wait_gone(pids: list[int], seconds: float) -> list[int]:
    """The pids still running after up to `seconds` of waiting for them to go."""
    deadline = time.monotonic() + seconds
    while (left := [pid for pid in pids if running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def descendants(root: int) -> dict[int, str]:
    """The processes below `root` (pid -> command line), found through their parent pids."""
    listing = subprocess.run(["ps", "-eww", "-o", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    children: dict[int, list[tuple[int, str]]] = {}
    for line in listing.splitlines():
        pid, ppid, args = (line.split(None, 2) + [""])[:3]
        children.setdefault(int(ppid), []).append((int(pid), args))
    found, todo = {}, [root]
    while todo:
        for pid, args in children.get(todo.pop(), []):
            found[pid] = args
            todo.append(pid)
    return found
