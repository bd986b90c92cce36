"""Optional parts of the package and the extra that installs each: ``[cdk]`` and ``[local]``."""

from __future__ import annotations

from importlib.util import find_spec

# The top-level modules each extra brings; the base install has none of them.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "cdk": ("aws_cdk", "constructs"),
    "local": ("moto",),
}


class MissingExtraError(ImportError):
    """A part of sfn-idempotency was used without the extra that installs its dependencies."""


def require_extra(extra: str, feature: str) -> None:
    """Raise MissingExtraError, one line naming the ``pip install`` to run, when ``extra`` is missing."""
    missing = [module for module in EXTRA_MODULES[extra] if find_spec(module) is None]
    if missing:
        raise MissingExtraError(
            f"{feature} needs the [{extra}] extra ({', '.join(missing)} not installed): "
            f"pip install 'sfn-idempotency[{extra}]'"
        )
