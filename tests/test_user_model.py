"""`kit user train`: the talks a small user model learns from, and a tiny training run whose folder the
check can drive.

The data builder turns the TRAIN split's dialogue rows into the user model's side of a talk; its replies
carry the asked detail, stay in the user's role, say "I don't know" for what the intent never says, end
after a completion and not before anything was asked; the policy's phrasings are not the check's. The
tiny run trains the 4-layer test model for two steps and reads its folder back the way a served user
model is used: its own chat template, the system prompt, then the policy's texts as "user" messages.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.config.tree import ConfigError, load_config
from kit.episode import Task
from kit.rollout import user_check
from kit.rollout.user_model_data import (
    DONE,
    STOP,
    UNKNOWABLE,
    asked_answer,
    reply_targets,
    row_dialogues,
    summary,
    user_model_dialogues,
)
from kit.rollout.user_rules import (
    has_tool_call,
    held_back,
    invented,
    mentions,
    says_unknown,
    speaks_as_assistant,
)
from kit.rollout.user_simulators import UserReply, judge_reply

TRAIN = "data/workplace_dialogue/train.jsonl"
VALIDATION = "data/workplace_dialogue/validation.jsonl"


def _rows(path: str) -> list[Task]:
    from kit.envs.environment import make_environment
    from kit.envs.workplace.task_sets import ensure_task_set

    ensure_task_set(path)
    cfg = load_config("user_model_cpu")
    return make_environment(cfg.env, Path("/tmp/kit-test-user-model")).load_tasks(path)


@pytest.fixture(scope="module")
def train_rows() -> list[Task]:
    return [t for t in _rows(TRAIN) if t.is_dialogue][:120]


def test_replies_carry_the_asked_detail_in_role(train_rows):
    talks = user_model_dialogues(train_rows)
    assert len(talks) == 2 * len(train_rows)
    for task, (talk, early) in zip(train_rows, zip(talks[::2], talks[1::2], strict=True), strict=True):
        assert talk[0] == early[0] == {"role": "system", "content": task.user["user_model_system_prompt"]}
        first = talk[2]["content"]
        missing = held_back(task)
        carried = [mentions(first, d) for d in missing]
        assert any(carried) if missing[0].kind == "word" else all(carried), (first, missing)
        assert talk[-1]["content"] == STOP and talk[-2]["content"] in DONE
        assert early[1]["content"] in DONE and asked_answer(task) in early[2]["content"]
        for messages, reply in reply_targets(talk) + reply_targets(early):
            if reply == STOP:
                assert judge_reply(reply, STOP) == UserReply(stop=True)
                continue
            assert not speaks_as_assistant(reply) and not has_tool_call(reply), reply
            assert not invented(task, messages[1:], reply), reply
            if messages[-1]["content"] in {q for _, q in UNKNOWABLE}:
                assert says_unknown(reply), reply


def test_policy_phrasings_vary_and_are_not_the_checks(train_rows):
    talks = user_model_dialogues(train_rows)
    policy = {m["content"] for talk in talks for m in talk if m["role"] == "user"}
    checks = {user_check.UNKNOWN_QUESTION, user_check.EARLY_DONE, user_check.COMPLETION}
    checks |= {user_check.clarifying_question(held_back(t)) for t in train_rows}
    assert not policy & checks
    assert len({m for m in policy if m in DONE}) >= 5
    assert len({t[1]["content"] for t in talks[::2]}) >= 5  # clarifying questions
    counts = summary(talks)
    assert counts["answers"] == counts["ends"] == counts["not_yet"] == len(train_rows)
    assert counts["dont_know"] > len(train_rows) // 2


def test_the_builder_is_deterministic_and_skips_rows_without_a_user(train_rows):
    import random

    assert user_model_dialogues(train_rows[:5], seed=3) == user_model_dialogues(train_rows[:5], seed=3)
    plain = Task(messages=[{"role": "user", "content": "hi"}], tools=[], ground_truth=[], user={}, info={})
    assert row_dialogues(plain, random.Random(0)) == []


def test_training_uses_the_train_split_only(tmp_path):
    from kit.train.user_model import train_user_model

    cfg = load_config("user_model_cpu")
    assert cfg.env.train_file == TRAIN and cfg.env.eval_file == VALIDATION
    same = load_config("user_model_cpu", [f"env.eval_file={TRAIN}"])
    with pytest.raises(ConfigError, match="both"):
        train_user_model(same, tmp_path)


def test_a_tiny_run_writes_a_folder_the_check_can_drive(tiny_model_dir, train_rows, tmp_path, cli):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from kit.train.user_model import tokenize_talk

    out = tmp_path / "user"
    result = cli(
        "user", "train", "--config", "user_model_cpu", "--out", str(out),
        f"model.name_or_path={tiny_model_dir}", "sft.num_examples=8", "sft.args.max_steps=2",
        "sft.args.per_device_train_batch_size=4", "sft.args.max_length=384",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads((out / "user_model_train.json").read_text())
    assert report["steps"] == 2 and report["rows"] == 8 and report["train_file"] == TRAIN
    folder = Path(report["model"])
    assert (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert tokenizer.chat_template  # `served` renders with the folder's own template

    # Loss only on the user's replies: the masked tokens decode to the replies and their end-of-turn.
    talk = user_model_dialogues(train_rows[:1])[0]
    row = tokenize_talk(tokenizer, talk)
    taught = tokenizer.decode([t for t, m in zip(row["input_ids"], row["assistant_masks"], strict=True) if m])
    for _, reply in reply_targets(talk):
        assert reply in taught
    assert talk[1]["content"] not in taught and "You are a workplace user" not in taught

    model = AutoModelForCausalLM.from_pretrained(folder)

    class FolderUser:
        """The folder as `EndpointUser` uses a served model: system prompt, then the dialogue."""

        name = "folder"

        def reply(self, task, dialogue, calls):
            messages = [{"role": "system", "content": task.user["user_model_system_prompt"]}, *dialogue]
            ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                                return_dict=True)  # fmt: skip
            with torch.no_grad():
                out_ids = model.generate(**ids, max_new_tokens=8, do_sample=False)
            new = out_ids[0, ids["input_ids"].shape[1] :]
            return judge_reply(tokenizer.decode(new, skip_special_tokens=True) or "?", STOP)

    report = user_check.check_user(FolderUser(), train_rows[:2], workers=1)
    assert report["rows"] == 2 and report["checks"]["no_reply"]["n"] > 0
