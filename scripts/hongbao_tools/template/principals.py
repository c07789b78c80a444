"""The AllowedPattern of the principals parameters: each entry as the function parses it
(`hongbao::wallet::rules::IamPrincipals`), so no accepted value stops Init."""

# A principals list as the function parses it (an entry, a * only at its end, no `=`), so no
# accepted value stops Init.
PRINCIPALS_PATTERN = r"^$|^ *[^ ,*=]+\*? *(, *[^ ,*=]+\*? *)*$"
PRINCIPALS_CONSTRAINT = "comma-separated IAM userArns, each ending in * at most"
# The same where an entry may name the merchants it acts for: `<principal>=<m>[|<m>...]`, each
# merchant id 1 to 64 of A-Z a-z 0-9 _ . : -.
_MERCHANT = r"[A-Za-z0-9_.:-]{1,64}"
_BOUND_ENTRY = rf"[^ ,*=]+\*?( *= *{_MERCHANT}( *\| *{_MERCHANT})*)?"
BOUND_PATTERN = rf"^$|^ *{_BOUND_ENTRY} *(, *{_BOUND_ENTRY} *)*$"
BOUND_CONSTRAINT = (
    "comma-separated IAM userArns, each ending in * at most, each optionally followed by "
    "=<merchant>|<merchant>... (merchant ids of letters, digits and _.:-)"
)


def allowed(merchant_bound: bool) -> dict[str, str]:
    """The `Pattern` (AllowedPattern) and `Constraint` (ConstraintDescription) of a principals
    parameter: entries bound to merchants (`<principal>=<merchant>|...`) only where the
    function takes them (the variables of the operations whose tenant is a merchant:
    functions.merchant_bound)."""
    if merchant_bound:
        return {"Pattern": BOUND_PATTERN, "Constraint": BOUND_CONSTRAINT}
    return {"Pattern": PRINCIPALS_PATTERN, "Constraint": PRINCIPALS_CONSTRAINT}
