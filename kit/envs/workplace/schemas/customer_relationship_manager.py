"""The customer relationship manager (CRM) tools' schemas."""

from kit.envs.workplace.schemas.spec import DATE_FORMAT, Param, ToolSpec, paging_params

CRM_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "customer_relationship_manager_search_customers",
        "customer_relationship_manager",
        False,
        "Lists the CRM customers that satisfy every given filter, one page at a time.",
        "Search customers (all filters must hold).",
        (
            Param("customer_name", "string", "Words that must all occur in the customer's name.", "words"),
            Param(
                "customer_email", "string", "The customer's email address, or part of it.", "email or part"
            ),
            Param(
                "product_interest",
                "string",
                "The product: 'Software', 'Hardware', 'Services', 'Consulting' or 'Training'.",
                "Software|Hardware|Services|Consulting|Training",
            ),
            Param(
                "status",
                "string",
                "The stage: 'Qualified', 'Won', 'Lost', 'Lead' or 'Proposal'.",
                "Qualified|Won|Lost|Lead|Proposal",
            ),
            Param(
                "assigned_to_email",
                "string",
                "The account owner's email address, or part of it.",
                "email or part",
            ),
            Param(
                "last_contact_date_min", "string", f"Earliest last-contact date. {DATE_FORMAT}", "YYYY-MM-DD"
            ),
            Param(
                "last_contact_date_max", "string", f"Latest last-contact date. {DATE_FORMAT}", "YYYY-MM-DD"
            ),
            Param("follow_up_by_min", "string", f"Earliest follow-up date. {DATE_FORMAT}", "YYYY-MM-DD"),
            Param("follow_up_by_max", "string", f"Latest follow-up date. {DATE_FORMAT}", "YYYY-MM-DD"),
            *paging_params("customers"),
        ),
    ),
    ToolSpec(
        "customer_relationship_manager_update_customer",
        "customer_relationship_manager",
        True,
        "Changes one field of the customer with the given ID.",
        "Change one field of a customer.",
        (
            Param("customer_id", "string", "The 8-digit ID of the customer.", "8-digit id", True),
            Param(
                "field",
                "string",
                "The field to change: 'customer_name', 'assigned_to_email', 'customer_email', "
                "'customer_phone', 'last_contact_date', 'product_interest', 'status', 'notes' or "
                "'follow_up_by'.",
                "customer_name|assigned_to_email|customer_email|customer_phone|last_contact_date|"
                "product_interest|status|notes|follow_up_by",
                True,
            ),
            Param("new_value", "string", "The new value for that field.", required=True),
        ),
    ),
    ToolSpec(
        "customer_relationship_manager_add_customer",
        "customer_relationship_manager",
        True,
        "Adds a customer to the CRM.",
        "Add a customer.",
        (
            Param("customer_name", "string", "The customer's full name.", required=True),
            Param("assigned_to_email", "string", "The account owner's email address.", "email address", True),
            Param(
                "status",
                "string",
                "The stage: 'Qualified', 'Won', 'Lost', 'Lead' or 'Proposal'.",
                "Qualified|Won|Lost|Lead|Proposal",
                True,
            ),
            Param("customer_email", "string", "The customer's email address.", "email address"),
            Param("customer_phone", "string", "The customer's phone number.", "phone"),
            Param(
                "last_contact_date",
                "string",
                f"When the customer was last contacted. {DATE_FORMAT}",
                "YYYY-MM-DD",
            ),
            Param(
                "product_interest",
                "string",
                "The product: 'Software', 'Hardware', 'Services', 'Consulting' or 'Training'.",
                "Software|Hardware|Services|Consulting|Training",
            ),
            Param("notes", "string", "Free-text notes.", "notes"),
            Param("follow_up_by", "string", f"When to follow up next. {DATE_FORMAT}", "YYYY-MM-DD"),
        ),
    ),
    ToolSpec(
        "customer_relationship_manager_delete_customer",
        "customer_relationship_manager",
        True,
        "Removes the customer with the given ID from the CRM.",
        "Delete a customer.",
        (Param("customer_id", "string", "The 8-digit ID of the customer to delete.", "8-digit id", True),),
    ),
)
