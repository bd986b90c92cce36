"""RedriveExecution (issue 30): an unsuccessful Standard execution resumes at the state that did
not succeed, as AWS documents it (no recording covers redrive); the idempotent flow stays safe."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.local.compat.redrive_fields import REDRIVABLE_PERIOD
from tests.local.conftest import GATE_TIMEOUT_SECONDS

ROLE = "arn:aws:iam::123456789012:role/redrive"
ORDER = {"orderId": "o-redrive", "amount": 12}
SECONDS_PER_DAY = 86_400


def error_of(refused: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    error: dict[str, Any] = refused.value.response["Error"]
    return error["Code"], error["Message"]


def pipeline(task_arn: str) -> str:
    """Remember → Work (the Task) → Report: Report shows what the resumed run saw."""
    return json.dumps(
        {
            "StartAt": "Remember",
            "States": {
                "Remember": {
                    "Type": "Pass",
                    "Assign": {"remembered.$": "$.order"},
                    "Next": "Work",
                },
                "Work": {"Type": "Task", "Resource": task_arn, "ResultPath": "$.work", "Next": "Report"},
                "Report": {
                    "Type": "Pass",
                    "Parameters": {
                        "remembered.$": "$remembered",
                        "order.$": "$.order",
                        "work.$": "$.work",
                        "redriveCount.$": "$$.Execution.RedriveCount",
                    },
                    "End": True,
                },
            },
        }
    )


class FailsFirst:
    """A function that raises on its first call and answers afterwards."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, event: Any, context: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("downstream unavailable")
        return {"done": True}


@pytest.fixture
def flaky(local_cloud: LocalCloud) -> tuple[str, FailsFirst]:
    handler = FailsFirst()
    function = local_cloud.add_function("flaky", handler)
    machine = local_cloud.sfn.create_state_machine(
        name="pipeline", definition=pipeline(function.arn), roleArn=ROLE
    )
    return str(machine["stateMachineArn"]), handler


def entered(events: tuple[dict[str, Any], ...]) -> list[str]:
    return [e["stateEnteredEventDetails"]["name"] for e in events if e["type"].endswith("StateEntered")]


def test_a_failed_execution_resumes_at_the_state_that_failed(
    local_cloud: LocalCloud, flaky: tuple[str, FailsFirst]
):
    machine, handler = flaky
    # Given an execution that failed in its Task
    arn = local_cloud.start_execution(machine, {"order": "o-1"})
    failed = local_cloud.wait(arn)
    assert (failed.status, failed.error, failed.states) == ("FAILED", "RuntimeError", ["Remember", "Work"])
    assert local_cloud.sfn.describe_execution(executionArn=arn)["redriveStatus"] == "REDRIVABLE"

    # When it is redriven
    redriven_at = local_cloud.sfn.redrive_execution(executionArn=arn)["redriveDate"]
    result = local_cloud.wait(arn)

    # Then it succeeded with the input and variables the Task had, without running Remember again
    assert result.status == "SUCCEEDED"
    assert result.output == {"remembered": "o-1", "order": "o-1", "work": {"done": True}, "redriveCount": 1}
    assert handler.calls == 2
    events = result.history
    redriven = next(i for i, e in enumerate(events) if e["type"] == "ExecutionRedriven")
    assert events[redriven - 1]["type"] == "ExecutionFailed"
    assert events[redriven]["executionRedrivenEventDetails"] == {"redriveCount": 1}
    assert entered(events[redriven:]) == ["Work", "Report"]
    assert [e["id"] for e in events] == list(range(1, len(events) + 1))
    # And the execution says it was redriven once, and cannot be redriven again
    described = local_cloud.sfn.describe_execution(executionArn=arn)
    assert (described["redriveCount"], described["redriveDate"]) == (1, redriven_at)
    assert (described["redriveStatus"], described["redriveStatusReason"]) == (
        "NOT_REDRIVABLE",
        "Execution is SUCCEEDED and cannot be redriven",
    )
    listed = local_cloud.sfn.list_executions(stateMachineArn=machine, redriveFilter="REDRIVEN")["executions"]
    assert [(e["executionArn"], e["redriveCount"]) for e in listed] == [(arn, 1)]
    assert (
        local_cloud.sfn.list_executions(stateMachineArn=machine, redriveFilter="NOT_REDRIVEN")["executions"]
        == []
    )


