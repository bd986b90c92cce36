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
# An order whose key only the key Lambda computes (a character outside the provable key's domain):
# the standalone flow's Claim sends it to ComputeKey too.
LAMBDA_KEYED_ORDER = {"orderId": "ö-redrive", "amount": 12}
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


def stopped_then_redriven(cloud: LocalCloud, arn: str, release: threading.Event) -> Any:
    """Stop the execution (ABORTED at once), let its hung Task answer late, redrive it to its end."""
    cloud.sfn.stop_execution(executionArn=arn)
    assert cloud.sfn.describe_execution(executionArn=arn)["status"] == "ABORTED"
    release.set()
    cloud.sfn.redrive_execution(executionArn=arn)
    return cloud.wait(arn)


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
    result = stopped_then_redriven(local_cloud, arn, release)
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
        arn = idempotent_service.start(LAMBDA_KEYED_ORDER)
        failed = local_cloud.wait(arn)
        assert (failed.status, failed.states[-1]) == ("FAILED", "ComputeKey")
        assert idempotent_service.record_for(LAMBDA_KEYED_ORDER) is None
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
    assert after_redrive(result.history) == [
        "ComputeKey",
        "RouteByKey",
        "ClaimComputedKey",
        "Execute",
        "Complete",
    ]
    assert idempotent_service.business_runs == 1
    assert idempotent_service.record_for(LAMBDA_KEYED_ORDER)["status"]["S"] == "COMPLETED"


def test_a_redriven_idempotent_execution_replays_what_another_completed_meanwhile(
    idempotent_service: IdempotentService, key_fails_once: Callable[[], str]
):
    # Given an order that failed before claiming its key, and a retry that placed it meanwhile
    arn = key_fails_once()
    retry = idempotent_service.run(LAMBDA_KEYED_ORDER)
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


# -- Parallel and inline Map: only what did not succeed runs again -----------------------------------


class Counted:
    """A function that counts its calls per item and fails the first call for the items named."""

    def __init__(self, fail_first: set[str]) -> None:
        self.calls: list[str] = []
        self._fail_first = set(fail_first)

    def __call__(self, event: Any, context: Any) -> Any:
        item = str(event["item"])
        self.calls.append(item)
        if item in self._fail_first:
            self._fail_first.discard(item)
            raise RuntimeError(f"{item} failed")
        return {"done": item}


def two_step_branch(function_arn: str, item: str) -> dict[str, Any]:
    """Before (a Pass that says it ran) → Work (the Task) → After."""
    return {
        "StartAt": "Before",
        "States": {
            "Before": {"Type": "Pass", "Parameters": {"item": item}, "Next": "Work"},
            "Work": {"Type": "Task", "Resource": function_arn, "Next": "After"},
            "After": {"Type": "Pass", "End": True},
        },
    }


def one_item_at_a_time(
    cloud: LocalCloud, name: str, processor: dict[str, Any], config: dict[str, str], **fields: Any
) -> str:
    """A machine whose one Map runs ``processor`` over ``$.items``, one item at a time, each item
    as ``{"item": <value>}``; returns its ARN."""
    each = {
        "Type": "Map",
        "ItemsPath": "$.items",
        "ItemSelector": {"item.$": "$$.Map.Item.Value"},
        "MaxConcurrency": 1,
        **fields,
        "ItemProcessor": {"ProcessorConfig": config, **processor},
        "End": True,
    }
    definition = {"StartAt": "Each", "States": {"Each": each}}
    machine = cloud.sfn.create_state_machine(name=name, definition=json.dumps(definition), roleArn=ROLE)
    return str(machine["stateMachineArn"])


def test_a_redriven_parallel_runs_only_its_aborted_branch_from_its_aborted_state(local_cloud: LocalCloud):
    # Given a Parallel of three branches, stopped while branch b's Task ran and a and c had ended
    release = threading.Event()
    calls: list[str] = []

    def work(event: Any, context: Any) -> Any:
        calls.append(event["item"])
        if calls.count("b") == 1 and event["item"] == "b" and not release.wait(GATE_TIMEOUT_SECONDS):
            raise TimeoutError("never released")
        return {"done": event["item"]}

    arn = local_cloud.add_function("work", work).arn
    definition = {
        "StartAt": "Fan",
        "States": {
            "Fan": {
                "Type": "Parallel",
                "Branches": [two_step_branch(arn, item) for item in ("a", "b", "c")],
                "End": True,
            }
        },
    }
    machine = local_cloud.sfn.create_state_machine(
        name="fan", definition=json.dumps(definition), roleArn=ROLE
    )["stateMachineArn"]
    execution = local_cloud.start_execution(machine, {})
    local_cloud.wait_until(
        lambda: local_cloud.states_so_far(execution).count("After") == 2, what="branches a and c to end"
    )

    # When it is stopped there, and redriven
    result = stopped_then_redriven(local_cloud, execution, release)

    # Then only branch b ran again, from its Task (its Pass did not run again), and the Parallel's
    # result holds every branch's output in order
    assert result.status == "SUCCEEDED"
    assert sorted(calls) == ["a", "b", "b", "c"]
    assert result.output == [{"done": "a"}, {"done": "b"}, {"done": "c"}]
    assert entered(result.history[_redriven_at(result.history) :]) == ["Fan", "Work", "After"]


