"""The kit's workplace sandbox against NeMo-Gym's own workplace server (no mocks): the same observation
text for every call, byte for byte, and the same reward as the server's verify.

Compared, on NeMo-Gym's databases: the ground truth of every task in data/workplace (many do not apply to
these databases, so they are refused or act on other records, on both sides alike), NeMo-Gym's 5
reference rows, the hand-written edge sequences, and 2,000 fuzzed call sequences. To stay quick, the
fuzzed and task sequences share a server session ten at a time (later ones start where earlier ones
left the databases; `bench/workplace_differential.py` gives each its own), and rewards are compared for
a sample. The harness: kit/testing/fuzz/workplace_differential.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kit.envs.nemo_gym.gym_python import gym_site_packages
from kit.envs.nemo_gym.servers import NeMoGymServers, resources_server
from kit.envs.workplace.sandbox import WorkplaceSandbox
from kit.envs.workplace.state import CSV_FILES, load_csv_dir
from kit.testing.fuzz.workplace_calls import fuzz_sequences
from kit.testing.fuzz.workplace_differential import (
    NeMoGymClient,
    Tally,
    compare,
    kit_reward,
    row_sequences,
)
from kit.testing.fuzz.workplace_edges import EDGE_REWARDS, EDGE_SEQUENCES

DATA = Path(__file__).resolve().parents[1] / "data" / "workplace"
FUZZED_SEQUENCES = 2000
PER_SESSION = 10
SERVERS = 2


@pytest.fixture(scope="module")
def nemo_gym(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[NeMoGymClient]]:
    # Instances of the server (one process each: a server runs one call at a time) share the work.
    specs = [resources_server("workplace_assistant", f"workplace_assistant_{i}") for i in range(SERVERS)]
    with NeMoGymServers(specs, tmp_path_factory.mktemp("nemo_gym")) as servers:
        clients = [NeMoGymClient(servers.url(spec.instance)) for spec in specs]
        yield clients
        for client in clients:
            client.close()


@pytest.fixture(scope="module")
def base(reference_dir: Path) -> WorkplaceSandbox:
    return WorkplaceSandbox.from_csv_dir(reference_dir / "databases")


def _same(tally: Tally) -> None:
    first = "\n".join(d.describe() for d in tally.differences)
    calls, rewards = tally.mismatched_calls, tally.mismatched_rewards
    assert calls == rewards == 0, f"{calls} call(s) and {rewards} reward(s) differ; first:\n{first}"


def test_the_server_reads_the_databases_the_kit_reads(reference_dir: Path) -> None:
    shipped = gym_site_packages() / "resources_servers" / "workplace_assistant" / "csv_data"
    for name in CSV_FILES.values():
        folder = "raw" if name == "email_addresses.csv" else "processed"
        assert (shipped / folder / name).read_bytes() == (reference_dir / "databases" / name).read_bytes(), (
            name
        )


def test_nemo_gym_reference_rows(
    nemo_gym: list[NeMoGymClient], base: WorkplaceSandbox, reference_dir: Path
) -> None:
    sequences = row_sequences([reference_dir / "example_tasks.jsonl"])
    tally = compare(Tally(), "reference", sequences, base, nemo_gym, reward_every=1)
    assert tally.sequences["reference"] == 5 and tally.rewards["reference"] == 10 and tally.ones["reference"]
    _same(tally)


def test_every_ground_truth_of_the_kit_tasks(nemo_gym: list[NeMoGymClient], base: WorkplaceSandbox) -> None:
    sequences = row_sequences([DATA / "train.jsonl", DATA / "validation.jsonl"])
    tally = compare(Tally(), "tasks", sequences, base, nemo_gym, reward_every=50, per_session=PER_SESSION)
    assert tally.sequences["tasks"] == len(sequences) >= 1300
    _same(tally)


def test_edge_sequences_and_rewards(nemo_gym: list[NeMoGymClient], base: WorkplaceSandbox) -> None:
    tally = compare(Tally(), "edges", EDGE_SEQUENCES, base, nemo_gym)
    for note, predicted, truth in EDGE_REWARDS:
        mine, theirs = kit_reward(base, predicted, truth), nemo_gym[0].reward(predicted, truth)
        tally.reward("edge rewards", 0, mine, theirs, note, [name for name, _ in (*predicted, *truth)])
    _same(tally)


def test_fuzzed_sequences(nemo_gym: list[NeMoGymClient], base: WorkplaceSandbox, reference_dir: Path) -> None:
    state = load_csv_dir(reference_dir / "databases")
    sequences = fuzz_sequences(FUZZED_SEQUENCES, seed=0, state=state, length=(1, 5))
    tally = compare(Tally(), "fuzz", sequences, base, nemo_gym, reward_every=40, per_session=PER_SESSION)
    assert tally.sequences["fuzz"] == FUZZED_SEQUENCES and sum(tally.calls.values()) >= 5000
    assert len(tally.calls) >= 27 + 5  # every tool, and unknown ones
    _same(tally)
