"""Customer relationship manager (CRM) templates: add, update, reassign and delete customers."""

from __future__ import annotations

import random

from kit.envs.workplace.state import Row
from kit.envs.workplace.templates.helpers import between, december_weekday, first_of, other, shifted
from kit.envs.workplace.templates.registry import Plan, Skip, World, template
from kit.envs.workplace.tools import PRODUCTS, STATUSES

NEW_CUSTOMERS = (
    "Alex Morgan",
    "Jordan Blake",
    "Sam Rivera",
    "Charlie Kim",
    "Robin Patel",
    "Jesse Ward",
    "Dana Fox",
    "Reese Cole",
    "Cameron Lee",
    "Hayden Cruz",
    "Peyton Shaw",
    "Elliot Park",
    "Marley Quinn",
    "Tatum Ross",
)


@template("customer_relationship_manager", "easy", "crm_search_update_batch")
def update_named_customer(rng: random.Random, world: World, plan: Plan) -> str:
    customer = find_customer(rng, world, plan)
    name = customer["customer_name"]
    field = rng.choice(("product_interest", "follow_up_by", "customer_phone", "assigned_to_email"))
    if field == "product_interest":
        value = other(rng, PRODUCTS, customer["product_interest"])
        request = f"Set the product interest of {name} to {value}."
    elif field == "follow_up_by":
        value = f"{december_weekday(rng):%Y-%m-%d}"
        if customer["follow_up_by"].startswith(value):
            raise Skip("unchanged")
        request = f"Set the follow-up date of {name} to {value}."
    elif field == "customer_phone":
        value = f"{rng.randrange(200, 1000)}-555-{rng.randrange(10000):04d}"
        request = f"Update the phone number of {name} to {value}."
    else:
        value = other(rng, [p[1] for p in world.sales], customer["assigned_to_email"])
        request = f"Assign {name} to {value} in the CRM."
    plan.act(
        "customer_relationship_manager_update_customer",
        customer_id=customer["customer_id"],
        field=field,
        new_value=value,
    )
    return request


@template("customer_relationship_manager", "easy", "crm_search_delete_batch")
def remove_named_customer(rng: random.Random, world: World, plan: Plan) -> str:
    customer = find_customer(rng, world, plan)
    plan.act("customer_relationship_manager_delete_customer", customer_id=customer["customer_id"])
    name = customer["customer_name"]
    return rng.choice((f"Delete {name} from the CRM.", f"Remove the customer {name} from the CRM."))


@template("customer_relationship_manager", "easy", "single_step")
def add_customer_explicit(rng: random.Random, world: World, plan: Plan) -> str:
    name, status, owner = rng.choice(NEW_CUSTOMERS), rng.choice(STATUSES), rng.choice(world.sales)[1]
    if rng.random() < 0.5:
        product = rng.choice(PRODUCTS)
        plan.act(
            "customer_relationship_manager_add_customer",
            customer_name=name,
            assigned_to_email=owner,
            status=status,
            product_interest=product,
        )
        return f"Add {name} to the CRM with status {status}, assigned to {owner}, interested in {product}."
    plan.act(
        "customer_relationship_manager_add_customer",
        customer_name=name,
        assigned_to_email=owner,
        status=status,
    )
    return f"Add {name} to the CRM with status {status}, assigned to {owner}."


@template("customer_relationship_manager", "medium", "crm_lookup_add")
def add_customer_by_first_name(rng: random.Random, world: World, plan: Plan) -> str:
    name, status, product = rng.choice(NEW_CUSTOMERS), rng.choice(STATUSES), rng.choice(PRODUCTS)
    first = rng.choice(world.sales)[0]
    plan.act(
        "customer_relationship_manager_add_customer",
        customer_name=name,
        assigned_to_email=plan.lookup(first),
        status=status,
        product_interest=product,
    )
    return (
        f"Add a new customer {name} with status {status}, interested in {product}, assigned to "
        f"{first.capitalize()}."
    )


