"""Training dialogues for a small user model: what a user who keeps the rules says, built from dialogue rows.

`kit user train` (kit.train.user_model) fine-tunes a model into a user simulator on these. Each example
is the user model's side of a talk, as `EndpointUser` sends it: the row's `user_model_system_prompt`,
then the policy's texts as "user" messages and the user's own replies as "assistant" ones. Every
assistant message is a reply to learn, in one of four situations:

1. asked what the request left out: the row's clarification (`verifier_metadata.clarification`) when it
   carries every held-back detail and invents none, else the intent itself (`original_user_query`);
2. asked something the intent never says: "I don't know the ...";
3. told the work is done after the talk gave the policy what it needed: `END_CONVERSATION`;
4. told the work is done before anything was asked: not over yet, the missing detail.

The policy's texts are drawn from several phrasings of each situation, none of them the phrasings of
`kit user check` (kit.rollout.user_check), so the check measures whether the model learned the
situation rather than the sentence. Only rows the caller passes are used: give it training rows, never
the validation rows the check runs on.
"""

from __future__ import annotations

import random
from typing import Any

from kit.episode import Task
from kit.rollout.user_rules import held_back, intent, invented, mentions, speaks_as_assistant

STOP = "END_CONVERSATION"

# What a policy calls each kind of held-back detail (other words than the check's).
_KIND_NOUNS = {"quoted": "text", "email": "address", "date": "day", "time": "time of day",
               "number": "id", "name": "person", "word": "option"}  # fmt: skip

ASK = (
    "Quick question before I go ahead: which {noun} did you have in mind?",
    "I need one more thing to do this. What {noun} should I use?",
    "Your request is missing a {noun}. Can you give it to me?",
    "Which {noun} do you mean exactly?",
    "To get this right, please tell me the {noun} you want.",
    "I can do that, but first: what is the {noun}?",
    "Can you clarify the {noun} for this request?",
    "Sorry, I'm not sure what you mean. Could you be more specific?",
    "There is something I need to know first. What exactly do you want me to use here?",
    "Could you give me the missing details for this?",
    "I want to be precise here: what is the exact {noun}?",
    "Please give me the exact {noun} so that I change the right thing.",
    "Which exact {noun} should I put in?",
)
"""The policy's clarifying questions: `{noun}` is the kind of detail missing."""

UNKNOWABLE = (
    ("cost center", "Which cost center should this be charged to?"),
    ("budget code", "Got it. Do you also have the budget code for this?"),
    ("ticket number", "Thanks. What is the ticket number for this request?"),
    ("office", "Noted. Which office are you working from?"),
    ("time zone", "Thank you. Which time zone are you in?"),
    ("project code", "Understood. What is the project code I should tag this with?"),
    ("team name", "One more question: what is the name of your team?"),
    ("employee id", "Before I continue, what is your employee id?"),
    ("approver", "Who needs to approve this change?"),
    ("deadline", "Is there a deadline by which this has to be done?"),
)
"""Questions no intent answers: (what is asked, how the policy asks it)."""

UNKNOWN_REPLIES = (
    "I don't know the {thing}, sorry.",
    "I don't know the {thing}. I only know what I told you.",
    "Sorry, I don't know that.",
    "I'm not sure about the {thing}; I don't know it.",
)
"""Replies to what the intent never says; none says "exact", which the policy's questions about held-back
details say (a user model trained on "I don't know the exact ..." answered "the exact date?" with it)."""

DONE = (
    "Done.",
    "All set: the change is made.",
    "I've completed your request.",
    "Finished. Everything is done as you described.",
    "That's taken care of now. Anything else you need?",
    "The task is complete. Let me know if there's more.",
    "Your request has been handled.",
    "Okay, it's done.",
)
"""The policy's completion messages: `END_CONVERSATION` after the talk, not before it."""

NOT_YET = ("Wait, I haven't told you everything yet. {answer}", "Not yet, you need one more detail. {answer}",
           "Hold on, that can't be done yet. {answer}")  # fmt: skip
ANSWER = ("{detail}", "{detail}", "Sure. {detail}", "Yes: {detail}")


def asked_answer(task: Task) -> str | None:
    """What the user says when asked what the request left out: the row's clarification when it carries
    every held-back detail (one of them for left-out wording) and invents none, else the intent, said
    as the user; None for a row without an intent."""
    original = intent(task)
    if not original:
        return None
    missing = held_back(task)
    clar = str((task.user.get("verifier_metadata") or {}).get("clarification") or "")
    if clar and missing:
        carried = [mentions(clar, d) for d in missing]
        enough = any(carried) if missing[0].kind == "word" else all(carried)
        if enough and not invented(task, [], clar) and not speaks_as_assistant(clar):
            return clar
    return f"What I want is: {original}"


def _noun(task: Task) -> str:
    kinds = list(dict.fromkeys(_KIND_NOUNS[d.kind] for d in held_back(task))) or ["detail"]
    return kinds[0] if len(kinds) == 1 else " and ".join(kinds[:2])


def row_dialogues(task: Task, rng: random.Random) -> list[list[dict[str, str]]]:
    """One row's training talks (user-model side, system prompt first): a full talk (question, answer;
    maybe an unknowable question, "don't know"; completion, the stop token) and an early 'done' answered
    with the missing detail. Empty for a row that is no dialogue or has no intent."""
    answer = asked_answer(task)
    if not task.is_dialogue or answer is None:
        return []
    system = {"role": "system", "content": str(task.user["user_model_system_prompt"])}
    noun = _noun(task)
    talk = [
        system,
        {"role": "user", "content": rng.choice(ASK).format(noun=noun)},
        {"role": "assistant", "content": rng.choice(ANSWER).format(detail=answer)},
    ]
    if rng.random() < 0.75:
        thing, question = rng.choice(UNKNOWABLE)
        talk += [
            {"role": "user", "content": question},
            {"role": "assistant", "content": rng.choice(UNKNOWN_REPLIES).format(thing=thing)},
        ]
    talk += [{"role": "user", "content": rng.choice(DONE)}, {"role": "assistant", "content": STOP}]
    early = [
        system,
        {"role": "user", "content": rng.choice(DONE)},
        {"role": "assistant", "content": rng.choice(NOT_YET).format(answer=answer)},
    ]
    return [talk, early]


def user_model_dialogues(tasks: list[Task], seed: int = 0) -> list[list[dict[str, str]]]:
    """The training talks of every dialogue row of `tasks`, phrasings drawn with `seed`."""
    rng = random.Random(seed)
    return [talk for task in tasks for talk in row_dialogues(task, rng)]


def reply_targets(talk: list[dict[str, str]]) -> list[tuple[list[dict[str, str]], str]]:
    """The (messages so far, reply) pairs of one talk: what the user model sees and what it should say."""
    return [(talk[:i], m["content"]) for i, m in enumerate(talk) if m["role"] == "assistant"]


def summary(talks: list[list[dict[str, Any]]]) -> dict[str, int]:
    """How many replies of each situation the talks teach."""
    counts = {"answers": 0, "dont_know": 0, "ends": 0, "not_yet": 0}
    for talk in talks:
        for messages, reply in reply_targets(talk):
            if reply == STOP:
                counts["ends"] += 1
            elif len(messages) == 2:
                counts["not_yet" if messages[1]["content"] in DONE else "answers"] += 1
            elif any(reply == r.format(thing=t) for r in UNKNOWN_REPLIES for t, _ in UNKNOWABLE):
                counts["dont_know"] += 1
            else:
                counts["answers"] += 1
    return counts
