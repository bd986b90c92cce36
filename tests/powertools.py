"""Powertools for AWS Lambda's own persistence layer on a service's table, for tests that need
records Powertools itself wrote."""

from __future__ import annotations

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig

from sfn_idempotency.local import IdempotentService


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
