"""Tasks for NeMo-Gym's `example_session_state_mgmt` resources server (a counter kept per session), in its
row format, made here from a seed: NeMo-Gym ships five such rows (`create_examples.py`), too few to train
and evaluate on.

A row asks for one to three changes to the counter ("add 4, then take away two, then tell me the count");
`initial_count` seeds the session and `expected_count` is what NeMo-Gym's verify compares the session's
counter with, so only the state counts, not the text. The kit's own fields beside NeMo-Gym's: `id`, `tier`
(easy: one change, medium: two, hard: three) and `ground_truth`, the calls that solve the row, which the
SFT warm-up demonstrates.
"""

from __future__ import annotations

import json
import random
from typing import Any

RESOURCES_SERVER = "example_session_state_mgmt"
TIERS = {"easy": 1, "medium": 2, "hard": 3}
SHARES = {"easy": 0.4, "medium": 0.35, "hard": 0.25}

# NeMo-Gym's tool schemas for this server (its create_examples.py), as its rows carry them.
TOOLS = [
    {
        "type": "function",
        "name": "increment_counter",
        "description": "",
        "parameters": {
            "type": "object",
            "properties": {"count": {"type": "integer", "description": ""}},
            "required": ["count"],
            "additionalProperties": False,
        },
        "strict": True,
    },
    {
        "type": "function",
        "name": "get_counter_value",
        "description": "",
        "parameters": {"type": "object", "properties": {}, "required": [], "additionalProperties": False},
        "strict": True,
    },
]

_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
_FIRST = ["add {n}", "add {n} to the counter", "increase the counter by {n}", "bump the counter up by {n}"]
_ADD = ["add {n}", "increase it by {n}", "add {n} more", "bump it up by {n}", "plus {n}"]
_SUBTRACT = ["subtract {n}", "take away {n}", "decrease it by {n}", "lower it by {n}"]
_JOINS = [" then ", ", then ", " and then ", ", after that "]
_ASK = ["", " then get the count", ", then tell me the count", " and report the final count"]


def _number(n: int, rng: random.Random) -> str:
    return _WORDS[n] if n < len(_WORDS) and rng.random() < 0.3 else str(n)


def counter_row(index: int, tier: str, rng: random.Random) -> dict[str, Any]:
    """One task of `tier`; the same generator state always gives the same row."""
    changes, phrases = [], []
    for position in range(TIERS[tier]):
        subtract = position > 0 and rng.random() < 0.35
        n = rng.randint(1, 9 if subtract else 15)
        choices = _SUBTRACT if subtract else _ADD if position else _FIRST
        phrase = rng.choice(choices).format(n=_number(n, rng))
        changes.append(-n if subtract else n)
        phrases.append(phrase)
    ask = rng.choice(_ASK)
    request = phrases[0] + "".join(rng.choice(_JOINS) + p for p in phrases[1:]) + ask
    initial = rng.randint(0, 20)
    calls = [{"name": "increment_counter", "arguments": json.dumps({"count": n})} for n in changes]
    if ask:
        calls.append({"name": "get_counter_value", "arguments": "{}"})
    return {
        "id": index,
        "responses_create_params": {
            "input": [{"role": "user", "content": request[0].upper() + request[1:]}],
            "tools": TOOLS,
        },  # fmt: skip
        "initial_count": initial,
        "expected_count": initial + sum(changes),
        "tier": tier,
        "ground_truth": calls,
    }


def counter_splits(seed: int = 0, train: int = 600, validation: int = 300) -> dict[str, list[dict[str, Any]]]:
    """Train and validation rows, tiers in `SHARES`, no request text in both; deterministic in `seed`."""
    rng = random.Random(seed)
    seen: set[str] = set()
    splits: dict[str, list[dict[str, Any]]] = {}
    for name, total in (("validation", validation), ("train", train)):
        rows: list[dict[str, Any]] = []
        for tier, share in SHARES.items():
            wanted = round(total * share) if tier != "hard" else total - len(rows)
            made = 0
            while made < wanted:
                row = counter_row(len(rows), tier, rng)
                text = row["responses_create_params"]["input"][0]["content"]
                if text not in seen:
                    seen.add(text)
                    rows.append(row)
                    made += 1
        rng.shuffle(rows)
        splits[name] = [{**row, "id": i} for i, row in enumerate(rows)]
    return splits
