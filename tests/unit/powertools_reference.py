"""What the installed Powertools for AWS Lambda computes, for comparison with our key Lambda."""

from __future__ import annotations

import warnings
from typing import Any

from aws_lambda_powertools.utilities.idempotency.config import IdempotencyConfig
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer


class _KeyOnlyPersistence(BasePersistenceLayer):
    """Powertools' own key and hash code, without a table behind it."""

    def _get_record(self, idempotency_key: str) -> Any:
        raise NotImplementedError

    def _put_record(self, data_record: Any) -> None:
        raise NotImplementedError

    def _update_record(self, data_record: Any) -> None:
        raise NotImplementedError

    def _delete_record(self, data_record: Any) -> None:
        raise NotImplementedError


def powertools_key(event: Any, *, prefix: str, jmespath: str = "", hash_function: str = "md5") -> str | None:
    layer = _KeyOnlyPersistence()
    layer.configure(
        IdempotencyConfig(event_key_jmespath=jmespath, hash_function=hash_function), key_prefix=prefix
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Powertools warns when there is no key; None says so here
        return layer._get_hashed_idempotency_key(event)


def powertools_validation(event: Any, *, jmespath: str, hash_function: str = "md5") -> str:
    layer = _KeyOnlyPersistence()
    layer.configure(
        IdempotencyConfig(payload_validation_jmespath=jmespath, hash_function=hash_function), key_prefix="p"
    )
    return layer._get_hashed_payload(event)
