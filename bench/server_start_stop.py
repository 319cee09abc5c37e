"""Seconds to start `kit serve` (until /health answers) and to stop it, for a recipe's server.

    python bench/server_start_stop.py [--config cpu_demo] [--runs 3] [overrides]

Every server test and every job in server mode pays both, so the test suite's length follows them.
Prints each run and the medians.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", default="cpu_demo")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()

    from kit.config.tree import load_config
    from kit.generation.vllm_process import VLLMServer
    from kit.models import resolve_model
    from kit.net import free_port

    starts, stops = [], []
    for run in range(args.runs):
        folder = Path(tempfile.mkdtemp(prefix="server_start_stop_"))
        cfg = load_config(
            args.config, [f"serve.port={free_port()}", f"run.output_dir={folder}", *args.overrides]
        )
        server = VLLMServer(cfg, folder / "server.log", model=resolve_model(cfg.model.name_or_path))
        began = time.perf_counter()
        server.start()
        starts.append(time.perf_counter() - began)
        began = time.perf_counter()
        server.stop()
        stops.append(time.perf_counter() - began)
        print(f"run {run + 1}: start {starts[-1]:.1f} s, stop {stops[-1]:.1f} s", flush=True)
    print(f"median: start {statistics.median(starts):.1f} s, stop {statistics.median(stops):.1f} s")


if __name__ == "__main__":
    main()
