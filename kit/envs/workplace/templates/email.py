"""Email templates: send, delete, forward and reply to emails named by sender, subject or day, or on a
condition."""

from __future__ import annotations

import random

from kit.envs.workplace.state import Row
from kit.envs.workplace.templates.helpers import between, first_of, only, shifted
from kit.envs.workplace.templates.registry import Plan, Skip, World, template

SUBJECTS = (
    "Quarterly numbers",
    "Lunch on Friday",
    "Design review notes",
    "Project kickoff",
    "Budget update",
    "Offsite agenda",
    "Interview schedule",
    "Release checklist",
    "Client visit next week",
    "Team survey results",
    "Holiday coverage",
    "Sprint demo",
    "Onboarding buddy",
    "Vendor invoice",
    "Security reminder",
    "Roadmap questions",
    "Expense report",
    "Training sign-up",
    "Maintenance window",
    "Welcome aboard",
)
BODIES = (
    "Please send me the latest figures by Monday.",
    "Thanks for all your help this week.",
    "Can we meet tomorrow at 10am?",
    "The draft is in the shared folder for your review.",
    "Let me know if you have any questions.",
    "Please confirm you can make it.",
    "Could you review this before Friday?",
    "Great work on the launch!",
    "Reminder: the deadline is next Wednesday.",
    "Happy to help if you need anything.",
    "Let's sync on this after the holidays.",
    "Please add your notes to the agenda.",
)
REPLIES = (
    "Thanks for the update, I will review it tomorrow.",
    "Sounds good, go ahead.",
    "Let's discuss this at our next one-on-one.",
    "Great work, thank you!",
    "Noted, thanks for letting me know.",
    "Can you send me more details?",
    "I will get back to you by Friday.",
    "Approved.",
)


@template("email", "easy", "single_step")
def send_explicit(rng: random.Random, world: World, plan: Plan) -> str:
    to = rng.choice(world.people)[1] if rng.random() < 0.7 else rng.choice(world.customers)["customer_email"]
    subject, body = rng.choice(SUBJECTS), rng.choice(BODIES)
    plan.act("email_send_email", recipient=to, subject=subject, body=body)
    return (
        rng.choice(
            (
                f"Send an email to {to} with subject '{subject}' and body '{body}'",
                f"Email {to} with the subject '{subject}' and the body '{body}'",
            )
        )
        + "."
    )


def _from_sender(world: World, plan: Plan, rng: random.Random) -> Row:
    """A random email, found by searching its sender's address and its subject: the newest of them."""
    sample = rng.choice(world.emails)
    found = plan.read("email_search_emails", query=f"{sample['sender/recipient']} {sample['subject']}")[
        "results"
    ]
    if not found or found[0]["email_id"] != sample["email_id"]:
        raise Skip("search does not single out the email")
    return sample


@template("email", "easy", "email_search_delete_batch")
def delete_email_from_address(rng: random.Random, world: World, plan: Plan) -> str:
    email = _from_sender(world, plan, rng)
    plan.act("email_delete_email", email_id=email["email_id"])
    return f"Delete the latest email from {email['sender/recipient']} about '{email['subject']}'."


@template("email", "easy", "email_lookup_forward")
def forward_email_from_address(rng: random.Random, world: World, plan: Plan) -> str:
    email, to = _from_sender(world, plan, rng), rng.choice(world.people)[1]
    if to == email["sender/recipient"]:
        raise Skip("forward to its own sender")
    plan.act("email_forward_email", email_id=email["email_id"], recipient=to)
    return f"Forward the latest email from {email['sender/recipient']} about '{email['subject']}' to {to}."


@template("email", "easy", "email_search_reply")
def reply_email_from_address(rng: random.Random, world: World, plan: Plan) -> str:
    email, body = _from_sender(world, plan, rng), rng.choice(REPLIES)
    plan.act("email_reply_email", email_id=email["email_id"], body=body)
    sender, subject = email["sender/recipient"], email["subject"]
    return f"Reply to the latest email from {sender} about '{subject}' with '{body}'."


@template("email", "medium", "email_lookup_send")
def send_by_first_name(rng: random.Random, world: World, plan: Plan) -> str:
    first = rng.choice(world.people)[0]
    subject, body = rng.choice(SUBJECTS), rng.choice(BODIES)
    plan.act("email_send_email", recipient=plan.lookup(first), subject=subject, body=body)
    return f"Send {first.capitalize()} an email with subject '{subject}' and body '{body}'."


