"""A Powertools for AWS Lambda function and the state machine share one table: each replays the other.

Every test runs against the standalone workflow and against a Task wrapped inline (wrap_state): the
records an inline step writes are the same Powertools records."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from sfn_idempotency.deployed.records import owner_execution
from sfn_idempotency.lambdas.place_order.orders import place_order
from sfn_idempotency.local import IdempotentService
from sfn_idempotency.settings import example_settings
from tests.local.conftest import FLAVOURS
from tests.powertools import PowertoolsGuarded, guarded_by_powertools, powertools_store

ORDER = {"orderId": "o-shared", "amount": 12}


@pytest.fixture(params=[False, True], ids=["standalone", "inline"])
def inline(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture(params=FLAVOURS)
def query_language(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def powertools_place_order(idempotent_service: IdempotentService) -> PowertoolsGuarded:
    return guarded_by_powertools(idempotent_service)


def test_state_machine_replays_what_powertools_recorded(
    idempotent_service: IdempotentService, powertools_place_order
):
    # Given an order placed by a Powertools-guarded function
    placed = powertools_place_order.place(order=ORDER)

    # When the same order reaches the state machine
    result = idempotent_service.run(ORDER)

    # Then the state machine replays Powertools' result; its own business step never ran
    assert idempotent_service.flow_states(result)[-1] == "Replay"
    assert result.output == placed
    assert idempotent_service.business_runs == 0


def test_powertools_replays_what_the_state_machine_recorded(
    idempotent_service: IdempotentService, powertools_place_order
):
    # Given an order placed by the state machine
    first = idempotent_service.run(ORDER)
    assert idempotent_service.flow_states(first)[-1] == "Complete"

    # When the same order reaches the Powertools-guarded function
    replayed = powertools_place_order.place(order=ORDER)

    # Then Powertools returns the state machine's result without running the function
    assert replayed == first.output
    assert powertools_place_order.runs == []


# -- every routing state, on records Powertools itself wrote ------------------------------------------
@pytest.mark.parametrize("remaining_ms", [30_000, None], ids=["with-lease", "without-lease"])
def test_a_powertools_claim_in_progress_is_in_progress_here(
    idempotent_service: IdempotentService, remaining_ms: int | None
):
    # Given an INPROGRESS record written by Powertools: no owner, and a lease only with a Lambda context
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Powertools warns that it has no remaining time without one
        powertools_store(idempotent_service).save_inprogress(
            data=ORDER, remaining_time_in_millis=remaining_ms
        )
    written = idempotent_service.record_for(ORDER)
    assert "owner" not in written

    # When the same order reaches the state machine
    result = idempotent_service.run(ORDER)

    # Then it is in progress (a named, retryable error, not States.Runtime) and nothing changed
    assert result.error == "IdempotencyAlreadyInProgressError"
    assert idempotent_service.flow_states(result)[-2:] == ["RouteByRecord", "AlreadyInProgressUntracked"]
    assert idempotent_service.key_for(ORDER) in result.cause
    assert idempotent_service.business_runs == 0
    assert idempotent_service.record_for(ORDER) == written


@pytest.mark.parametrize(
    ("powertools_validation", "our_validation", "amount", "outcome"),
    [
        ("amount", "amount", ORDER["amount"], "Replay"),
        ("amount", "amount", 999, "ValidationFailed"),
        ("", "", ORDER["amount"], "Replay"),
        ("amount", "", 999, "Replay"),  # we do not validate: any payload replays, as Powertools would
        ("", "amount", ORDER["amount"], "ValidationFailed"),  # no hash stored: Powertools refuses too
    ],
)
def test_a_completed_powertools_record_replays_or_fails_validation(
    local_cloud, inline: bool, powertools_validation: str, our_validation: str, amount: int, outcome: str
):
    # Given a COMPLETED record written by Powertools, with or without its payload hash
    service = IdempotentService(
        local_cloud,
        example_settings({}, IDEMPOTENCY_PAYLOAD_VALIDATION_JMESPATH=our_validation),
        inline=inline,
    )
    placed = place_order(ORDER)
    powertools_store(service, powertools_validation).save_success(data=ORDER, result=placed)

    # When the order (or one with another amount) reaches the state machine
    result = service.run({**ORDER, "amount": amount})

    # Then it replays Powertools' result exactly, or refuses with the validation error
    assert service.flow_states(result)[-1] == outcome
    if outcome == "Replay":
        assert result.output == placed
    else:
        assert result.error == "IdempotencyValidationError"
    assert service.business_runs == 0


def test_an_expired_powertools_record_is_claimed_and_run_again(
    idempotent_service: IdempotentService, local_cloud
):
    # Given a COMPLETED Powertools record whose expiration has passed
    powertools_store(idempotent_service).save_success(data=ORDER, result=place_order(ORDER))
    local_cloud.clock.advance(idempotent_service.settings.expires_after_seconds + 1)

    # When the order reaches the state machine, Then it claims the key and places the order again
    result = idempotent_service.run(ORDER)
    assert idempotent_service.flow_states(result)[-1] == "Complete"
    assert idempotent_service.business_runs == 1
    assert owner_execution(idempotent_service.record_for(ORDER)["owner"]["S"]) == result.arn


def test_a_whole_number_float_keys_as_powertools_in_jsonpath_and_as_an_integer_in_jsonata(
    make_service: Any, query_language: str
):
    # Given a workflow keyed on the order and its amount, and an order whose amount is a
    # whole-number float, as its client wrote it: 5.0
    service = make_service(IDEMPOTENCY_EVENT_KEY_JMESPATH="[orderId, amount]")
    powertools = guarded_by_powertools(service)
    order = {"orderId": "o-float", "amount": 5.0}

    # When the state machine places it, then a Powertools-guarded function gets the same order
    first = service.run(order)
    recorded_under_the_float = service.record_for(order) is not None
    replayed = powertools.place(order=dict(order))

    # Then in JSONPath the key Lambda gets 5.0, as AWS hands a JSONPath value on (recorded:
    # test_invoke_json_values[0.0]), and the key is Powertools' own: Powertools replays
    assert first.status == "SUCCEEDED"
    if query_language == "JSONPath":
        assert recorded_under_the_float
        assert replayed == first.output
        assert powertools.runs == []
    # And in JSONata the number is a double, written 5 (as AWS writes a whole JSONata number), so
    # the key is that of 5: Powertools, given 5.0 directly, computes another key and runs again
    # (docs/concepts/records.md says so)
    else:
        assert not recorded_under_the_float
        assert service.record_for({**order, "amount": 5}) is not None
        assert len(powertools.runs) == 1
