"""moto's own plumbing, under every service (fix 57, speed: no behaviour changes).

57. Every look-up of a service's backend (``dynamodb_backends[account][region]``, many per Task)
    took moto's one global lock, listed the accounts and searched the registry of backends by
    equality. A backend for an account that is already there is answered without them: moto only
    adds an account under the lock, and its reset removes the account with the registration.
"""

from __future__ import annotations

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