def _latest_from(world: World, plan: Plan, rng: random.Random) -> tuple[str, Row]:
    """A random sender and subject, and the newest email from them with that subject, found by search."""
    sample = rng.choice(world.emails)
    first = first_of(sample["sender/recipient"])
    found = plan.read("email_search_emails", query=f"{first} {sample['subject']}")["results"]
    if (
        not found
        or found[0]["subject"] != sample["subject"]
        or found[0]["sender/recipient"] != sample["sender/recipient"]
    ):
        raise Skip("search does not single out the email")
    return first, found[0]


@template("email", "medium", "email_search_reply")
def reply_latest_from(rng: random.Random, world: World, plan: Plan) -> str:
    first, email = _latest_from(world, plan, rng)
    body = rng.choice(REPLIES)
    plan.act("email_reply_email", email_id=email["email_id"], body=body)
    return f"Reply to {first}'s latest email about '{email['subject']}' with '{body}'."


@template("email", "medium", "email_search_delete_batch")
def delete_latest_from(rng: random.Random, world: World, plan: Plan) -> str:
    first, email = _latest_from(world, plan, rng)
    plan.act("email_delete_email", email_id=email["email_id"])
    return f"Delete {first}'s most recent email about '{email['subject']}'."


@template("email", "medium", "email_lookup_forward")
def forward_latest_about(rng: random.Random, world: World, plan: Plan) -> str:
    subject = rng.choice(world.emails)["subject"]
    found = plan.read("email_search_emails", query=subject)["results"]
    if not found or found[0]["subject"] != subject:
        raise Skip("newest match has another subject")
    first = rng.choice(world.people)[0]
    plan.act("email_forward_email", email_id=found[0]["email_id"], recipient=plan.lookup(first))
    return f"Forward the most recent email about '{subject}' to {first.capitalize()}."


@template("email", "hard", "email_search_delete_batch")
def delete_all_from_about(rng: random.Random, world: World, plan: Plan) -> str:
    sample = rng.choice(world.emails)
    first, subject = first_of(sample["sender/recipient"]), sample["subject"]
    found = plan.read("email_search_emails", query=f"{first} {subject}")["results"]
    for email in only(
        only(between(found, 2, 5), "subject", subject), "sender/recipient", sample["sender/recipient"]
    ):
        plan.act("email_delete_email", email_id=email["email_id"])
    return f"Delete all emails from {first} about '{subject}'."


@template("email", "hard", "email_search_reply")
def reply_to_all_on_day(rng: random.Random, world: World, plan: Plan) -> str:
    sample = rng.choice(world.emails)
    first, day = first_of(sample["sender/recipient"]), sample["sent_datetime"][:10]
    found = plan.read("email_search_emails", query=first, date_min=day, date_max=day)["results"]
    body = rng.choice(REPLIES)
    for email in only(between(found, 2, 5), "sender/recipient", sample["sender/recipient"]):
        plan.act("email_reply_email", email_id=email["email_id"], body=body)
    return f"Reply '{body}' to every email {first} sent me on {day}."


@template("email", "medium", "email_get_info_then_act")
def forward_to_sender_of(rng: random.Random, world: World, plan: Plan) -> str:
    first, about = _latest_from(world, plan, rng)
    subject = rng.choice(world.emails)["subject"]
    found = plan.read("email_search_emails", query=subject)["results"]
    if (
        not found
        or found[0]["subject"] != subject
        or found[0]["sender/recipient"] == about["sender/recipient"]
    ):
        raise Skip("newest match has another subject, or is the sender's own")
    plan.act("email_forward_email", email_id=found[0]["email_id"], recipient=about["sender/recipient"])
    return (
        f"Forward the most recent email about '{subject}' to whoever sent me the latest email about "
        f"'{about['subject']}'."
    )


@template("email", "hard", "email_search_reply")
def reply_or_send(rng: random.Random, world: World, plan: Plan) -> str:
    sample = rng.choice(world.emails)
    first = first_of(sample["sender/recipient"])
    topic = sample["subject"] if rng.random() < 0.5 else rng.choice(world.emails)["subject"]
    since = shifted(sample["sent_datetime"], -rng.randrange(0, 20))
    body = rng.choice(REPLIES)
    plan.needs("company_directory")
    found = plan.read("email_search_emails", query=f"{first} {topic}", date_min=since)["results"]
    if found:
        if found[0]["subject"] != topic:
            raise Skip("newest match has another subject")
        plan.act("email_reply_email", email_id=found[0]["email_id"], body=body)
    else:
        plan.act("email_send_email", recipient=plan.lookup(first), subject=topic, body=body)
    return (
        f"If {first} has emailed me about '{topic}' since {since}, reply to the latest such email with "
        f"'{body}'; otherwise send {first} an email with subject '{topic}' and body '{body}'."
    )
