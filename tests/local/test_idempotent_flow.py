"""The idempotent workflow end to end on moto's interpreter: outputs, records, business runs, paths.

One behavioural spec: every scenario runs on the standalone workflow and on a Task wrapped inline."""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

import pytest

from sfn_idempotency.deployed.records import owner_execution
from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.local.engine.cloud import EngineError
from sfn_idempotency.settings import example_settings
from tests.local.conftest import (
    FLAVOURS,
    Gate,
    ServiceFactory,
    claim_path,
    item_values,
    keyless_path,
    put_crashed_claim,
)

ORDER = {"orderId": "o-1", "amount": 25}
# A first run keyed by the ComputeKey Lambda
LAMBDA_KEYED_FIRST_RUN = ["ComputeKey", "RouteByKey", "ClaimComputedKey", "Execute", "Complete"]


def first_run_path(service: IdempotentService) -> list[str]:
    # (standalone, with the provable key: Claim, Execute, Complete; the three states)
    return [*claim_path(service), "Execute", "Complete"]


def replay_path(service: IdempotentService) -> list[str]:
    return [*claim_path(service), "Read", "RouteByRecord", "Replay"]


def takeover_path(service: IdempotentService) -> list[str]:
    # A lease that ran out is taken over in a state of its own (the metrics count it).
    return [*replay_path(service)[:-1], "TakeOverExpiredLease", "LeaseTakenOver", "Execute", "Complete"]


