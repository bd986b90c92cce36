"""Exactly once at Step Functions' size limit (256 KiB of UTF-8 JSON a state may carry): the flow
carries nothing across the business step that it does not need there, and a step that answered
with a result too large to carry or to bring back is never run again while its record lasts."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyInvalidStatusError,
    IdempotencyPersistenceLayerError,
)

from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.settings import example_settings
from tests.local.conftest import FLAVOURS
from tests.powertools import guarded_by_powertools

TOO_LARGE = "IdempotencyResultTooLargeError"
ORDER = {"orderId": "o-large", "amount": 9}
HALF = 135_000  # bytes: an event and a result of this size fit 256 KiB alone, not together
# A parent that runs the flow as a child, as the order pipeline nests it.
PARENT = {
    "StartAt": "Child",
    "States": {
        "Child": {
            "Type": "Task",
            "Resource": "arn:aws:states:::states:startExecution.sync:2",
            "Parameters": {"StateMachineArn": "${IdempotencyStateMachineArn}", "Input.$": "$"},
            "OutputPath": "$.Output",
            "End": True,
        }
    },
}
FORMS = ["standard", "express", "inline", "inline-express", "nested"]


def service_in(cloud: LocalCloud, form: str, query_language: str, handler: Any) -> IdempotentService:
    return IdempotentService(
        cloud,
        example_settings({}, IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId"),
        name=f"{form}-{query_language.lower()}",
        business_handler=handler,
        inline=form.startswith("inline"),
        query_language=query_language,
        workflow_type="EXPRESS" if form.endswith("express") else "STANDARD",
    )


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("query_language", FLAVOURS)
def test_an_event_and_a_result_that_fit_alone_but_not_together_run_the_step_once(
    local_cloud: LocalCloud, form: str, query_language: str, tmp_path: Any
):
    # Given a 135 KB event and a business step answering 135 KB: together past 256 KiB
    service = service_in(local_cloud, form, query_language, lambda e, c: {"receipt": "r" * HALF})
    event = {**ORDER, "pad": "e" * HALF}
    if form == "nested":
        parent_asl = tmp_path / "parent.asl.json"
        parent_asl.write_text(json.dumps(PARENT))
        parent = service.nest_in(parent_asl, "parent")

    # When it runs, and duplicates follow
    if form == "nested":
        runs = [local_cloud.run(parent, event) for _ in range(3)]
    else:
        runs = [service.run(event) for _ in range(3)]

    # Then the step ran once, its result is recorded, and every duplicate answers the same
    assert service.business_runs == 1
    assert service.record_for(event)["status"]["S"] == "COMPLETED"
    if form == "nested":
        # (the parent's own .sync:2 answer holds the child's input and output together: the
        # parent, not the flow, meets the limit, and retrying it replays without a second run)
        assert {run.error for run in runs} == {"States.DataLimitExceeded"}
        return
    assert [run.status for run in runs] == ["SUCCEEDED"] * 3, runs[0].cause
    assert all(run.output == {"receipt": "r" * HALF} for run in runs)
    assert service.flow_states(runs[-1])[-1] == "Replay"


@pytest.mark.parametrize("form", ["standard", "inline"])
@pytest.mark.parametrize("query_language", FLAVOURS)
def test_a_result_too_large_to_carry_runs_once_and_every_duplicate_is_told_why(
    local_cloud: LocalCloud, form: str, query_language: str
):
    # Given a business step whose result alone passes 256 KiB
    service = service_in(local_cloud, form, query_language, lambda e, c: {"big": "z" * 300_000})

    # When it runs
    first = service.run(ORDER)

    # Then the execution fails with our name, the limit and the original error in the cause
    assert (first.status, first.error) == ("FAILED", TOO_LARGE)
    assert "256 KiB" in first.cause
    assert "States.DataLimitExceeded" in first.cause
    assert service.flow_states(first)[-2:] == ["KeepResultTooLarge", "ResultTooLarge"]
    # And the key is kept, not released: a record no claim takes before it expires, without a lease
    record = service.record_for(ORDER)
    assert record["status"]["S"] == "RESULT_TOO_LARGE"
    assert "data" not in record
    assert "in_progress_expiration" not in record
    expires_at = int(record["expiration"]["N"])

    # And every duplicate fails with the same name, long after the lease, and never runs the step
    second = service.run(ORDER)
    local_cloud.clock.advance(expires_at - local_cloud.clock.now_ms() // 1000 - 1)
    third = service.run(ORDER)
    assert second.error == third.error == TOO_LARGE
    assert service.flow_states(third)[-1] == "RecordedResultTooLarge"
    assert str(expires_at) in third.cause
    assert service.business_runs == 1

    # And once the record expires, the key is free again
    local_cloud.clock.advance(2)
    assert service.run(ORDER).error == TOO_LARGE
    assert service.business_runs == 2


def test_powertools_sharing_the_table_does_not_run_a_step_whose_result_was_too_large(
    local_cloud: LocalCloud,
):
    # Given a key whose business step ran, with a result too large to record
    service = service_in(local_cloud, "standard", "JSONPath", lambda e, c: {"big": "z" * 300_000})
    assert service.run(ORDER).error == TOO_LARGE

    # When a Powertools-guarded function, sharing the table, gets the same event
    powertools = guarded_by_powertools(service)

    # Then it meets a status it does not know and refuses, rather than running the step again
    with pytest.raises(IdempotencyPersistenceLayerError, match="RESULT_TOO_LARGE") as refused:
        powertools.place(order=ORDER)
    assert isinstance(refused.value.__cause__, IdempotencyInvalidStatusError)
    assert powertools.runs == []


@pytest.mark.parametrize("form", ["standard", "inline"])
@pytest.mark.parametrize("query_language", FLAVOURS)
def test_a_result_that_grows_when_read_back_is_refused_at_complete(
    local_cloud: LocalCloud, form: str, query_language: str
):
    # Given a 200 KB result of short strings: GetItem's answer escapes each quote once more, so
    # the record, read back, would pass 256 KiB
    result = ["ab"] * 40_000
    assert 190_000 < len(json.dumps(result, separators=(",", ":"))) < 256 * 1024
    service = service_in(local_cloud, form, query_language, lambda e, c: result)

    # When it runs
    first = service.run(ORDER)

    # Then Complete refuses it with our name (the record could never replay), the step ran once
    assert first.error == TOO_LARGE
    assert service.flow_states(first)[-3:] == ["Complete", "KeepResultTooLarge", "ResultTooLarge"]
    assert service.record_for(ORDER)["status"]["S"] == "RESULT_TOO_LARGE"
    assert service.run(ORDER).error == TOO_LARGE
    assert service.business_runs == 1


@pytest.mark.parametrize("query_language", FLAVOURS)
def test_a_result_just_under_the_limit_is_recorded_and_replayed(local_cloud: LocalCloud, query_language: str):
    # Given a result of one long string: its stored text reads back barely larger
    result = {"receipt": "r" * 250_000}
    service = service_in(local_cloud, "standard", query_language, lambda e, c: result)

    # When it runs twice
    first, second = service.run(ORDER), service.run(ORDER)

    # Then it is recorded once and replayed as it was
    assert first.output == second.output == result
    assert service.flow_states(second)[-1] == "Replay"
    assert service.business_runs == 1


@pytest.mark.parametrize("query_language", FLAVOURS)
def test_a_record_too_large_to_read_back_fails_named_and_never_runs_the_step(
    local_cloud: LocalCloud, query_language: str
):
    # Given a COMPLETED record written by someone else (Powertools in a Lambda carries 6 MB)
    # whose result is too large for a state to bring back
    service = service_in(local_cloud, "standard", query_language, lambda e, c: {"ok": True})
    key = service.key_for(ORDER)
    local_cloud.dynamodb.put_item(
        TableName=service.table_name,
        Item={
            "id": {"S": key},
            "status": {"S": "COMPLETED"},
            "expiration": {"N": str(local_cloud.clock.now_ms() // 1000 + 3600)},
            "data": {"S": json.dumps({"big": "z" * 300_000})},
        },
    )

    # When a duplicate arrives
    result = service.run(ORDER)

    # Then it fails with our name, saying why retrying will not help, and the step never runs
    assert result.error == TOO_LARGE
    assert service.flow_states(result)[-1] == "RecordTooLargeToRead"
    assert "retrying will not help" in result.cause
    assert service.business_runs == 0


@pytest.mark.parametrize("query_language", FLAVOURS)
def test_an_event_too_large_to_carry_with_its_key_fails_named(local_cloud: LocalCloud, query_language: str):
    # Given an event that StartExecution takes, but not with the key and settings beside it
    service = service_in(local_cloud, "standard", query_language, lambda e, c: {"ok": True})
    event = {**ORDER, "pad": "e" * (256 * 1024 - 100)}

    # When it runs
    result = service.run(event)

    # Then it fails with our name; nothing was claimed and the step did not run
    assert (result.status, result.error) == ("FAILED", "IdempotencyEventTooLargeError")
    assert service.records() == []
    assert service.business_runs == 0


@pytest.mark.slow
@pytest.mark.parametrize("query_language", FLAVOURS)
def test_a_run_without_a_key_that_times_out_fails_with_our_name(local_cloud: LocalCloud, query_language: str):
    # Given a one-second timeout and a business step that hangs, for an event without a key
    service = IdempotentService(
        local_cloud,
        example_settings({}, IDEMPOTENCY_EVENT_KEY_JMESPATH="orderId", IDEMPOTENCY_TIMEOUT_SECONDS="1"),
        query_language=query_language,
    )
    local_cloud.faults.function_delay(service.business_function, 30, calls=1)

    # When it runs
    result = service.run({"amount": 3})

    # Then no States.* name reaches the caller: ours, with the original in the cause
    assert (result.status, result.error) == ("FAILED", "BusinessStepTimeoutError")
    assert "States.Timeout" in result.cause
    assert service.flow_states(result)[-1] == "UnrecordedStepTimedOut"
