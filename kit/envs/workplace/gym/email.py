"""NeMo-Gym's email tools. Unlike the other toolkits, they catch their own errors and answer
``"Error <doing what>: <error>"``; the sent email's id is one more than the largest, unpadded."""

from __future__ import annotations

from typing import Any

from kit.envs.workplace.gym.common import Refusal, errors_reported, holds, matching, next_id, page_window
from kit.envs.workplace.gym.frame import pandas, selected
from kit.envs.workplace.gym.state import GymState


def _first(state: GymState, email_id: Any) -> dict[str, Any] | None:
    found = state.emails.keep(matching(state.emails, "email_id", email_id)).records()
    return found[0] if found else None


def email_get_email_information_by_id(state: GymState, email_id: Any = None, field: Any = None) -> Any:
    """``{field: value}`` of one email."""
    if not email_id:
        raise Refusal("Email ID not provided.")
    if not field:
        raise Refusal("Field not provided.")
    with errors_reported("Error retrieving email information"):
        email = _first(state, email_id)
        if email is None:
            raise Refusal("Email not found.")
        if field in email:
            return {field: email[field]}
        raise Refusal(f"Field '{field}' not found. Available fields: {', '.join(email)}")


def _searchable(email: dict[str, Any]) -> str:
    return f"{email['subject']} {email['body']} {email['sender/recipient']}".lower()


def email_search_emails(
    state: GymState, query: Any = "", date_min: Any = None, date_max: Any = None, page: Any = 1,
    page_size: Any = 5,
) -> Any:  # fmt: skip
    """Emails holding every query word in subject, body or sender/recipient, newest first, one page."""
    pd = pandas()
    with errors_reported("Error searching emails"):
        words = query.lower().split()
        emails = state.emails.keep([all(w in _searchable(e) for w in words) for e in state.emails.data])
        sent = pd.to_datetime(emails.series("sent_datetime"))
        found = [dict(emails.data[i]) for i in sent.sort_values(ascending=False).index]
        if date_min:
            found = [
                e for e in found if pd.Timestamp(e["sent_datetime"]).date() >= pd.Timestamp(date_min).date()
            ]
        if date_max:
            found = [
                e for e in found if pd.Timestamp(e["sent_datetime"]).date() <= pd.Timestamp(date_max).date()
            ]
        page, total_pages, start, end = page_window(len(found), page, page_size)
        if not found:
            return "No emails found."
        pagination = {
            "total_emails": len(found),
            "page": page,
            "page_size": page_size,
            "total_pages": total_pages,
        }
        return {"emails": found[start:end], "pagination": pagination}


def _send(state: GymState, recipient: Any, subject: Any, body: Any) -> None:
    """Store an outbox email; raises Refusal with NeMo-Gym's answer when it would not send."""
    if not recipient or not subject or not body:
        raise Refusal("Recipient, subject, or body not provided.")
    if "@" not in recipient or "." not in recipient:
        raise Refusal("Invalid recipient email address.")
    with errors_reported("Error sending email"):
        recipient = recipient.lower()
        email_id = next_id(state.emails, width=0) if len(state.emails) else "1"
        row = {
            "email_id": email_id,
            "inbox/outbox": "outbox",
            "sender/recipient": recipient,
            "subject": subject,
            "sent_datetime": state.now,
            "body": body,
        }
        state.emails = state.emails.appended(row, relabel=True)


def email_send_email(state: GymState, recipient: Any = None, subject: Any = None, body: Any = None) -> str:
    """Send an email."""
    _send(state, recipient, subject, body)
    return "Email sent successfully."


def email_delete_email(state: GymState, email_id: Any = None) -> str:
    """Delete an email."""
    if not email_id:
        raise Refusal("Email ID not provided.")
    with errors_reported("Error deleting email"):
        if not holds(state.emails, "email_id", email_id):
            raise Refusal("Email not found.")
        state.emails = state.emails.keep(selected(state.emails.series("email_id") != email_id))
        return "Email deleted successfully."


def _send_on(state: GymState, recipient: Any, subject: str, body: Any) -> None:
    # Forwarding and replying pass the send's answer on only when it reads as a failure; a send refused
    # for a missing part still counts as done there.
    try:
        _send(state, recipient, subject, body)
    except Refusal as refusal:
        if "Error" in refusal.text or "Invalid" in refusal.text:
            raise


def email_forward_email(state: GymState, email_id: Any = None, recipient: Any = None) -> str:
    """Send an email's body on to ``recipient`` under 'FW: <subject>'."""
    if not email_id or not recipient:
        raise Refusal("Email ID or recipient not provided.")
    if "@" not in recipient or "." not in recipient:
        raise Refusal("Invalid recipient email address.")
    with errors_reported("Error forwarding email"):
        if not holds(state.emails, "email_id", email_id):
            raise Refusal("Email not found.")
        recipient = recipient.lower()
        email = _first(state, email_id)
        _send_on(state, recipient, f"FW: {email['subject']}", email["body"])
        return "Email forwarded successfully."


def email_reply_email(state: GymState, email_id: Any = None, body: Any = None) -> str:
    """Send ``body`` to an email's sender/recipient under 'RE: <subject>'."""
    if not email_id or not body:
        raise Refusal("Email ID or body not provided.")
    with errors_reported("Error replying to email"):
        if not holds(state.emails, "email_id", email_id):
            raise Refusal("Email not found.")
        email = _first(state, email_id)
        _send_on(state, email["sender/recipient"], f"RE: {email['subject']}", body)
        return "Email replied successfully."
