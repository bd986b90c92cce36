"""moto's own plumbing, under every service (fixes 57 and 81, speed: no behaviour changes).

57. Every look-up of a service's backend (``dynamodb_backends[account][region]``, many per Task)
    took moto's one global lock, listed the accounts and searched the registry of backends by
    equality. A backend for an account that is already there is answered without them: moto only
    adds an account under the lock, and its reset removes the account with the registration.
81. moto's Batch integration imports ``moto.batch`` for one enum, and ``moto.batch`` imports its
    models and through them all of EC2 (its instance types, regions and zones): about 2 s of every
    engine's start, for a service few machines call. The package is registered without running its
    ``__init__``; its backends load when first asked for (moto's backend registry asks for
    ``batch_backends`` when a Batch request first arrives).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.patching import Patch


def _known_accounts_without_the_lock(original: Callable[[Any, str], None]) -> Callable[[Any, str], None]:
    def create_account_specific_backend(self: Any, account_id: str) -> None:
        if dict.__contains__(self, account_id):
            return  # created, and registered, under the lock before; a reset would have removed it
        original(self, account_id)

    return create_account_specific_backend


PATCHES: tuple[Patch, ...] = (
    Patch(
        57,
        "moto.core.base_backend:BackendDict",
        "_create_account_specific_backend",
        _known_accounts_without_the_lock,
    ),
)


DEFERRED_PACKAGE = "moto.batch"
DEFERRED_NAMES = {"batch_backends": "moto.batch.models"}  # what moto.batch's __init__ exports


def defer_batch_models() -> None:
    """Fix 81: register ``moto.batch`` whose exports import on first use (no-op once imported)."""
    if DEFERRED_PACKAGE in sys.modules:
        return
    spec = importlib.util.find_spec(DEFERRED_PACKAGE)
    if spec is None or spec.loader is None:
        return
    package = importlib.util.module_from_spec(spec)

    def exported(name: str) -> Any:
        if name not in DEFERRED_NAMES:
            raise AttributeError(f"module {DEFERRED_PACKAGE!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(DEFERRED_NAMES[name]), name)
        setattr(package, name, value)
        return value

    package.__getattr__ = exported  # type: ignore[method-assign]  # PEP 562: a module's __getattr__
    sys.modules[DEFERRED_PACKAGE] = package