def _redriven_at(events: tuple[dict[str, Any], ...]) -> int:
    return next(i for i, e in enumerate(events) if e["type"] == "ExecutionRedriven")


def test_a_redriven_inline_map_runs_only_its_failed_iterations_from_their_failed_state(
    local_cloud: LocalCloud,
):
    # Given an inline Map over four items whose items 1 and 3 failed in their Task
    function = Counted(fail_first={"i1", "i3"})
    arn = local_cloud.add_function("counted", function).arn
    processor = two_step_branch(arn, "unused")
    processor["States"]["Before"] = {
        "Type": "Pass",
        "Parameters": {"item.$": "$.item", "before": True},
        "Next": "Work",
    }
    machine = one_item_at_a_time(
        local_cloud, "each", processor, {"Mode": "INLINE"}, ToleratedFailurePercentage=0
    )
    execution = local_cloud.start_execution(machine, {"items": ["i0", "i1", "i2", "i3"]})
    failed = local_cloud.wait(execution)
    assert failed.status == "FAILED"
    first_calls = list(function.calls)
    assert first_calls == ["i0", "i1"]  # one at a time: the Map failed at item 1

    # When it is redriven (twice: item 3 fails the first time it runs)
    local_cloud.sfn.redrive_execution(executionArn=execution)
    assert local_cloud.wait(execution).status == "FAILED"
    local_cloud.sfn.redrive_execution(executionArn=execution)
    result = local_cloud.wait(execution)

    # Then item 0 never ran again, item 1 ran again from its Task, items 2 and 3 (never started the
    # first time) ran, item 3 once more after it failed; the result is every item's, in order
    assert result.status == "SUCCEEDED"
    assert function.calls == ["i0", "i1", "i1", "i2", "i3", "i3"]
    assert result.output == [{"done": item} for item in ("i0", "i1", "i2", "i3")]
    last_redrive = max(i for i, e in enumerate(result.history) if e["type"] == "ExecutionRedriven")
    assert entered(result.history[last_redrive:]) == ["Each", "Work", "After"]


def test_a_branch_resumes_with_its_input_and_its_own_variables(local_cloud: LocalCloud):
    # Given a branch that assigns a variable, then fails in a Task that reads it
    function = Counted(fail_first={"x"})
    arn = local_cloud.add_function("counted", function).arn
    branch = {
        "StartAt": "Remember",
        "States": {
            "Remember": {
                "Type": "Pass",
                "Assign": {"seen": "remembered"},
                "Parameters": {"item": "x"},
                "Next": "Work",
            },
            "Work": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": arn, "Payload": {"item.$": "$.item"}},
                "ResultSelector": {"done.$": "$.Payload.done", "seen.$": "$seen"},
                "End": True,
            },
        },
    }
    definition = {
        "StartAt": "One",
        "States": {"One": {"Type": "Parallel", "Branches": [branch], "End": True}},
    }
    machine = local_cloud.sfn.create_state_machine(
        name="one", definition=json.dumps(definition), roleArn=ROLE
    )["stateMachineArn"]
    execution = local_cloud.start_execution(machine, {})
    assert local_cloud.wait(execution).status == "FAILED"
    # When it is redriven, then the Task sees the variable and the input it had
    local_cloud.sfn.redrive_execution(executionArn=execution)
    result = local_cloud.wait(execution)
    assert result.output == [{"done": "x", "seen": "remembered"}]
    assert function.calls == ["x", "x"]


def test_a_redriven_distributed_map_runs_only_its_unsuccessful_children(local_cloud: LocalCloud):
    # Given a Distributed Map over three items, one child at a time, whose second child failed in
    # its Task (the others succeeded; the map run failed, tolerating no failure)
    function = Counted(fail_first={"i1"})
    arn = local_cloud.add_function("counted", function).arn
    before: list[str] = []

    def first(event: Any, context: Any) -> Any:
        before.append(event["item"])
        return event

    before_arn = local_cloud.add_function("before", first).arn
    processor = two_step_branch(arn, "unused")
    processor["States"]["Before"] = {"Type": "Task", "Resource": before_arn, "Next": "Work"}
    machine = one_item_at_a_time(
        local_cloud, "each-child", processor, {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    )
    execution = local_cloud.start_execution(machine, {"items": ["i0", "i1", "i2"]})
    assert local_cloud.wait(execution).status == "FAILED"
    assert function.calls == ["i0", "i1", "i2"]

    # When the parent is redriven
    local_cloud.sfn.redrive_execution(executionArn=execution)
    result = local_cloud.wait(execution)

    # Then the children that succeeded kept their results, and the failed one (a Standard child) was
    # redriven from its Task
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert function.calls == ["i0", "i1", "i2", "i1"]
    assert result.output == [{"done": item} for item in ("i0", "i1", "i2")]
    assert before == ["i0", "i1", "i2"]
    # And the new map run counts every item as succeeded
    (map_run,) = [
        run
        for run in local_cloud.sfn.list_map_runs(executionArn=execution)["mapRuns"]
        if local_cloud.sfn.describe_map_run(mapRunArn=run["mapRunArn"])["status"] == "SUCCEEDED"
    ]
    counts = local_cloud.sfn.describe_map_run(mapRunArn=map_run["mapRunArn"])["itemCounts"]
    assert (counts["succeeded"], counts["total"]) == (3, 3)
