"""Does a recipe's server start and answer a tool-calling request? Seconds to start, the answer, the memory.

    python bench/serve_check.py --config nemotron_nano_9b_multinode --model DIR [--out FILE] [overrides]

Starts `kit serve`'s vLLM for the recipe (its tool parser and plugin, its extra arguments) on `--model`
(e.g. a dummy-weight folder from `kit model dummy`), waits for /health, sends one Chat Completions request
with the first training task's messages and tools (`tool_choice: auto`, 64 tokens), and stops the server.
The JSON says how long the start took, the HTTP status, whether the parser's answer was well-formed
(tool calls or text), and vLLM's log lines about weights, KV cache and the parser.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
import urllib.request
from pathlib import Path

from kit.device import machine_description

LOG_LINES = re.compile(r"load format|Model loading took|KV cache|tool.?parser|plugin|Loading weights", re.I)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", default=None)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()

    from kit.config.tree import load_config
    from kit.envs.environment import make_environment
    from kit.generation.vllm_process import VLLMServer
    from kit.net import free_port

    folder = Path(tempfile.mkdtemp(prefix="serve_check_"))
    cfg = load_config(args.config, [f"serve.port={free_port()}", f"run.output_dir={folder}", *args.overrides])
    task = make_environment(cfg.env).load_tasks(cfg.env.train_file)[0]
    result: dict = {"config": args.config, "model": args.model, "overrides": args.overrides,
                    "machine": machine_description(), "tool_parser": cfg.rollout.tool_parser,
                    "tool_parser_plugin": cfg.rollout.tool_parser_plugin}  # fmt: skip
    server = VLLMServer(cfg, folder / "server.log", model=args.model)
    began = time.perf_counter()
    try:
        server.start()
        result["start_seconds"] = round(time.perf_counter() - began, 1)
        with urllib.request.urlopen(f"{server.url}/v1/models", timeout=60) as response:
            served_name = json.loads(response.read())["data"][0]["id"]
        body = {"model": served_name, "messages": task.messages, "tools": task.tools,
                "tool_choice": "auto", "max_tokens": 64}  # fmt: skip
        request = urllib.request.Request(f"{server.url}/v1/chat/completions", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=300) as response:
            result["status"] = response.status
            answer = json.loads(response.read())
        message = answer["choices"][0]["message"]
        result["answer"] = {
            "tool_calls": message.get("tool_calls") or [],
            "content": message.get("content"),
            "finish_reason": answer["choices"][0]["finish_reason"],
            "usage": answer["usage"],
        }
    except Exception as err:  # the point is to report what failed
        result["error"] = f"{type(err).__name__}: {err}"
    finally:
        server.stop()
    log = (folder / "server.log").read_text(errors="replace") if (folder / "server.log").exists() else ""
    result["server_log_lines"] = [line[-300:] for line in log.splitlines() if LOG_LINES.search(line)][:40]
    result["server_log_tail"] = log.splitlines()[-30:] if "error" in result else []
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
