"""Local ports for the servers the kit starts (notebooks, benchmarks, tests, the SkyPilot rehearsal)."""

from __future__ import annotations

import socket


def free_port(span: int = 1) -> int:
    """A port p of 127.0.0.1 such that p..p+span-1 are free now (a server and its control endpoint
    take two)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port + span > 65535:
            continue
        try:
            for offset in range(1, span):
                with socket.socket() as other:
                    other.bind(("127.0.0.1", port + offset))
        except OSError:
            continue
        return port
    raise RuntimeError("no free local port found")


def reachable_host(host: str) -> str:
    """The address a client on this machine dials for a server bound to `host` (0.0.0.0 and :: are
    bind-all addresses, not destinations)."""
    return "127.0.0.1" if host in ("0.0.0.0", "::") else host


def local_server_url(host: str, port: int) -> str:
    """The URL of a server this machine starts on host:port."""
    return f"http://{reachable_host(host)}:{port}"


def port_in_use(host: str, port: int) -> bool:
    """Whether something accepts connections at host:port now."""
    host = reachable_host(host)
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError:
        return False
    return True
