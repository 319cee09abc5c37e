"""The company directory tool's schema."""

from kit.envs.workplace.schemas.spec import Param, ToolSpec

COMPANY_DIRECTORY_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "company_directory_find_email_address",
        "company_directory",
        False,
        "Looks up colleagues in the company directory: returns every email address that contains the "
        "given name or name fragment (case-insensitive).",
        "Find colleagues' email addresses by (part of) a name.",
        (
            Param(
                "name",
                "string",
                "A first name, last name or fragment of one to look for.",
                "name or fragment",
            ),
        ),
    ),
)