def test_a_repeated_request_with_the_same_client_token_redrives_once(
    local_cloud: LocalCloud, flaky: tuple[str, FailsFirst]
):
    machine, handler = flaky
    arn = local_cloud.start_execution(machine, {"order": "o-2"})
    local_cloud.wait(arn)
    # When the same redrive request arrives twice (a client retrying after a timeout)
    first = local_cloud.sfn.redrive_execution(executionArn=arn, clientToken="retry-1")
    local_cloud.wait(arn)
    second = local_cloud.sfn.redrive_execution(executionArn=arn, clientToken="retry-1")
    # Then it was redriven once, and both answers say when
    assert first["redriveDate"] == second["redriveDate"]
    assert local_cloud.sfn.describe_execution(executionArn=arn)["redriveCount"] == 1
    assert handler.calls == 2


def test_an_aborted_execution_resumes_at_the_state_it_was_stopped_in(local_cloud: LocalCloud):
    # Given a Task whose first call hangs until the test lets it go
    release = threading.Event()
    calls: list[int] = []

    def hangs_first(event: Any, context: Any) -> Any:
        calls.append(len(calls))
        if len(calls) == 1 and not release.wait(GATE_TIMEOUT_SECONDS):
            raise TimeoutError("never released")
        return {"done": True}

    function = local_cloud.add_function("hangs", hangs_first)
    machine = local_cloud.sfn.create_state_machine(
        name="hanging", definition=pipeline(function.arn), roleArn=ROLE
    )
    arn = local_cloud.start_execution(machine["stateMachineArn"], {"order": "o-3"})
    local_cloud.wait_until(lambda: calls == [0], what="the Task to start")
    # When it is stopped in that Task, and redriven
    local_cloud.sfn.stop_execution(executionArn=arn)
    release.set()
    assert local_cloud.wait(arn).status == "ABORTED"
    local_cloud.sfn.redrive_execution(executionArn=arn)
    result = local_cloud.wait(arn)
    # Then the Task ran again and the execution succeeded
    assert result.status == "SUCCEEDED"
    assert result.output["work"] == {"done": True}
    assert len(calls) == 2
    assert entered(result.history)[-2:] == ["Work", "Report"]


@pytest.mark.parametrize("status", ["SUCCEEDED", "RUNNING"])
def test_only_an_unsuccessful_execution_is_redriven(local_cloud: LocalCloud, status: str):
    hold = threading.Event()
    function = local_cloud.add_function("holds", lambda event, context: hold.wait(GATE_TIMEOUT_SECONDS))
    machine = local_cloud.sfn.create_state_machine(
        name="holding", definition=pipeline(function.arn), roleArn=ROLE
    )
    arn = local_cloud.start_execution(machine["stateMachineArn"], {"order": "o-4"})
    if status == "SUCCEEDED":
        hold.set()
        local_cloud.wait(arn)
    # When it is redriven while RUNNING or after it SUCCEEDED, then that is refused
    with pytest.raises(ClientError) as refused:
        local_cloud.sfn.redrive_execution(executionArn=arn)
    hold.set()
    assert error_of(refused) == ("ExecutionNotRedrivable", f"Execution is {status} and cannot be redriven")


def test_the_redrivable_period_ends_fourteen_days_after_the_execution(
    local_cloud: LocalCloud, flaky: tuple[str, FailsFirst]
):
    machine, _ = flaky
    arn = local_cloud.start_execution(machine, {"order": "o-5"})
    local_cloud.wait(arn)
    # When the clock moves past the 14 days (no waiting)
    local_cloud.clock.advance(REDRIVABLE_PERIOD.total_seconds() + SECONDS_PER_DAY)
    # Then the execution says it is no longer redrivable, and a redrive is refused
    described = local_cloud.sfn.describe_execution(executionArn=arn)
    assert (described["redriveStatus"], described["redriveStatusReason"]) == (
        "NOT_REDRIVABLE",
        "Execution redrivable period exceeded",
    )
    with pytest.raises(ClientError) as refused:
        local_cloud.sfn.redrive_execution(executionArn=arn)
    assert error_of(refused) == ("ExecutionNotRedrivable", "Execution redrivable period exceeded")


