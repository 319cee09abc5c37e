"""NeMo-Gym's own servers as the kit's environment: its resources servers (tools, sessions, verify), its
agents and its launcher, run from NeMo-Gym's own environment (`make gym-venv`).

- `servers`: start NeMo-Gym's servers with its launcher (`gym env start`) on loopback, or use running ones.
- `session`: one episode's session on a resources server: `seed_session`, tool calls, `verify`.
- `rows`: NeMo-Gym rows, read and checked once, into the kit's tasks.
- `environment`: `env.name: nemo_gym`, the kit's loop acting on a NeMo-Gym resources server.
"""
