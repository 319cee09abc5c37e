"""NeMo-Gym's customer relationship manager (CRM) tools."""

from __future__ import annotations

import operator
from typing import Any

from kit.envs.workplace.gym.common import Refusal, holds, matching, next_id, page_window
from kit.envs.workplace.gym.frame import pandas, quiet, selected
from kit.envs.workplace.gym.state import GymState

STATUSES = ("Qualified", "Won", "Lost", "Lead", "Proposal")
PRODUCTS = ("Software", "Hardware", "Services", "Consulting", "Training")
_FIELDS = (
    "customer_name",
    "assigned_to_email",
    "customer_email",
    "customer_phone",
    "last_contact_date",
    "product_interest",
    "status",
    "notes",
    "follow_up_by",
)


def _quoted(options: tuple[str, ...]) -> str:
    return ", ".join(f"'{o}'" for o in options)


def customer_relationship_manager_search_customers(
    state: GymState, customer_name: Any = None, customer_email: Any = None, product_interest: Any = None,
    status: Any = None, assigned_to_email: Any = None, last_contact_date_min: Any = None,
    last_contact_date_max: Any = None, follow_up_by_min: Any = None, follow_up_by_max: Any = None,
    page: Any = 1, page_size: Any = 5,
) -> Any:  # fmt: skip
    """Customers matching every given filter (text as regular expressions, dates compared as text), one
    page."""
    patterns = (
        ("customer_name", customer_name),
        ("customer_email", customer_email),
        ("product_interest", product_interest),
        ("status", status),
        ("assigned_to_email", assigned_to_email),
    )
    bounds = (
        ("last_contact_date", operator.ge, last_contact_date_min),
        ("last_contact_date", operator.le, last_contact_date_max),
        ("follow_up_by", operator.ge, follow_up_by_min),
        ("follow_up_by", operator.le, follow_up_by_max),
    )
    if not any([value for _, value in patterns] + [value for _, _, value in bounds]):
        raise Refusal("No search parameters provided. Please provide at least one parameter.")
    customers = state.customers
    with quiet():
        for column, pattern in patterns:
            if pattern:
                customers = customers.keep(
                    selected(customers.series(column).str.contains(pattern, case=False))
                )
    for column, compare, bound in bounds:
        if bound:
            customers = customers.keep(selected(compare(customers.series(column), bound)))
    found = customers.records()
    page, total_pages, start, end = page_window(len(found), page, page_size)
    if not found:
        return "No customers found."
    pagination = {
        "total_customers": len(found),
        "page": page,
        "page_size": page_size,
        "total_pages": total_pages,
    }
    return {"customers": found[start:end], "pagination": pagination}


def customer_relationship_manager_update_customer(
    state: GymState, customer_id: Any = None, field: Any = None, new_value: Any = None
) -> str:
    """Change one field of a customer."""
    if not customer_id or not field or not new_value:
        raise Refusal("Customer ID, field, or new value not provided.")
    if field == "status" and new_value not in STATUSES:
        raise Refusal(f"Status not valid. Please choose from: {_quoted(STATUSES)}")
    if field == "product_interest" and new_value not in PRODUCTS:
        raise Refusal(f"Product interest not valid. Please choose from: {_quoted(PRODUCTS)}")
    if field in ["customer_email", "assigned_to_email"]:
        new_value = new_value.lower()
    if not holds(state.customers, "customer_id", customer_id):
        raise Refusal("Customer not found.")
    if field not in pandas().Index(state.customers.columns):
        raise Refusal(f"Field not valid. Please choose from: {_quoted(_FIELDS)}")
    hits = matching(state.customers, "customer_id", customer_id)
    state.customers = state.customers.assigned(hits, field, new_value)
    return "Customer updated successfully."


def customer_relationship_manager_add_customer(
    state: GymState, customer_name: Any = None, assigned_to_email: Any = None, status: Any = None,
    customer_email: Any = None, customer_phone: Any = None, last_contact_date: Any = None,
    product_interest: Any = None, notes: Any = "", follow_up_by: Any = None,
) -> str:  # fmt: skip
    """Add a customer; its id is returned. Optional fields left out stay missing (notes: empty)."""
    if not all([customer_name, assigned_to_email, status]):
        raise Refusal("Please provide all required fields: customer_name, assigned_to_email, status.")
    assigned_to_email = assigned_to_email.lower()
    if customer_email:
        customer_email = customer_email.lower()
    customer_id = next_id(state.customers)
    row = {  # in the order NeMo-Gym builds the new row
        "customer_id": customer_id,
        "customer_name": customer_name,
        "customer_email": customer_email,
        "customer_phone": customer_phone,
        "last_contact_date": last_contact_date,
        "product_interest": product_interest,
        "status": status,
        "assigned_to_email": assigned_to_email,
        "notes": notes,
        "follow_up_by": follow_up_by,
    }
    state.customers = state.customers.appended(row, relabel=True)
    return customer_id


def customer_relationship_manager_delete_customer(state: GymState, customer_id: Any = None) -> str:
    """Delete a customer."""
    if not customer_id:
        raise Refusal("Customer ID not provided.")
    if not holds(state.customers, "customer_id", customer_id):
        raise Refusal("Customer not found.")
    state.customers = state.customers.keep(selected(state.customers.series("customer_id") != customer_id))
    return "Customer deleted successfully."
