"""A Powertools for AWS Lambda function and the state machine share one table: each replays the other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

from sfn_idempotency.lambdas.place_order.orders import place_order
from sfn_idempotency.local import IdempotentService
from sfn_idempotency.local.lambdas import LocalLambdaContext

ORDER = {"orderId": "o-shared", "amount": 12}


@dataclass
class PowertoolsGuarded:
    place: Callable[..., dict[str, Any]]
    runs: list[dict[str, Any]]


@pytest.fixture
def powertools_place_order(idempotent_service: IdempotentService) -> PowertoolsGuarded:
    """``place_order`` guarded by Powertools, configured like the workflow (prefix, JMESPath, hash)."""
    settings = idempotent_service.settings
    persistence = DynamoDBPersistenceLayer(
        table_name=idempotent_service.table_name, boto3_client=idempotent_service.cloud.client("dynamodb")
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


def test_state_machine_replays_what_powertools_recorded(
    idempotent_service: IdempotentService, powertools_place_order
):
    # Given an order placed by a Powertools-guarded function
    placed = powertools_place_order.place(order=ORDER)

    # When the same order reaches the state machine
    result = idempotent_service.run(ORDER)

    # Then the state machine replays Powertools' result; its own business step never ran
    assert result.states[-1] == "Replay"
    assert result.output == placed
    assert idempotent_service.business_runs == 0


def test_powertools_replays_what_the_state_machine_recorded(
    idempotent_service: IdempotentService, powertools_place_order
):
    # Given an order placed by the state machine
    first = idempotent_service.run(ORDER)
    assert first.states[-1] == "Complete"

    # When the same order reaches the Powertools-guarded function
    replayed = powertools_place_order.place(order=ORDER)

    # Then Powertools returns the state machine's result without running the function
    assert replayed == first.output
    assert powertools_place_order.runs == []