def test_an_express_execution_is_not_redriven(local_cloud: LocalCloud):
    definition = json.dumps({"StartAt": "Fail", "States": {"Fail": {"Type": "Fail", "Error": "E"}}})
    machine = local_cloud.sfn.create_state_machine(
        name="fast", definition=definition, roleArn=ROLE, type="EXPRESS"
    )
    arn = local_cloud.start_execution(machine["stateMachineArn"], {})
    assert local_cloud.wait(arn).status == "FAILED"
    with pytest.raises(ClientError) as refused:
        local_cloud.sfn.redrive_execution(executionArn=arn)
    assert error_of(refused) == (
        "InvalidArn",
        "Invalid Arn: 'Resource type not valid in this context: express'",
    )


# -- the idempotent flow -----------------------------------------------------------------------


def redriven(service: IdempotentService, arn: str) -> Any:
    service.cloud.sfn.redrive_execution(executionArn=arn)
    return service.cloud.wait(arn)


def after_redrive(events: tuple[dict[str, Any], ...]) -> list[str]:
    start = next(i for i, e in enumerate(events) if e["type"] == "ExecutionRedriven")
    return entered(events[start:])


@pytest.fixture
def key_fails_once(idempotent_service: IdempotentService, local_cloud: LocalCloud) -> Callable[[], str]:
    """Start an order whose key Lambda fails (an error the flow does not retry): it fails before
    claiming anything. Returns the failed execution's ARN."""

    def start() -> str:
        local_cloud.faults.function_error(
            idempotent_service.compute_key_function, "RuntimeError", "boom", calls=1
        )
        arn = idempotent_service.start(ORDER)
        failed = local_cloud.wait(arn)
        assert (failed.status, failed.states) == ("FAILED", ["ComputeKey"])
        assert idempotent_service.record_for(ORDER) is None
        return arn

    return start


def test_a_redriven_idempotent_execution_claims_and_places_the_order(
    idempotent_service: IdempotentService, key_fails_once: Callable[[], str]
):
    # Given an order that failed before claiming its key
    arn = key_fails_once()
    # When it is redriven
    result = redriven(idempotent_service, arn)
    # Then it claimed the key and placed the order once, and the record is complete
    assert result.status == "SUCCEEDED"
    assert after_redrive(result.history) == ["ComputeKey", "RouteByKey", "Claim", "Execute", "Complete"]
    assert idempotent_service.business_runs == 1
    assert idempotent_service.record_for(ORDER)["status"]["S"] == "COMPLETED"


def test_a_redriven_idempotent_execution_replays_what_another_completed_meanwhile(
    idempotent_service: IdempotentService, key_fails_once: Callable[[], str]
):
    # Given an order that failed before claiming its key, and a retry that placed it meanwhile
    arn = key_fails_once()
    retry = idempotent_service.run(ORDER)
    # When the failed one is redriven
    result = redriven(idempotent_service, arn)
    # Then it claimed again, found the retry's record, and replayed its output: one order placed
    assert result.status == "SUCCEEDED"
    assert after_redrive(result.history)[-3:] == ["Read", "RouteByRecord", "Replay"]
    assert result.output_json == retry.output_json
    assert idempotent_service.business_runs == 1


def test_a_redriven_business_failure_fails_again_and_leaves_the_key_free(
    idempotent_service: IdempotentService, local_cloud: LocalCloud
):
    # Given an order whose business step failed: the flow released its claim and failed
    local_cloud.faults.function_error(
        idempotent_service.business_function, "DownstreamUnavailable", "503", calls=1
    )
    failed = idempotent_service.run(ORDER)
    assert failed.error == "DownstreamUnavailable"
    # When it is redriven, then it resumes at the flow's final Fail state and fails the same way:
    # the business step does not run again and no claim is left behind
    result = redriven(idempotent_service, failed.arn)
    assert (result.status, result.error) == ("FAILED", "DownstreamUnavailable")
    assert after_redrive(result.history) == [failed.states[-1]]
    assert idempotent_service.business_runs == 1
    assert idempotent_service.record_for(ORDER) is None
    # And a new execution of the order places it
    assert idempotent_service.run(ORDER).status == "SUCCEEDED"
    assert idempotent_service.business_runs == 2
