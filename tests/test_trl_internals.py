"""The private parts of TRL the kit relies on (kit.train.trl_internals) still look as the kit expects."""

from __future__ import annotations

import trl.trainer.utils as trl_utils

from kit.train import trl_internals


def test_the_installed_trl_has_every_internal_the_kit_uses():
    assert trl_internals.problems() == []


def test_a_changed_internal_is_named(monkeypatch):
    monkeypatch.delattr(trl_utils, "_use_triton")
    assert trl_internals.problems()[0] == "trl.trainer.utils._use_triton is gone"
