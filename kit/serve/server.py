"""`kit serve`: the recipe's vLLM server (`kit.generation.vllm_process`), in the foreground until Ctrl-C."""

from __future__ import annotations

import sys
from pathlib import Path

from kit.config.tree import KitConfig
from kit.generation.vllm_process import VLLMServer
from kit.generation.vllm_server import ServerError
from kit.processes import interrupt_on_sigterm


def serve_cli(cfg: KitConfig, args) -> int:
    """`kit serve`: start, report the URL, and keep serving until Ctrl-C / SIGTERM or the server exits."""
    log_file = Path(args.log_file) if args.log_file else Path(cfg.run.output_dir) / "server.log"
    server = VLLMServer(cfg, log_file, model=args.model, host=args.host, port=args.port, api_key=args.api_key)
    interrupt_on_sigterm()
    try:
        server.start()
        print(
            f"vLLM server ready at {server.url} (OpenAI API at {server.url}/v1; log {log_file})", flush=True
        )
        code = server.process.wait()
        print(f"vLLM server exited with code {code}; see {log_file}", file=sys.stderr)
        return 1
    except ServerError as err:
        print(f"kit serve: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()
