"""The customer relationship manager (CRM) tools: search, update, add and delete customers."""

from __future__ import annotations

from kit.envs.workplace.state import CUSTOMER_COLUMNS, WorkplaceState
from kit.envs.workplace.tools.checks import (
    DEFAULT_PAGE_SIZE,
    ISO_DATETIME,
    check_choice,
    check_colleague,
    check_date,
    check_datetime,
    check_email,
    check_exact,
    check_field,
    check_text,
    find_row,
    haystack,
    in_range,
    page_of,
    query_words,
)

STATUSES = ("Qualified", "Won", "Lost", "Lead", "Proposal")
PRODUCTS = ("Software", "Hardware", "Services", "Consulting", "Training")
CRM_TIME = " 23:59:00"  # CRM dates are stored as end-of-day timestamps


def _crm_date(value: str, arg: str) -> str:
    if ISO_DATETIME.fullmatch(value):
        check_datetime(value, arg)
        return value
    return check_date(value, arg) + CRM_TIME


def customer_relationship_manager_search_customers(
    state: WorkplaceState,
    customer_name: str | None = None,
    customer_email: str | None = None,
    product_interest: str | None = None,
    status: str | None = None,
    assigned_to_email: str | None = None,
    last_contact_date_min: str | None = None,
    last_contact_date_max: str | None = None,
    follow_up_by_min: str | None = None,
    follow_up_by_max: str | None = None,
    page: int = 1,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> str:
    """The customers that satisfy all the given filters, one page."""
    words = query_words(customer_name or "")
    customer_email = (customer_email or "").strip().lower()
    owner = (assigned_to_email or "").strip().lower()
    product = check_choice(product_interest, PRODUCTS, "product_interest") if product_interest else None
    status = check_choice(status, STATUSES, "status") if status else None
    bounds = {
        arg: check_date(value, arg) if value else None
        for arg, value in (
            ("last_contact_date_min", last_contact_date_min),
            ("last_contact_date_max", last_contact_date_max),
            ("follow_up_by_min", follow_up_by_min),
            ("follow_up_by_max", follow_up_by_max),
        )
    }
    found = [
        row
        for row in state.customers.rows()
        if customer_email in row["customer_email"].lower()
        and owner in row["assigned_to_email"].lower()
        and product in (None, row["product_interest"])
        and status in (None, row["status"])
        and in_range(
            row["last_contact_date"][:10], bounds["last_contact_date_min"], bounds["last_contact_date_max"]
        )
        and in_range(row["follow_up_by"][:10], bounds["follow_up_by_min"], bounds["follow_up_by_max"])
        and all(w in haystack(row["customer_name"]) for w in words)
    ]
    return page_of(found, page, page_size)


def _customer_value(state: WorkplaceState, field: str, value: str, arg: str) -> str:
    if field == "assigned_to_email":
        return check_colleague(state, value, arg)
    if field == "customer_email":
        return check_email(value, arg)
    if field == "status":
        return check_exact(value, STATUSES, arg)
    if field == "product_interest":
        return check_choice(value, PRODUCTS, arg)
    if field in ("last_contact_date", "follow_up_by"):
        return _crm_date(value, arg)
    return check_text(value, arg)


def customer_relationship_manager_update_customer(
    state: WorkplaceState, customer_id: str, field: str, new_value: str
) -> str:
    """Change one field of a customer."""
    row = dict(find_row(state.customers, customer_id, "customer"))
    field = check_field(field, CUSTOMER_COLUMNS[1:])
    if field == "product_interest":
        # NeMo-Gym's update refuses another spelling; its add stores any, compared case-insensitively.
        check_exact(new_value, PRODUCTS, "new_value")
    row[field] = _customer_value(state, field, new_value, "new_value")
    state.customers.replace(row)
    return f"Customer {customer_id} updated: {field} = {row[field]!r}."


def customer_relationship_manager_add_customer(
    state: WorkplaceState,
    customer_name: str,
    assigned_to_email: str,
    status: str,
    customer_email: str = "",
    customer_phone: str = "",
    last_contact_date: str = "",
    product_interest: str = "",
    notes: str = "",
    follow_up_by: str = "",
) -> str:
    """Add a customer owned by a colleague; optional fields left out stay empty."""
    given = {
        "customer_name": customer_name,
        "assigned_to_email": assigned_to_email,
        "status": status,
        "customer_email": customer_email,
        "customer_phone": customer_phone,
        "last_contact_date": last_contact_date,
        "product_interest": product_interest,
        "notes": notes,
        "follow_up_by": follow_up_by,
    }
    required = ("customer_name", "assigned_to_email", "status")
    row = {
        field: _customer_value(state, field, value, field) if value or field in required else ""
        for field, value in given.items()
    }
    customer_id = state.customers.next_id()
    state.customers.insert({"customer_id": customer_id, **row})
    return f"Customer added (customer_id {customer_id})."


def customer_relationship_manager_delete_customer(state: WorkplaceState, customer_id: str) -> str:
    """Delete a customer."""
    find_row(state.customers, customer_id, "customer")
    state.customers.delete(customer_id)
    return f"Customer {customer_id} deleted."
