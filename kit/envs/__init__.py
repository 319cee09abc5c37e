"""Environments the kit can train on; each lives in its own subpackage (``kit.envs.workplace``)."""
