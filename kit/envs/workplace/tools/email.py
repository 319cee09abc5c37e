"""The email tools: read, search, send, delete, forward and reply to the mailbox owner's emails."""

from __future__ import annotations

from kit.envs.workplace.state import EMAIL_COLUMNS, WorkplaceState
from kit.envs.workplace.tools.checks import (
    DEFAULT_PAGE_SIZE,
    check_date,
    check_email,
    check_field,
    check_text,
    find_row,
    haystack,
    in_range,
    page_of,
    query_words,
    to_json,
)


def email_get_email_information_by_id(state: WorkplaceState, email_id: str, field: str) -> str:
    """One field of an email, as ``{field: value}``."""
    row = find_row(state.emails, email_id, "email")
    return to_json({field: row[check_field(field, EMAIL_COLUMNS)]})


def email_search_emails(
    state: WorkplaceState,
    query: str = "",
    date_min: str | None = None,
    date_max: str | None = None,
    page: int = 1,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> str:
    """Emails sent within the dates whose subject, body or sender/recipient hold every query word; newest
    first, one page."""
    words = query_words(query)
    low = check_date(date_min, "date_min") if date_min else None
    high = check_date(date_max, "date_max") if date_max else None
    found = [
        row
        for row in state.emails.rows()
        if in_range(row["sent_datetime"][:10], low, high)
        and all(w in haystack(row["subject"], row["body"], row["sender/recipient"]) for w in words)
    ]
    found.sort(key=lambda r: (r["sent_datetime"], r["email_id"]), reverse=True)
    return page_of(found, page, page_size)


def _outbox(state: WorkplaceState, recipient: str, subject: str, body: str) -> str:
    email_id = state.emails.next_id()
    state.emails.insert(
        {
            "email_id": email_id,
            "inbox/outbox": "outbox",
            "sender/recipient": recipient,
            "subject": subject,
            "sent_datetime": state.now,
            "body": body,
        }
    )
    return email_id


def email_send_email(state: WorkplaceState, recipient: str, subject: str, body: str) -> str:
    """Store a new outbox email to ``recipient``."""
    recipient = check_email(recipient, "recipient")
    email_id = _outbox(state, recipient, check_text(subject, "subject"), check_text(body, "body"))
    return f"Email sent to {recipient} (email_id {email_id})."


def email_delete_email(state: WorkplaceState, email_id: str) -> str:
    """Delete an email."""
    find_row(state.emails, email_id, "email")
    state.emails.delete(email_id)
    return f"Email {email_id} deleted."


def email_forward_email(state: WorkplaceState, email_id: str, recipient: str) -> str:
    """Send an email's body on to ``recipient`` under the subject 'FW: ...'."""
    original = find_row(state.emails, email_id, "email")
    recipient = check_email(recipient, "recipient")
    new_id = _outbox(state, recipient, f"FW: {original['subject']}", original["body"])
    return f"Email {email_id} forwarded to {recipient} (email_id {new_id})."


def email_reply_email(state: WorkplaceState, email_id: str, body: str) -> str:
    """Send ``body`` to an email's sender/recipient under the same subject."""
    original = find_row(state.emails, email_id, "email")
    recipient = original["sender/recipient"]
    new_id = _outbox(state, recipient, original["subject"], check_text(body, "body"))
    return f"Reply sent to {recipient} (email_id {new_id})."
