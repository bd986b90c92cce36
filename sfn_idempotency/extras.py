"""Optional parts of the package and the extra that installs each: ``[cdk]`` and ``[local]``."""

from __future__ import annotations

import importlib.metadata
from importlib.util import find_spec

# The top-level modules each extra brings; the base install has none of them.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "cdk": ("aws_cdk", "constructs"),
    "local": ("moto",),
}


# The moto releases the local engine's fixes were tested on (pyproject's [local] range admits exactly
# these): its fixes patch moto's internals, which any release may move (5.2.6 removed a class every
# import of the engine needed). A release joins when `make canary` passes on it.
TESTED_MOTO = ("5.2.5", "5.2.6")


class MissingExtraError(ImportError):
    """A part of sfn-idempotency was used without the extra that installs its dependencies."""


class UnsupportedMotoError(MissingExtraError):
    """The [local] extra's moto is a release the engine was not tested on."""


def require_extra(extra: str, feature: str) -> None:
    """Raise MissingExtraError, one line naming the ``pip install`` to run, when ``extra`` is missing."""
    missing = [module for module in EXTRA_MODULES[extra] if find_spec(module) is None]
    if missing:
        raise MissingExtraError(
            f"{feature} needs the [{extra}] extra ({', '.join(missing)} not installed): "
            f"pip install 'sfn-idempotency[{extra}]'"
        )
    if extra == "local":
        require_tested_moto(feature)


def require_tested_moto(feature: str) -> None:
    """Raise UnsupportedMotoError, one line naming the tested releases and the ``pip install`` that
    brings one, when the installed moto is not one of them; checked before any of moto is imported,
    so that a moto whose internals moved never gets as far as an ImportError."""
    installed = importlib.metadata.version("moto")
    if installed not in TESTED_MOTO:
        tested = ", ".join(TESTED_MOTO)
        raise UnsupportedMotoError(
            f"{feature} was tested on moto {tested}, not on the installed {installed}: "
            f"pip install 'moto=={TESTED_MOTO[-1]}'"
        )