@pytest.fixture(params=[False, True], ids=["standalone", "inline"])
def inline(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture(params=FLAVOURS)
def query_language(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_first_run_places_the_order_and_completes_the_record(idempotent_service: IdempotentService):
    # When an order is placed for the first time
    result = idempotent_service.run(ORDER)

    # Then the business step ran once, its result is the output and the record holds it
    assert result.status == "SUCCEEDED"
    assert result.output["orderId"] == "o-1"
    assert result.output["status"] == "PLACED"
    assert idempotent_service.business_runs == 1
    assert idempotent_service.flow_states(result) == first_run_path(idempotent_service)
    # And the provable key called no key Lambda: the business step is the only one
    assert idempotent_service.cloud.lambdas.invocations(idempotent_service.compute_key_function) == 0
    record = idempotent_service.record_for(ORDER)
    assert record["status"] == {"S": "COMPLETED"}
    assert json.loads(record["data"]["S"]) == result.output


@pytest.mark.parametrize(
    "order",
    [{"orderId": "o-ü", "amount": 25}, {"orderId": "o-1", "amount": 25, "reference": 2**60}],
    ids=["a key outside the domain", "a number JSONata cannot hold"],
)
def test_an_event_the_provable_key_cannot_claim_goes_through_the_key_lambda(
    make_service: ServiceFactory, order: dict[str, Any]
):
    # Given a flow that claims by the provable key
    service = make_service()

    # When an order the provable key cannot claim runs, then again
    first, again = service.run(order), service.run(dict(order))

    # Then it went through ComputeKey, claimed with the Lambda's key, and the duplicate replayed
    assert service.flow_states(first) == [*claim_path(service), "RouteByEvent", *LAMBDA_KEYED_FIRST_RUN]
    assert service.flow_states(again)[-1] == "Replay"
    assert again.output == first.output
    assert service.business_runs == 1
    assert service.record_for(order) is not None  # the key the Lambda computes, Powertools'


def test_a_key_the_provable_key_can_never_compute_starts_at_the_key_lambda(make_service: ServiceFactory):
    # Given a key JSONata cannot compute as Powertools does (a hash $hash lacks)
    service = make_service(IDEMPOTENCY_HASH_FUNCTION="blake2b")

    # When an order runs, then again
    first, again = service.run(ORDER), service.run(dict(ORDER))

    # Then the flow starts at ComputeKey, without Claim's two states, and replays as ever
    assert service.flow_states(first) == LAMBDA_KEYED_FIRST_RUN
    assert service.flow_states(again)[-1] == "Replay"
    assert service.business_runs == 1


def test_duplicate_replays_the_first_output_exactly(idempotent_service: IdempotentService):
    # Given a placed order
    first = idempotent_service.run(ORDER)

    # When the same order arrives again (a client resend, an event redelivery)
    duplicate = idempotent_service.run(dict(ORDER))

    # Then the output is the first run's, byte for byte, and the order was placed once
    assert duplicate.status == "SUCCEEDED"
    assert duplicate.output_json == first.output_json
    assert idempotent_service.business_runs == 1
    assert idempotent_service.flow_states(duplicate) == replay_path(idempotent_service)


def test_record_attributes_types_and_units(idempotent_service: IdempotentService, local_cloud: LocalCloud):
    # Given the engine's clock; When an order is placed
    before_ms = local_cloud.clock.now_ms()
    result = idempotent_service.run(ORDER)
    after_ms = local_cloud.clock.now_ms()

    # Then the record has exactly DESIGN.md's attributes, types and units
    values = item_values(idempotent_service.record_for(ORDER))
    assert set(values) == {
        "id",
        "status",
        "expiration",
        "in_progress_expiration",
        "data",
        "validation",
        "owner",
        "completed_at",
    }
    assert values["id"] == ("S", idempotent_service.key_for(ORDER))
    assert values["id"][1].startswith("orders#")
    assert values["status"] == ("S", "COMPLETED")
    assert values["owner"][0] == "S"
    # this execution, its run (never redriven: 0) and this claim's token
    assert re.fullmatch(rf"{re.escape(result.arn)}#0#[0-9a-f]{{32}}", values["owner"][1])
    assert values["validation"] == ("S", "")
    assert values["data"][0] == "S"
    settings = idempotent_service.settings
    expiration_type, expiration = values["expiration"]
    assert expiration_type == "N"
    # epoch seconds: completion is bounded by the lease, and the replay window counts from there
    assert before_ms // 1000 + settings.expires_after_seconds <= int(expiration)
    assert int(expiration) <= after_ms // 1000 + settings.lease + settings.expires_after_seconds
    lease_type, lease = values["in_progress_expiration"]
    assert lease_type == "N"
    # epoch milliseconds: the key's computation plus the lease, which outlasts every attempt of the
    # business step at its full timeout
    assert settings.lease > 4 * settings.timeout_seconds
    assert before_ms + settings.lease * 1000 <= int(lease) <= after_ms + settings.lease * 1000
    # ISO 8601 text: when Complete was entered (the replay marker's completedAt)
    completed_type, completed_at = values["completed_at"]
    assert completed_type == "S"
    completed_ms = datetime.datetime.fromisoformat(completed_at).timestamp() * 1000
    assert before_ms - 1000 <= completed_ms <= after_ms + 1000


@pytest.mark.parametrize("falsy", [{}, [], 0, "", False, None])
def test_falsy_results_replay_as_themselves(make_service: ServiceFactory, falsy):
    # Given a business step whose result is falsy
    service = make_service(lambda event, context: event["result"], IDEMPOTENCY_EVENT_KEY_JMESPATH="id")
    event = {"id": "falsy", "result": falsy}

    # When run twice
    first = service.run(event)
    replay = service.run(event)

    # Then both outputs are that value, and the second is a replay
    assert first.status == replay.status == "SUCCEEDED"
    assert first.output == falsy
    assert replay.output_json == first.output_json
    assert service.flow_states(replay)[-1] == "Replay"
    assert service.business_runs == 1


def test_concurrent_duplicate_is_told_to_retry_while_the_first_runs(make_service: ServiceFactory, gate: Gate):
    # Given a first execution that holds the claim and is still placing the order
    service = make_service(gate.handler)
    first = service.start(ORDER)
    assert gate.entered.wait(10)

    # When a duplicate arrives meanwhile
    duplicate = service.run(ORDER)

    # Then it fails with IdempotencyAlreadyInProgressError naming the key and the lease end
    assert duplicate.status == "FAILED"
    assert duplicate.error == "IdempotencyAlreadyInProgressError"
    key = service.key_for(ORDER)
    lease_end = service.record(key)["in_progress_expiration"]["N"]
    assert f"holds idempotency key {key} until {lease_end}" in duplicate.cause
    assert first in duplicate.cause

    # And once the first finishes, a retry of the duplicate replays it; the order was placed once
    gate.open()
    first_result = service.cloud.wait(first)
    retried = service.run(ORDER)
    assert retried.output_json == first_result.output_json
    assert service.business_runs == 1


def test_business_failure_releases_the_claim_and_keeps_error_and_cause(idempotent_service: IdempotentService):
    # Given an order the business step rejects
    bad_order = {"orderId": "o-bad", "amount": -5}

    # When it runs
    result = idempotent_service.run(bad_order)

    # Then the execution fails with the business step's own error and cause, and no record blocks a retry
    assert result.status == "FAILED"
    assert result.error == "InvalidOrderError"
    cause = json.loads(result.cause)
    assert cause["errorType"] == "InvalidOrderError"
    assert cause["errorMessage"] == "amount must be a positive number, got -5"
    assert idempotent_service.flow_states(result) == [
        *claim_path(idempotent_service),
        "Execute",
        "Release",
        "RouteBusinessError",
        "BusinessFailed",
    ]
    assert idempotent_service.record_for(bad_order) is None

    # And the retry runs the business step again
    again = idempotent_service.run(bad_order)
    assert again.error == "InvalidOrderError"
    assert idempotent_service.business_runs == 2


def test_failure_then_success_runs_again(idempotent_service: IdempotentService, local_cloud: LocalCloud):
    # Given a business step that fails on its first call only
    local_cloud.faults.function_error(
        idempotent_service.business_function, "DownstreamUnavailable", "503", calls=1
    )

    # When the order runs, fails, and is retried
    failed = idempotent_service.run(ORDER)
    retried = idempotent_service.run(ORDER)

    # Then the retry placed the order, and it is recorded
    assert failed.error == "DownstreamUnavailable"
    assert retried.status == "SUCCEEDED"
    assert idempotent_service.flow_states(retried) == first_run_path(idempotent_service)
    assert idempotent_service.business_runs == 2
    assert idempotent_service.record_for(ORDER)["status"]["S"] == "COMPLETED"


def test_after_expiry_the_event_runs_again(idempotent_service: IdempotentService, local_cloud: LocalCloud):
    # Given a completed order
    first = idempotent_service.run(ORDER)

    # When the clock moves past the record's expiration (no sleeping)
    local_cloud.clock.advance(
        idempotent_service.settings.lease + idempotent_service.settings.expires_after_seconds + 1
    )
    again = idempotent_service.run(ORDER)

    # Then the order is placed again, with a new result
    assert idempotent_service.flow_states(again) == first_run_path(idempotent_service)
    assert again.output["placedOrderId"] != first.output["placedOrderId"]
    assert idempotent_service.business_runs == 2


def test_just_before_expiry_it_still_replays(idempotent_service: IdempotentService, local_cloud: LocalCloud):
    first = idempotent_service.run(ORDER)
    local_cloud.clock.advance(idempotent_service.settings.expires_after_seconds - 5)
    assert idempotent_service.run(ORDER).output_json == first.output_json
    assert idempotent_service.business_runs == 1


def test_stale_claim_of_a_crashed_run_blocks_until_its_lease_ends(
    idempotent_service: IdempotentService, local_cloud: LocalCloud
):
    # Given the INPROGRESS record of an execution that crashed without releasing it
    lease_ms = idempotent_service.settings.lease * 1000
    key = put_crashed_claim(idempotent_service, ORDER, local_cloud.clock.now_ms() + lease_ms)

    # When the order arrives during the lease, Then it is in progress
    blocked = idempotent_service.run(ORDER)
    assert blocked.error == "IdempotencyAlreadyInProgressError"
    assert idempotent_service.business_runs == 0

    # When the lease has ended, Then the claim is taken over and the order placed once
    local_cloud.clock.advance(lease_ms / 1000 + 1)
    taken_over = idempotent_service.run(ORDER)
    assert taken_over.status == "SUCCEEDED"
    assert idempotent_service.flow_states(taken_over) == takeover_path(idempotent_service)
    assert idempotent_service.business_runs == 1
    assert owner_execution(idempotent_service.record(key)["owner"]["S"]) == taken_over.arn


def test_payload_mismatch_for_the_same_key_is_a_validation_error(make_service: ServiceFactory):
    # Given validation on the amount, and a completed order
    service = make_service(IDEMPOTENCY_PAYLOAD_VALIDATION_JMESPATH="amount")
    first = service.run(ORDER)

    # When the same order id arrives with another amount
    tampered = service.run({**ORDER, "amount": 9999})

    # Then it is rejected, and the stored result is untouched
    assert tampered.status == "FAILED"
    assert tampered.error == "IdempotencyValidationError"
    assert service.key_for(ORDER) in tampered.cause
    assert service.flow_states(tampered)[-2:] == ["RouteByRecord", "ValidationFailed"]
    assert json.loads(service.record_for(ORDER)["data"]["S"]) == first.output
    # And the same payload still replays
    assert service.run(ORDER).output_json == first.output_json
    assert service.business_runs == 1


def test_no_key_runs_the_business_step_without_a_record(idempotent_service: IdempotentService):
    # Given an event without an order id
    event = {"amount": 3, "note": "no orderId", "orderId": None}

    # When it runs twice
    results = [idempotent_service.run(event) for _ in range(2)]

    # Then each run calls the business step (no idempotency without a key) and leaves no record
    assert [r.error for r in results] == ["InvalidOrderError", "InvalidOrderError"]
    # (the business step's own error leaves as it is: only a States.* name is renamed)
    assert idempotent_service.flow_states(results[0]) == [
        *keyless_path(idempotent_service),
        "ExecuteWithoutRecord",
        "RouteUnrecordedError",
        "BusinessFailed",
    ]
    assert idempotent_service.business_runs == 2
    assert idempotent_service.records() == []


def test_no_key_with_a_business_step_that_succeeds(make_service: ServiceFactory):
    service = make_service(lambda event, context: {"echo": event}, IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId")
    results = [service.run({"other": 1}) for _ in range(2)]
    assert [r.output for r in results] == [{"echo": {"other": 1}}] * 2
    assert service.business_runs == 2
    assert service.records() == []


def test_no_key_fails_when_a_key_is_required(make_service: ServiceFactory):
    # Given a configuration that requires a key
    service = make_service(IDEMPOTENCY_RAISE_ON_NO_KEY="true")

    # When an event without one runs
    result = service.run({"amount": 3})

    # Then IdempotencyKeyError, nothing ran, nothing stored
    assert result.status == "FAILED"
    assert result.error == "IdempotencyKeyError"
    assert "No data found to create a hashed idempotency key" in result.cause
    # (the provable key leaves a required key to the Lambda, which names the error)
    assert service.flow_states(result) == [*keyless_path(service), "ComputeKey"]
    assert service.business_runs == 0
    assert service.records() == []


def test_disabled_runs_the_business_step_directly(make_service: ServiceFactory):
    service = make_service(POWERTOOLS_IDEMPOTENCY_DISABLED="true")
    results = [service.run(ORDER) for _ in range(2)]
    assert all(r.status == "SUCCEEDED" for r in results)
    assert results[0].output["placedOrderId"] != results[1].output["placedOrderId"]
    assert service.flow_states(results[0]) == [*keyless_path(service), "ExecuteWithoutRecord"]
    assert service.business_runs == 2
    assert service.records() == []


def same_for_both(cause: str, execution_arn: str) -> str:
    """The cause without what differs per execution: its ARN and the Lambda's request id."""
    return re.sub(r'"requestId": ?"[^"]+"', '"requestId":"<id>"', cause.replace(execution_arn, "<execution>"))


def test_both_flavours_give_the_same_outputs_records_and_errors(local_cloud: LocalCloud):
    # Given the flow in JSONPath and in JSONata, each with its own table, a deterministic business step
    def business(event, context):
        if event.get("reject"):
            raise type("OrderRejected", (Exception,), {})(f"order {event['orderId']} rejected")
        return {"orderId": event["orderId"], "total": event["amount"] * 2, "note": 'say "hi"', "none": None}

    settings = example_settings({}, IDEMPOTENCY_PAYLOAD_VALIDATION_JMESPATH="amount")
    scenarios = [
        {"orderId": "a", "amount": 2},
        {"orderId": "a", "amount": 2},  # replay
        {"orderId": "a", "amount": 3},  # validation
        {"orderId": "b", "amount": 1, "reject": True},  # business error, released
        {"amount": 1},  # no key: the business step runs without a record (and fails on its own)
    ]

    def observed(language: str) -> tuple[list[Any], list[dict[str, Any]]]:
        service = IdempotentService(
            local_cloud,
            settings,
            name=f"flavour-{language}",
            business_handler=business,
            query_language=language,
        )
        results = [service.run(event) for event in scenarios]
        outcomes = [
            (r.status, r.output, r.error, same_for_both(r.cause or "", r.arn), r.states) for r in results
        ]
        records = [
            {
                k: v
                for k, v in record.items()
                if k not in ("owner", "expiration", "in_progress_expiration", "completed_at")
            }
            for record in service.records()
        ]
        return outcomes, records

    # When the same events run through both
    jsonpath, jsonata = observed("JSONPath"), observed("JSONata")

    # Then outputs, states, error names, causes and records are the same
    for ours, theirs in zip(jsonpath[0], jsonata[0], strict=True):
        assert theirs == ours
    assert jsonata[1] == jsonpath[1]
    errors = [outcome[2] for outcome in jsonpath[0]]
    assert errors == [None, None, "IdempotencyValidationError", "OrderRejected", "KeyError"]


def test_a_table_that_does_not_exist_is_refused_when_the_service_is_built(local_cloud: LocalCloud):
    # When a service is built on a table nobody created
    with pytest.raises(EngineError, match=r"'orders-records' does not exist .*cloud\.create_table"):
        IdempotentService(local_cloud, table_name="orders-records")

    # Then nothing was deployed; once the table exists, the service records into it
    assert local_cloud.sfn.list_state_machines()["stateMachines"] == []
    local_cloud.create_table("orders-records")
    service = IdempotentService(local_cloud, table_name="orders-records")
    assert service.run({"orderId": "o-table", "amount": 1}).status == "SUCCEEDED"
    records = local_cloud.dynamodb.scan(TableName="orders-records")["Items"]
    assert [record["status"]["S"] for record in records] == ["COMPLETED"]
