"""Fuzzing the kit's four input surfaces: generators (hypothesis strategies) and per-case checks.

One module per surface, each with the generators and a check that raises a verdict (`verdicts`) for what a
case finds: `tool_parsers` (the built-in parsers, whole and streamed), `workplace` (the sandbox's tool
calls), `config` (the config loader) and `server` (requests to a running `kit serve`). The test suite
(tests/test_*_fuzz.py) runs them at CI size and fails on any finding; bench/fuzz.py runs them at a larger
size and counts the findings by kind.
"""
