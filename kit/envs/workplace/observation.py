"""``Observation``: what a tool call shows the model, and whether the tool refused the call."""

from __future__ import annotations


class Observation(str):
    """The text of a tool's answer (a ``str``), with ``refused`` set when the tool did not do what it was
    asked (bad or missing arguments, a record not found, an unknown tool, an error); a refused call
    leaves the state unchanged."""

    refused: bool

    def __new__(cls, text: str, refused: bool) -> Observation:
        observation = super().__new__(cls, text)
        observation.refused = refused
        return observation

    def __reduce__(self) -> tuple:
        return Observation, (str(self), self.refused)
