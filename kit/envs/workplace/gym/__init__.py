"""NeMo-Gym's workplace tools, written here: the default behaviour of the kit's workplace sandbox.

NeMo-Gym's ``workplace_assistant`` server keeps its databases in pandas DataFrames and answers every
tool call with the HTTP body ``{"output": ...}``, which its agent shows the model as the tool result.
This package gives the model the same text, byte for byte: the same validation and messages, the same
state changes (hence the same reward), the same errors, down to the pandas and Python exception texts
the server passes on, and the same JSON. ``tests/test_workplace_vs_nemo_gym.py`` checks it against
NeMo-Gym's own server.

Modules: ``frame`` (a table as such a DataFrame: row order, index labels, column dtypes, with pandas'
own matching and comparisons), ``state`` (the databases of a session and the outcome comparison of
NeMo-Gym's verify), one module per toolkit, ``common`` (what the toolkits share), ``route`` (the agent's
and server's handling of a call), ``json_text`` (the body's JSON) and ``verify`` (the reward's replay).
"""

from kit.envs.workplace.gym.route import TOOLS, answer
from kit.envs.workplace.gym.state import GymState
from kit.envs.workplace.gym.verify import replay

__all__ = ["TOOLS", "GymState", "answer", "replay"]
