"""Talking to the vLLM OpenAI-compatible server that `kit serve` starts.

Generation goes through `/v1/completions` with token-id prompts (`return_token_ids`,
`return_tokens_as_token_ids`), so the rollout gets back exactly the sampled ids and their logprobs,
with no decode/re-encode round trip. Every request has a timeout and a bounded retry: a server that
died is reported within seconds, never waited on forever.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

from kit.generation.base import Completion, Sampling

log = logging.getLogger(__name__)


class ServerError(RuntimeError):
    """The vLLM server is unreachable or answered with an error."""


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
        self.request_timeout = request_timeout
        self.log_file = log_file
        self.retries = retries
        self.session = requests.Session()
        if api_key:
            self.session.headers["Authorization"] = f"Bearer {api_key}"
        self._model: str | None = None
        # Extra sampling fields for /v1/completions (vLLM's own, e.g. {"ignore_eos": true}).
        self.extra_body = dict(extra_body or {})

    def _request(
        self, method: str, path: str, timeout: float | None = None, **kwargs: Any
    ) -> requests.Response:
        url = f"{self.base_url}{path}"
        for attempt in range(self.retries + 1):
            try:
                response = self.session.request(
                    method, url, timeout=(5, timeout or self.request_timeout), **kwargs
                )
            except (requests.ConnectionError, requests.Timeout) as err:
                if attempt == self.retries:
                    raise ServerError(
                        f"vLLM server at {self.base_url} is unreachable ({type(err).__name__} on {path} "
                        f"after {self.retries + 1} attempts). Is `kit serve` still running?"
                        f"{_log_tail(self.log_file)}"
                    ) from err
                time.sleep(2 * (attempt + 1))
                continue
            if response.status_code in (500, 502, 503) and attempt < self.retries:
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

    @property
    def model(self) -> str:
        if self._model is None:
            self._model = self._request("GET", "/v1/models", timeout=30).json()["data"][0]["id"]
        return self._model

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
            "logprobs": 0,
            "return_token_ids": True,
            "return_tokens_as_token_ids": True,
            **self.extra_body,
        }
        choice = self._request("POST", "/v1/completions", json=payload).json()["choices"][0]
        token_ids = list(choice["token_ids"])
        logprobs = [float("nan") if lp is None else lp for lp in choice["logprobs"]["token_logprobs"]]
        return Completion(
            token_ids=token_ids, logprobs=logprobs, finished=choice.get("finish_reason") == "stop"
        )

    def reload_weights(self, weights_dir: Path) -> None:
        """Make the server load new weights from a safetensors folder it can read (dev-mode endpoint)."""
        self._request(
            "POST",
            "/collective_rpc",
            json={"method": "reload_weights", "kwargs": {"weights_path": str(weights_dir)}},
        )
        self.reset_prefix_cache()

    def reset_prefix_cache(self) -> None:
        self._request("POST", "/reset_prefix_cache", timeout=60)


class VLLMServerGenerator:
    """Generates through a vLLM server, one request per prompt, sent concurrently."""

    def __init__(self, client: VLLMServerClient, concurrency: int = 64) -> None:
        self.client = client
        self.concurrency = concurrency

    def generate(
        self, prompts: list[list[int]], max_tokens: list[int], sampling: Sampling
    ) -> list[Completion]:
        workers = max(1, min(self.concurrency, len(prompts)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [
                pool.submit(self.client.complete, p, m, sampling)
                for p, m in zip(prompts, max_tokens, strict=True)
            ]
            return [f.result() for f in futures]
