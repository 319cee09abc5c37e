"""Talking to the vLLM OpenAI-compatible server that `kit serve` starts.

Generation goes through `/v1/completions` with token-id prompts (`return_token_ids`,
`return_tokens_as_token_ids`), so the rollout gets back exactly the sampled ids and their logprobs,
with no decode/re-encode round trip. Every request has a timeout and a bounded retry: a server that
died is reported within seconds, never waited on forever. `VLLMServerClient.abort` ends a client's
requests from another thread (the batch a stopped job was generating ahead): their connections close,
and vLLM aborts a request whose client has gone.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
import weakref
from collections.abc import Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import requests
from requests.adapters import HTTPAdapter

from kit.generation.base import Completion, OnCompletion, Request, Sampling, sampling_of

log = logging.getLogger(__name__)


POOL_SIZE = 64
"""Connections kept to the server: the generator's concurrency."""


class ServerError(RuntimeError):
    """The vLLM server is unreachable or answered with an error."""


class RequestsAborted(ServerError):
    """The client's requests were aborted (`VLLMServerClient.abort`)."""


class _Tracked:
    """Mixed into urllib3's connection pools: keeps every connection the pool opens in `opened`."""

    opened: weakref.WeakSet

    def _new_conn(self):
        connection = super()._new_conn()
        self.opened.add(connection)
        return connection


class _AbortableAdapter(HTTPAdapter):
    """requests' adapter, knowing every connection it opened, idle or in use, so that another thread can
    shut their sockets down: a request blocked on its answer then fails at once."""

    def __init__(self, **kwargs: Any) -> None:
        self.opened: weakref.WeakSet = weakref.WeakSet()
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        pools = self.poolmanager.pool_classes_by_scheme
        self.poolmanager.pool_classes_by_scheme = {
            scheme: type(f"Tracked{pool.__name__}", (_Tracked, pool), {"opened": self.opened})
            for scheme, pool in pools.items()
        }

    def shut_down_sockets(self) -> None:
        """Shut every open connection's socket (a blocked read returns at once)."""
        for connection in list(self.opened):
            if (sock := getattr(connection, "sock", None)) is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


def _log_tail(log_file: Path | None, lines: int = 25) -> str:
    if log_file is None or not log_file.is_file():
        return ""
    tail = log_file.read_text(errors="replace").splitlines()[-lines:]
    return f"\nLast lines of {log_file}:\n" + "\n".join(tail)