def find_customer(rng: random.Random, world: World, plan: Plan) -> Row:
    """A random customer, found by searching its name; Skip when the name matches others too."""
    name = rng.choice(world.customers)["customer_name"]
    found = plan.read("customer_relationship_manager_search_customers", customer_name=name)["results"]
    if len(found) != 1:
        raise Skip("not a single match")
    return found[0]


@template("customer_relationship_manager", "medium", "crm_status_update")
def set_status_by_name(rng: random.Random, world: World, plan: Plan) -> str:
    customer = find_customer(rng, world, plan)
    status = other(rng, STATUSES, customer["status"])
    plan.act(
        "customer_relationship_manager_update_customer",
        customer_id=customer["customer_id"],
        field="status",
        new_value=status,
    )
    return f"Mark {customer['customer_name']} as {status} in the CRM."


@template("customer_relationship_manager", "medium", "crm_search_update_batch")
def reassign_by_name(rng: random.Random, world: World, plan: Plan) -> str:
    customer = find_customer(rng, world, plan)
    first = first_of(other(rng, [p[1] for p in world.sales], customer["assigned_to_email"]))
    plan.act(
        "customer_relationship_manager_update_customer",
        customer_id=customer["customer_id"],
        field="assigned_to_email",
        new_value=plan.lookup(first),
    )
    return f"Reassign {customer['customer_name']} to {first} in the CRM."


def _portfolio(rng: random.Random, world: World, plan: Plan) -> tuple[str, Row, list[Row]]:
    """A sales rep's customers of one status and product, found by look-up and search."""
    sample = rng.choice(world.customers)
    first = first_of(sample["assigned_to_email"])
    found = plan.read(
        "customer_relationship_manager_search_customers",
        assigned_to_email=plan.lookup(first),
        status=sample["status"],
        product_interest=sample["product_interest"],
    )["results"]
    return first, sample, between(found, 1, 5)


@template("customer_relationship_manager", "hard", "crm_search_update_batch")
def hand_over_customers(rng: random.Random, world: World, plan: Plan) -> str:
    giver, sample, found = _portfolio(rng, world, plan)
    taker = first_of(other(rng, [p[1] for p in world.sales], sample["assigned_to_email"]))
    taker_address = plan.lookup(taker)
    for match in found:
        plan.act(
            "customer_relationship_manager_update_customer",
            customer_id=match["customer_id"],
            field="assigned_to_email",
            new_value=taker_address,
        )
    return (
        f"{taker} is taking over all of {giver}'s {sample['status']} customers interested in "
        f"{sample['product_interest']}. Reassign them in the CRM."
    )


@template("customer_relationship_manager", "hard", "crm_search_delete_batch")
def delete_portfolio(rng: random.Random, world: World, plan: Plan) -> str:
    first, sample, found = _portfolio(rng, world, plan)
    for match in found:
        plan.act("customer_relationship_manager_delete_customer", customer_id=match["customer_id"])
    return (
        f"Delete all of {first}'s {sample['status']} customers interested in {sample['product_interest']} "
        f"from the CRM."
    )


@template("customer_relationship_manager", "hard", "crm_status_update")
def lose_stale(rng: random.Random, world: World, plan: Plan) -> str:
    sample = rng.choice(world.customers)
    if sample["status"] == "Lost":
        raise Skip("already lost")
    cutoff = shifted(sample["last_contact_date"], rng.randrange(0, 15))
    found = plan.read(
        "customer_relationship_manager_search_customers",
        status=sample["status"],
        product_interest=sample["product_interest"],
        last_contact_date_max=cutoff,
    )["results"]
    for match in between(found, 1, 5):
        plan.act(
            "customer_relationship_manager_update_customer",
            customer_id=match["customer_id"],
            field="status",
            new_value="Lost",
        )
    return (
        f"Move every {sample['status']} customer interested in {sample['product_interest']} who was last "
        f"contacted on or before {cutoff} to Lost."
    )
