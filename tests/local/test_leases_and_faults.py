"""Fencing, business timeouts, DynamoDB faults and the bounded re-claim."""

from __future__ import annotations

import json

import pytest

from sfn_idempotency.deployed.records import owner_execution
from sfn_idempotency.local import IdempotentService, LocalCloud
from tests.local.conftest import FLAVOURS, Gate, ServiceFactory, TwoGates, claim_path, put_crashed_claim

ORDER = {"orderId": "o-lease", "amount": 7}
THROTTLED = "ProvisionedThroughputExceededException"


class LateFailure(Exception):
    pass


@pytest.fixture(params=FLAVOURS)
def query_language(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_a_run_whose_lease_was_taken_over_cannot_complete(make_service: ServiceFactory, gate: Gate):
    # Given execution A holding the claim, its business step still running
    service = make_service(gate.handler)
    late = service.start(ORDER)
    assert gate.entered.wait(10)

    # And B taking the key over once A's lease ended, and completing it
    service.cloud.clock.advance(service.settings.lease + 1)
    newer = service.run(ORDER)
    assert newer.status == "SUCCEEDED"
    assert newer.states[-1] == "Complete"

    # When A finishes late
    gate.open()
    late_result = service.cloud.wait(late)

    # Then A is fenced off: it fails with IdempotencyPersistenceError and B's result stays
    assert late_result.status == "FAILED"
    assert late_result.error == "IdempotencyPersistenceError"
    assert "another execution claimed the key" in late_result.cause
    assert late_result.states[-2:] == ["Complete", "LeaseLost"]
    record = service.record_for(ORDER)
    assert owner_execution(record["owner"]["S"]) == newer.arn
    assert json.loads(record["data"]["S"]) == newer.output
    assert service.business_runs == 2


def test_a_late_run_cannot_complete_over_a_newer_claim_in_progress(make_service: ServiceFactory):
    # Given A holding the claim, its lease ended, and B holding it now, both business steps running
    gates = TwoGates()
    service = make_service(gates.handler)
    try:
        late = service.start(ORDER)
        assert gates.entered[0].wait(10)
        service.cloud.clock.advance(service.settings.lease + 1)
        newer = service.start(ORDER)
        assert gates.entered[1].wait(10)
        assert owner_execution(service.record_for(ORDER)["owner"]["S"]) == newer

        # When A finishes while B's claim is still INPROGRESS
        gates.gates[0].set()
        late_result = service.cloud.wait(late)

        # Then A is fenced by the owner clause alone: it fails, and the record is still B's claim
        assert late_result.error == "IdempotencyPersistenceError"
        assert late_result.states[-2:] == ["Complete", "LeaseLost"]
        record = service.record_for(ORDER)
        assert (owner_execution(record["owner"]["S"]), record["status"]["S"]) == (newer, "INPROGRESS")
        assert "data" not in record

        # And B completes its own claim
        gates.gates[1].set()
        assert service.cloud.wait(newer).states[-1] == "Complete"
    finally:
        gates.open_all()


def test_a_run_whose_lease_was_taken_over_cannot_release_the_newer_claim(make_service: ServiceFactory):
    # Given A holding the claim, and B taking it over after A's lease ended
    gate = Gate(fail_with=LateFailure("A failed after its lease"))
    service = make_service(gate.handler)
    late = service.start(ORDER)
    assert gate.entered.wait(10)
    service.cloud.clock.advance(service.settings.lease + 1)
    newer = service.run(ORDER)

    # When A fails and tries to release the key
    gate.open()
    late_result = service.cloud.wait(late)

    # Then A fails with its own error, and B's completed record is untouched
    assert late_result.error == "LateFailure"
    assert late_result.states[-3:] == ["Release", "RouteBusinessError", "BusinessFailed"]
    record = service.record_for(ORDER)
    assert owner_execution(record["owner"]["S"]) == newer.arn
    assert record["status"]["S"] == "COMPLETED"
    assert service.run(ORDER).output_json == newer.output_json


@pytest.mark.slow
def test_business_step_past_its_timeout_is_released(make_service: ServiceFactory, local_cloud: LocalCloud):
    # Given a one-second business timeout and a business step that hangs on its first call
    service = make_service(IDEMPOTENCY_TIMEOUT_SECONDS="1")
    local_cloud.faults.function_delay(service.business_function, 30, calls=1)

    # When the order runs
    result = service.run(ORDER)

    # Then the step times out, the claim is released, and a retry runs once more
    assert result.status == "FAILED"
    # (a States.* name is never re-thrown: ours, with the original in the cause)
    assert result.error == "BusinessStepTimeoutError"
    assert '"Error":"States.Timeout"' in result.cause
    assert result.states[-3:] == ["Release", "RouteBusinessError", "BusinessTimedOut"]
    assert service.record_for(ORDER) is None
    assert service.run(ORDER).status == "SUCCEEDED"
    assert service.business_runs == 2


@pytest.mark.parametrize(
    ("operation", "calls"),
    [("PutItem", [1, 2]), ("UpdateItem", [1, 2, 3]), ("GetItem", [1]), ("DeleteItem", [1, 2])],
)
def test_transient_dynamodb_errors_are_retried(
    idempotent_service: IdempotentService, local_cloud: LocalCloud, operation, calls
):
    # Given a first run and a failing run, so every DynamoDB state has been used once
    failing = {"orderId": "o-fail", "amount": 0}
    # And throttling on the first attempts of one operation
    local_cloud.faults.api_error("dynamodb", operation, THROTTLED, calls=calls)

    # When orders, duplicates and failures run
    first = idempotent_service.run(ORDER)
    replay = idempotent_service.run(ORDER)
    failed = idempotent_service.run(failing)

    # Then the throttling was absorbed: exactly-once holds and nothing is stuck
    assert first.status == "SUCCEEDED"
    assert replay.output_json == first.output_json
    assert failed.error == "InvalidOrderError"
    assert idempotent_service.business_runs == 2
    assert idempotent_service.record_for(failing) is None
    # And the throttle fired exactly as planned: each throttled call is one failed attempt in a history
    throttled = [
        event
        for result in (first, replay, failed)
        for event in result.history
        if event["type"] == "TaskFailed"
        and event["taskFailedEventDetails"]["error"] == f"DynamoDB.{THROTTLED}"
    ]
    assert len(throttled) == len(calls)


def test_claim_that_keeps_failing_is_a_persistence_error(
    idempotent_service: IdempotentService, local_cloud: LocalCloud
):
    local_cloud.faults.api_error(
        "dynamodb", "PutItem", "AccessDeniedException", message="no dynamodb:PutItem"
    )
    result = idempotent_service.run(ORDER)
    assert result.error == "IdempotencyPersistenceError"
    # AWS names an error the SDK does not model by the service's generic exception, the code in the cause
    assert "DynamoDB.AmazonDynamoDBException" in result.cause
    assert "Error Code: AccessDeniedException" in result.cause
    assert idempotent_service.key_for(ORDER) in result.cause
    assert idempotent_service.business_runs == 0
    assert idempotent_service.records() == []


def test_completion_that_keeps_failing_leaves_the_claim_until_its_lease_ends(
    idempotent_service: IdempotentService, local_cloud: LocalCloud
):
    # Given completion failing for good (throttled beyond every retry)
    local_cloud.faults.api_error("dynamodb", "UpdateItem", THROTTLED, calls=range(1, 6))

    # When the order runs
    result = idempotent_service.run(ORDER)

    # Then IdempotencyPersistenceError, and the record stays INPROGRESS (the business step did run)
    assert result.error == "IdempotencyPersistenceError"
    assert THROTTLED in result.cause
    assert idempotent_service.business_runs == 1
    assert idempotent_service.record_for(ORDER)["status"]["S"] == "INPROGRESS"
    assert idempotent_service.run(ORDER).error == "IdempotencyAlreadyInProgressError"

    # And once the lease has ended the key can be claimed again
    local_cloud.clock.advance(idempotent_service.settings.lease + 1)
    assert idempotent_service.run(ORDER).status == "SUCCEEDED"


def test_release_that_fails_still_reports_the_business_error(
    idempotent_service: IdempotentService, local_cloud: LocalCloud
):
    local_cloud.faults.api_error("dynamodb", "DeleteItem", "AccessDeniedException")
    bad = {"orderId": "o-bad", "amount": -1}
    result = idempotent_service.run(bad)
    assert result.error == "InvalidOrderError"
    assert result.states[-3:] == ["Release", "RouteBusinessError", "BusinessFailed"]
    # the lease bounds the lock the failed release left behind
    local_cloud.clock.advance(idempotent_service.settings.lease + 1)
    states = idempotent_service.run(bad).states
    expected = [
        *claim_path(idempotent_service),
        "Read",
        "RouteByRecord",
        "TakeOverExpiredLease",
        "LeaseTakenOver",
    ]
    assert states[: len(expected)] == expected
    assert states[len(expected)] == "Execute"


def test_record_that_keeps_vanishing_ends_in_inconsistent_state(
    idempotent_service: IdempotentService, local_cloud: LocalCloud
):
    # Given a claim that always reports a conflict, and no record to read
    local_cloud.faults.api_error("dynamodb", "PutItem", "ConditionalCheckFailedException")

    # When the order runs
    result = idempotent_service.run(ORDER)

    # Then it claims again a bounded number of times, then gives up with a named error
    assert result.error == "IdempotencyInconsistentStateError"
    # (the first by the provable key, each other by ClaimComputedKey)
    claims = result.states.count("Claim") + result.states.count("ClaimComputedKey")
    assert claims == idempotent_service.settings.max_claim_attempts
    assert idempotent_service.business_runs == 0


def test_a_completion_retried_after_its_write_landed_still_succeeds(
    idempotent_service: IdempotentService, local_cloud: LocalCloud
):
    # Given Complete's first write landing in DynamoDB, its answer lost (a 500 after the fact)
    local_cloud.faults.api_error(
        "dynamodb", "UpdateItem", "InternalServerError", status_code=500, calls=1, applied=True
    )

    # When the order runs (Complete's Retry writes again over its own COMPLETED record)
    result = idempotent_service.run(ORDER)

    # Then the execution succeeds with its result, once, instead of reporting a lost lease
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.states[-1] == "Complete"
    failures = [e["taskFailedEventDetails"]["error"] for e in result.history if e["type"] == "TaskFailed"]
    assert failures == ["DynamoDB.InternalServerErrorException"]
    record = idempotent_service.record_for(ORDER)
    assert (record["status"]["S"], owner_execution(record["owner"]["S"])) == ("COMPLETED", result.arn)
    assert json.loads(record["data"]["S"]) == result.output
    assert idempotent_service.business_runs == 1


def test_a_takeover_that_loses_the_race_is_in_progress(
    idempotent_service: IdempotentService, local_cloud: LocalCloud
):
    # Given the claim of a crashed run whose lease has ended
    put_crashed_claim(idempotent_service, ORDER, local_cloud.clock.now_ms() - 1)
    # And another execution that takes it over between this one's Read and its takeover (the
    # takeover's conditional put is the second PutItem, and fails its condition)
    local_cloud.faults.api_error("dynamodb", "PutItem", "ConditionalCheckFailedException", calls=2)

    # When the order arrives, Then it is in progress, and the business step did not run
    result = idempotent_service.run(ORDER)
    assert result.error == "IdempotencyAlreadyInProgressError"
    assert result.states[-4:] == [
        "RouteByRecord",
        "TakeOverExpiredLease",
        "StillInProgress",
        "AlreadyInProgress",
    ]
    assert idempotent_service.business_runs == 0


def test_a_claim_retried_after_its_write_landed_runs_the_step(query_language: str, local_cloud: LocalCloud):
    # Given the Claim's first write landing in DynamoDB, its answer lost (found by the explorer:
    # the retried put failed its condition on the execution's own claim, and the execution
    # refused itself as in progress, leaving its claim to the release workflow)
    service = IdempotentService(local_cloud, query_language=query_language)
    local_cloud.faults.api_error(
        "dynamodb", "PutItem", "InternalServerError", status_code=500, calls=1, applied=True
    )

    # When the order runs (Claim's Retry puts again, over its own claim)
    result = service.run(ORDER)

    # Then the retried claim is its own: the order is placed once and completed
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert service.flow_states(result)[:2] == ["Claim", "Execute"]
    record = service.record_for(ORDER)
    assert (record["status"]["S"], owner_execution(record["owner"]["S"])) == ("COMPLETED", result.arn)
    assert service.business_runs == 1


def test_a_takeover_retried_after_its_write_landed_runs_the_step(
    query_language: str, local_cloud: LocalCloud
):
    # Given the claim of a crashed run whose lease has ended, and the takeover's write landing with
    # its answer lost (the takeover is the second PutItem)
    service = IdempotentService(local_cloud, query_language=query_language)
    put_crashed_claim(service, ORDER, local_cloud.clock.now_ms() - 1)
    local_cloud.faults.api_error(
        "dynamodb", "PutItem", "InternalServerError", status_code=500, calls=2, applied=True
    )

    # When the order arrives
    result = service.run(ORDER)

    # Then the retried takeover finds its own claim: the order is placed once
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert "TakeOverExpiredLease" in service.flow_states(result)
    assert service.business_runs == 1