class VLLMServerClient:
    """A small HTTP client for the endpoints the kit uses on a vLLM server."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        request_timeout: float = 300.0,
        log_file: Path | None = None,
        retries: int = 2,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.request_timeout = request_timeout
        self.log_file = log_file
        self.retries = retries
        self.session = requests.Session()
        # One pooled connection per concurrent request (VLLMServerGenerator sends up to 64 at once);
        # requests' default pool of 10 would open and drop a connection for each of the others.
        self._adapter = _AbortableAdapter(pool_connections=1, pool_maxsize=POOL_SIZE)
        self.session.mount("http://", self._adapter)
        self.session.mount("https://", self._adapter)
        self._aborted = threading.Event()
        if api_key:
            self.session.headers["Authorization"] = f"Bearer {api_key}"
        self._card: dict[str, Any] | None = None
        # Extra sampling fields for /v1/completions (vLLM's own, e.g. {"ignore_eos": true}).
        self.extra_body = dict(extra_body or {})

    def _request(
        self, method: str, path: str, timeout: float | None = None, **kwargs: Any
    ) -> requests.Response:
        url = f"{self.base_url}{path}"
        retries = self.retries
        for attempt in range(retries + 1):
            if self._aborted.is_set():
                raise RequestsAborted(f"the requests to {self.base_url} were aborted ({path} not sent)")
            try:
                response = self.session.request(
                    method, url, timeout=(5, timeout or self.request_timeout), **kwargs
                )
            except (requests.ConnectionError, requests.Timeout) as err:
                if self._aborted.is_set():
                    raise RequestsAborted(f"the request to {self.base_url}{path} was aborted") from err
                if attempt == retries:
                    raise ServerError(
                        f"vLLM server at {self.base_url} is unreachable ({type(err).__name__} on {path} "
                        f"after {retries + 1} attempt(s)). Is `kit serve` still running?"
                        f"{_log_tail(self.log_file)}"
                    ) from err
                time.sleep(2 * (attempt + 1))
                continue
            if response.status_code in (500, 502, 503) and attempt < retries:
                time.sleep(2 * (attempt + 1))
                continue
            if response.status_code == 401:
                raise ServerError(
                    f"vLLM server at {self.base_url} refused the API key (401): set generation.api_key."
                )
            if response.status_code != 200:
                raise ServerError(
                    f"vLLM server at {self.base_url} answered {response.status_code} on {path}: "
                    f"{response.text[:500]}{_log_tail(self.log_file)}"
                )
            return response
        raise AssertionError("unreachable")

    def abort(self) -> None:
        """Fail this client's requests, those in flight and any later one, from any thread: their
        connections are shut, so vLLM aborts what they asked for. A client stays aborted."""
        self._aborted.set()
        self._adapter.shut_down_sockets()

    def is_healthy(self) -> bool:
        try:
            return self.session.get(f"{self.base_url}/health", timeout=5).status_code == 200
        except requests.RequestException:
            return False

    def wait_until_healthy(self, timeout: float, is_alive=lambda: True) -> None:
        """Poll /health until it answers 200; fail after `timeout` s, or as soon as `is_alive()` is False."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.is_healthy():
                return
            if not is_alive():
                raise ServerError(
                    f"vLLM server exited before it became healthy.{_log_tail(self.log_file, 40)}"
                )
            time.sleep(1.0)
        raise ServerError(
            f"vLLM server at {self.base_url} was not healthy after {timeout:.0f} s."
            f"{_log_tail(self.log_file, 40)}"
        )

    def _model_card(self) -> dict[str, Any]:
        if self._card is None:
            self._card = self._request("GET", "/v1/models", timeout=30).json()["data"][0]
        return self._card

    @property
    def model(self) -> str:
        """The served model's name, as requests must give it."""
        return self._model_card()["id"]

    @property
    def max_model_len(self) -> int | None:
        """The server's context length (prompt + completion), as vLLM reports it."""
        return self._model_card().get("max_model_len")

    def complete(self, prompt_ids: list[int], max_tokens: int, sampling: Sampling) -> Completion:
        """Sample one continuation of a token-id prompt."""
        payload = {
            "model": self.model,
            "prompt": prompt_ids,
            "max_tokens": max_tokens,
            "temperature": max(sampling.temperature, 0.0),
            "top_p": sampling.top_p,
            "top_k": sampling.top_k if sampling.top_k > 0 else -1,
            "repetition_penalty": sampling.repetition_penalty,
            "ignore_eos": sampling.ignore_eos,
            "logprobs": 0,
            "return_token_ids": True,
            "return_tokens_as_token_ids": True,
            **self.extra_body,
        }
        if (seed := sampling.request_seed(prompt_ids)) is not None:
            payload["seed"] = seed
        choice = self._request("POST", "/v1/completions", json=payload).json()["choices"][0]
        token_ids = list(choice["token_ids"])
        logprobs = [float("nan") if lp is None else lp for lp in choice["logprobs"]["token_logprobs"]]
        return Completion(
            token_ids=token_ids, logprobs=logprobs, finished=choice.get("finish_reason") == "stop"
        )

    def collective_rpc(self, method: str, kwargs: dict[str, Any]) -> list[Any]:
        """Call `method` on every vLLM worker (dev-mode endpoint); one result per worker."""
        response = self._request("POST", "/collective_rpc", json={"method": method, "kwargs": kwargs})
        return response.json().get("results", []) if response.content else []

    def reload_weights(self, weights_dir: str | Path) -> None:
        """Make the server load new weights from a model or safetensors folder it can read (through the
        kit's worker extension, which every kit server loads: kit.generation.ipc_receiver)."""
        self.collective_rpc("kit_reload_weights", {"weights_path": str(weights_dir)})
        self.reset_prefix_cache()

    def reset_prefix_cache(self, attempts: int = 5) -> None:
        """Drop cached KV blocks computed with old weights. vLLM (>= 0.26) answers `{"success": false}`
        while blocks are still in use; that is retried, then reported."""
        for attempt in range(attempts):
            response = self._request("POST", "/reset_prefix_cache", timeout=60)
            answer = response.json() if response.content else {}
            if answer.get("success", True):
                return
            time.sleep(0.2 * (attempt + 1))
        raise ServerError(
            f"vLLM server at {self.base_url} refused to reset its prefix cache {attempts} times "
            '(`{"success": false}`: blocks still in use). Rollouts would reuse KV computed with old '
            "weights, so training stops here."
        )


