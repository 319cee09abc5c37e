"""Property test: random tool calls never raise, errors come back as strings that say what is wrong and
change nothing.

1,000 examples of 10 calls each: 10,000 calls with real and made-up tool names, plausible and junk values,
missing and extra arguments, JSON strings, malformed JSON and non-object arguments, mixed with valid and
nearly valid calls (from generated tasks) so that failures also hit states that earlier calls changed.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from kit.testing.fuzz.workplace import BASE, BASE_SNAPSHOT, calls, check_calls


@settings(
    max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(calls)
def test_random_calls_never_raise_and_failed_calls_change_nothing(calls: list[tuple[object, object]]) -> None:
    check_calls(calls)


def test_the_fuzzed_base_is_unchanged() -> None:
    assert BASE.snapshot() == BASE_SNAPSHOT
