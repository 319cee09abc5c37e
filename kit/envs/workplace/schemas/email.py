"""The email tools' schemas."""

from kit.envs.workplace.schemas.spec import DATE_FORMAT, Param, ToolSpec, paging_params

EMAIL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "email_get_email_information_by_id",
        "email",
        False,
        "Reads one field of the email with the given ID.",
        "Read one field of an email.",
        (
            Param("email_id", "string", "The 8-digit ID of the email.", "8-digit id", True),
            Param(
                "field",
                "string",
                "The field to read: 'email_id', 'inbox/outbox', 'sender/recipient', 'subject', "
                "'sent_datetime' or 'body'.",
                "email_id|inbox/outbox|sender/recipient|subject|sent_datetime|body",
                True,
            ),
        ),
    ),
    ToolSpec(
        "email_search_emails",
        "email",
        False,
        "Searches the mailbox. An email matches when every word of the query occurs somewhere in its "
        "subject, body or sender/recipient. Results come newest first, one page at a time.",
        "Search emails (all query words must occur in subject, body or sender); newest first.",
        (
            Param("query", "string", "Words to look for in the subject, body or sender/recipient.", "words"),
            Param("date_min", "string", f"Earliest sent date to include. {DATE_FORMAT}", "YYYY-MM-DD"),
            Param("date_max", "string", f"Latest sent date to include. {DATE_FORMAT}", "YYYY-MM-DD"),
            *paging_params("emails"),
        ),
    ),
    ToolSpec(
        "email_send_email",
        "email",
        True,
        "Sends a new email to one recipient; it is stored in the outbox.",
        "Send an email.",
        (
            Param("recipient", "string", "The recipient's email address.", "email address", True),
            Param("subject", "string", "The subject line.", required=True),
            Param("body", "string", "The message text.", required=True),
        ),
    ),
    ToolSpec(
        "email_delete_email",
        "email",
        True,
        "Deletes the email with the given ID.",
        "Delete an email.",
        (Param("email_id", "string", "The 8-digit ID of the email to delete.", "8-digit id", True),),
    ),
    ToolSpec(
        "email_forward_email",
        "email",
        True,
        "Forwards the email with the given ID to a recipient (a new outbox email with subject 'FW: ...').",
        "Forward an email.",
        (
            Param("email_id", "string", "The 8-digit ID of the email to forward.", "8-digit id", True),
            Param("recipient", "string", "The email address to forward it to.", "email address", True),
        ),
    ),
    ToolSpec(
        "email_reply_email",
        "email",
        True,
        "Replies to the email with the given ID: sends the body to its sender under the same subject.",
        "Reply to an email.",
        (
            Param("email_id", "string", "The 8-digit ID of the email to answer.", "8-digit id", True),
            Param("body", "string", "The reply text.", required=True),
        ),
    ),
)
