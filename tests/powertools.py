"""Powertools for AWS Lambda on a service's table: its own persistence layer, for tests that need
records Powertools itself wrote, and a function it guards, configured like the service."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

from sfn_idempotency.lambdas.place_order.orders import place_order
from sfn_idempotency.local import IdempotentService
from sfn_idempotency.local.engine.lambdas import LocalLambdaContext


def powertools_store(service: IdempotentService, validation: str = "") -> DynamoDBPersistenceLayer:
    """Powertools' own persistence layer on the service's table, configured like the service."""
    settings = service.settings
    store = DynamoDBPersistenceLayer(
        table_name=service.table_name, boto3_client=service.cloud.client("dynamodb")
    )
    config = IdempotencyConfig(
        event_key_jmespath=settings.event_key_jmespath,
        payload_validation_jmespath=validation,
        hash_function=settings.hash_function,
        expires_after_seconds=settings.expires_after_seconds,
    )
    store.configure(config, key_prefix=settings.key_prefix)
    return store


@dataclass
class PowertoolsGuarded:
    place: Callable[..., dict[str, Any]]
    runs: list[dict[str, Any]]


def guarded_by_powertools(service: IdempotentService) -> PowertoolsGuarded:
    """``place_order`` guarded by Powertools, configured like the workflow (prefix, JMESPath, hash)."""
    settings = service.settings
    persistence = DynamoDBPersistenceLayer(
        table_name=service.table_name, boto3_client=service.cloud.client("dynamodb")
    )
    config = IdempotencyConfig(
        event_key_jmespath=settings.event_key_jmespath, hash_function=settings.hash_function
    )
    config.register_lambda_context(
        LocalLambdaContext("powertools", "arn:aws:lambda:::function:powertools", 30)
    )
    runs: list[dict[str, Any]] = []

    @idempotent_function(
        data_keyword_argument="order",
        persistence_store=persistence,
        config=config,
        key_prefix=settings.key_prefix,
    )
    def guarded(order: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = place_order(order)
        runs.append(result)
        return result

    return PowertoolsGuarded(guarded, runs)
