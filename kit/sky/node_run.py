"""Running one node's plan (`kit.sky.node_entry.plan_node`): start the server and the trainer in
their own process groups, wait for the server's health, stop everything on the way out, and on a
multi-node task tell rank 0 when training is done.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kit.generation.vllm_server import ServerError, VLLMServerClient
from kit.processes import interrupt_on_sigterm, start_in_own_group, stop_process_group
from kit.sky.node_entry import Cluster, Command, EntrySettings, NodePlan, plan_node


def _say(message: str) -> None:
    print(f"[kit node-entry] {message}", flush=True)


def _start(command: Command) -> subprocess.Popen:
    _say(f"{command.role}: {command.shell()}")
    return start_in_own_group(command.argv, env={**os.environ, **command.env})


def _notify_done(url: str, code: int) -> None:
    body = json.dumps({"rc": code}).encode()
    for attempt in range(5):
        try:
            request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10):
                _say(f"told the server node that training finished (exit {code})")
                return
        except (urllib.error.URLError, OSError) as error:
            _say(f"could not reach {url} ({error}); retry {attempt + 1}/5")
            time.sleep(3)


class _DoneListener:
    """A tiny HTTP endpoint on rank 0: the trainers' leader POSTs {"rc": N} to /done when training ends."""

    def __init__(self, host: str, port: int) -> None:
        self.event = threading.Event()
        self.code = 0
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    listener.code = int(json.loads(self.rfile.read(length) or b"{}").get("rc", 0))
                except (ValueError, AttributeError):
                    listener.code = 1
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok\n")
                listener.event.set()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def run_plan(plan: NodePlan, health_timeout: float) -> int:
    """Run the node's plan; every child runs in its own process group and is stopped on the way out."""
    if threading.current_thread() is threading.main_thread():
        interrupt_on_sigterm()  # SkyPilot cancels a job with SIGTERM: stop the children
    server = trainer = None
    listener = None
    try:
        if plan.control_port is not None:
            listener = _DoneListener(plan.control_host, plan.control_port)
        if plan.server:
            server = _start(plan.server)
        for url in plan.wait_servers:
            _say(f"waiting for the vLLM server: {url}/health")
            VLLMServerClient(url).wait_until_healthy(
                health_timeout, is_alive=lambda: server is None or server.poll() is None
            )
            _say(f"vLLM server is up: {url}")
        if plan.trainer is None:  # a serving node of a multi-node task: serve until the trainers are done
            assert server is not None and listener is not None
            while not listener.event.wait(timeout=5):
                if server.poll() is not None:
                    _say(f"the vLLM server exited with code {server.returncode} before training finished")
                    return 1
            _say(f"the trainers finished (exit {listener.code}); stopping the vLLM server")
            return 0 if listener.code == 0 else 1
        trainer = _start(plan.trainer)
        code = trainer.wait()
        _say(f"trainer exited with code {code}")
        for url in plan.notify_urls:
            _notify_done(url, code)
        return code
    except ServerError as error:
        _say(f"error: {error}")
        for url in plan.notify_urls:
            _notify_done(url, 1)
        return 1
    except KeyboardInterrupt:
        _say("interrupted; stopping")
        return 130
    finally:
        stop_process_group(trainer, grace=30.0)
        stop_process_group(server, grace=30.0)
        if listener is not None:
            listener.close()


def node_entry_cli(args) -> int:
    """`kit sky node-entry`: plan this node's role from the environment, then print or run it."""
    env = dict(os.environ)
    if args.cpu:
        env["KIT_SKY_CPU"] = "1"
    settings = EntrySettings.from_env(
        env,
        recipe=args.config,
        overrides=args.overrides,
        server_gpus=args.server_gpus,
        port=args.port,
        accelerate_config=args.accelerate_config,
    )
    plan = plan_node(Cluster.from_env(env), settings, env)
    if args.print_only:
        print("\n".join(plan.lines()))
        return 0
    for line in plan.summary:
        _say(line)
    return run_plan(plan, settings.health_timeout)
