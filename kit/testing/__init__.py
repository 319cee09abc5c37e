"""Helpers for the kit's tests and benchmarks, installed with the kit (as `torch.testing` is with torch).

- `kit.testing.fuzz`: the fuzz generators and checks of the kit's input surfaces, and what a case can find.
  The test suite runs them at CI size and fails on any finding; bench/fuzz.py runs them larger and counts.
- `kit.testing.parser_streams`: a model output replayed through a built-in parser's streaming method.
- `kit.testing.trl_tool_env`: the workplace sandbox as stock TRL's tool environment, the side the
  step-time bench (bench/gpu_step_time.py) compares the kit's rollouts with.

The fuzz modules need hypothesis (the `test` extra); nothing in the kit itself imports this package.
"""
