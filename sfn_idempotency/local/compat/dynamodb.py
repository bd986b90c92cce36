"""DynamoDB as the interpreter's integrations see it (fix 8)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.patching import Patch

_DYNAMODB_MODULE = "moto.dynamodb.models"
_ATOMIC_WRITES = ("put_item", "update_item", "delete_item", "transact_write_items")
_dynamodb_write_lock = threading.RLock()


def _atomic(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def write(*args: Any, **kwargs: Any) -> Any:
        with _dynamodb_write_lock:
            return original(*args, **kwargs)

    return write


PATCHES: tuple[Patch, ...] = tuple(
    Patch(8, f"{_DYNAMODB_MODULE}:DynamoDBBackend", operation, _atomic) for operation in _ATOMIC_WRITES
)