def connect_to_server(generation, log_file: Path | None = None) -> VLLMServerClient:
    """A client for the server `generation` (a recipe's `generation` section) names, once it is healthy.

    A server that is not up yet is waited for, with a message saying so, for `server_timeout` seconds at
    most; then the error says how to start one.
    """
    client = VLLMServerClient(
        generation.server_url, generation.api_key, generation.request_timeout, log_file=log_file
    )
    if client.is_healthy():
        return client
    how = (
        "Start one with `kit serve --config <your recipe>` (same overrides) in another terminal, point "
        "generation.server_url at a running one, or set generation.start_server=true to let the job "
        "start it."
    )
    log.warning(
        "No vLLM server answers at %s yet; waiting up to %.0f s (generation.server_timeout). %s",
        client.base_url,
        generation.server_timeout,
        how,
    )
    try:
        client.wait_until_healthy(generation.server_timeout)
    except ServerError as err:
        raise ServerError(f"{err}\n{how}") from err
    return client


class VLLMServerGenerator:
    """Generates through a vLLM server, one request per prompt, sent concurrently (the server batches
    them continuously)."""

    def __init__(self, client: VLLMServerClient, concurrency: int = POOL_SIZE) -> None:
        self.client = client
        self.concurrency = concurrency

    @property
    def max_model_len(self) -> int | None:
        return self.client.max_model_len

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], sampling: Sampling
    ) -> list[Completion]:
        completions: dict[int, Completion] = {}

        def keep(key: int, completion: Completion) -> None:
            completions[key] = completion

        requests = dict(enumerate(zip(prompts, max_tokens, strict=True)))
        self.generate_continuously(requests, sampling, keep)
        return [completions[key] for key in range(len(prompts))]

    def generate_continuously(
        self,
        first: dict[int, Request],
        sampling: Sampling | Mapping[int, Sampling],
        on_completion: OnCompletion,
    ) -> None:
        """Send a conversation's next request as soon as its last one is answered (`on_completion` runs
        in this thread, so sandboxes and the tokenizer are never shared across threads). `sampling` may
        be given per conversation, by key."""
        workers = max(1, min(self.concurrency, len(first)))
        with ThreadPoolExecutor(max_workers=workers) as pool:

            def send(key: int, request: Request) -> Future[Completion]:
                prompt, budget = request
                return pool.submit(self.client.complete, prompt, budget, sampling_of(sampling, key))

            pending: dict[Future[Completion], int] = {
                send(key, request): key for key, request in first.items()
            }
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        key = pending.pop(future)
                        if (request := on_completion(key, future.result())) is not None:
                            pending[send(key, request)] = key
            except BaseException:
                for future in pending:
                    future.cancel()
                raise
