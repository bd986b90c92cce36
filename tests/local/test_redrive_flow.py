"""Redrive cannot place an order twice (issue 37): the flow's redrive fence, in every form.

A redrive resumes an execution at the state that did not succeed, with the input that state had.
An execution stopped in its business step resumes *at the business step*, claim or none: the fence
(statemachines/idempotency.asl.json, ``Execute``) sends such a call to the key Lambda, which answers
``IdempotencyRedriveFenceError``, and the flow claims the key again before it runs anything. Each
scenario runs on the standalone flow and on an inline step, JSONPath and JSONata; the inline step
also inside a Map.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from sfn_idempotency.deployed.records import owner_execution
from sfn_idempotency.flow.resources import ORDER_WORKFLOW_ASL
from sfn_idempotency.lambdas.place_order.orders import place_order
from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.local.engine.results import ExecutionResult
from sfn_idempotency.wrap import KEY_FUNCTION_PLACEHOLDER, TABLE_PLACEHOLDER, wrap_state
from tests.local.conftest import GATE_TIMEOUT_SECONDS, Gate, TwoGates

ORDER = {"orderId": "o-redrive-flow", "amount": 7}
FORMS = [
    pytest.param(False, "JSONPath", id="standalone-JSONPath"),
    pytest.param(False, "JSONata", id="standalone-JSONata"),
    pytest.param(True, "JSONPath", id="inline-JSONPath"),
    pytest.param(True, "JSONata", id="inline-JSONata"),
]
FENCE_PATH = ["RedriveFence", "ReleaseStaleClaim", "RecomputeKey", "RouteByKey", "ClaimComputedKey"]


def redrive(service: IdempotentService, arn: str) -> ExecutionResult:
    service.cloud.sfn.redrive_execution(executionArn=arn)
    return service.cloud.wait(arn)


def flow_after_redrive(service: IdempotentService, result: ExecutionResult) -> list[str]:
    """The flow's states the last run of the execution entered."""
    events = result.history
    start = max(i for i, event in enumerate(events) if event["type"] == "ExecutionRedriven")
    redriven = ExecutionResult(
        arn=result.arn, status=result.status, output_json=None, error=None, cause=None, history=events[start:]
    )
    return service.flow_states(redriven)


def stopped_in_its_business_step(service: IdempotentService, entered: Any) -> str:
    """Start the order and stop it while its business step runs; it is ABORTED at once."""
    arn = service.start(ORDER)
    assert entered.wait(GATE_TIMEOUT_SECONDS)
    service.cloud.sfn.stop_execution(executionArn=arn)
    assert service.cloud.sfn.describe_execution(executionArn=arn)["status"] == "ABORTED"
    return arn


def released(service: IdempotentService, release: str | None) -> None:
    """The stopped execution's claim freed as it would be: by the release workflow (standalone),
    or by its lease (an inline step has no release workflow): the clock moves past it."""
    if release is not None:
        service.cloud.wait_until(lambda: len(service.cloud.executions(release)) == 1, what="the release")
        assert service.cloud.wait(service.cloud.executions(release)[0]).states[-1] == "Released"
    else:
        service.cloud.clock.advance(service.settings.lease + 1)


@pytest.fixture
def flow(
    local_cloud: LocalCloud, request: pytest.FixtureRequest
) -> Callable[..., tuple[IdempotentService, str | None]]:
    def make(handler: Any) -> tuple[IdempotentService, str | None]:
        inline, query_language = request.node.callspec.params["form"]
        service = IdempotentService(
            local_cloud, business_handler=handler, inline=inline, query_language=query_language
        )
        return service, (None if inline else service.deploy_claim_release())

    return make


@pytest.mark.parametrize("form", [p.values for p in FORMS], ids=[p.id for p in FORMS])
def test_a_stopped_order_redriven_after_another_completed_it_replays_and_does_not_run_again(
    flow: Callable[..., tuple[IdempotentService, str | None]], gate: Gate, form: Any
):
    # Given an order stopped in its business step, its claim released, and a retry that placed it
    service, release = flow(gate.handler)
    stopped = stopped_in_its_business_step(service, gate.entered)
    released(service, release)
    retry = service.run(ORDER)
    assert retry.status == "SUCCEEDED"
    gate.open()  # the stopped call answers late: its answer is dropped
    assert service.business_runs == 2

    # When the stopped execution is redriven
    result = redrive(service, stopped)

    # Then the fence kept the business step from running: the execution claimed again, found the
    # completed record and replayed the retry's result
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output_json == retry.output_json
    assert service.business_runs == 2
    assert flow_after_redrive(service, result) == ["Execute", *FENCE_PATH, "Read", "RouteByRecord", "Replay"]
    record = service.record_for(ORDER)
    assert record is not None
    assert (record["status"]["S"], owner_execution(record["owner"]["S"])) == ("COMPLETED", retry.arn)


@pytest.mark.parametrize("form", [p.values for p in FORMS], ids=[p.id for p in FORMS])
def test_a_redriven_business_step_holds_the_claim_while_it_runs(
    flow: Callable[..., tuple[IdempotentService, str | None]], form: Any
):
    # Given an order stopped in its business step and released
    gates = TwoGates()
    service, release = flow(gates.handler)
    try:
        stopped = stopped_in_its_business_step(service, gates.entered[0])
        released(service, release)
        gates.gates[0].set()

        # When it is redriven, and its business step runs again
        service.cloud.sfn.redrive_execution(executionArn=stopped)
        assert gates.entered[1].wait(GATE_TIMEOUT_SECONDS)

        # Then it runs under a claim of the redriven run, which a duplicate meets as in progress
        record = service.record_for(ORDER)
        assert record is not None
        assert record["status"]["S"] == "INPROGRESS"
        assert record["owner"]["S"].startswith(f"{stopped}#1#")
        duplicate = service.run(ORDER)
        assert duplicate.error == "IdempotencyAlreadyInProgressError"
        if release is not None:
            # And the release workflow, arriving late with the first run's end, leaves that claim
            late = service.cloud.run(
                release, {"detail": {"executionArn": stopped, "input": json.dumps(ORDER)}}
            )
            assert late.states[-2:] == ["KeyedRelease", "NothingToRelease"]
            assert service.record_for(ORDER) == record
    finally:
        gates.open_all()
    result = service.cloud.wait(stopped)
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert service.business_runs == 2  # the stopped call, and the redriven one
    assert service.record_for(ORDER)["status"]["S"] == "COMPLETED"


@pytest.mark.parametrize("form", [p.values for p in FORMS], ids=[p.id for p in FORMS])
def test_a_redrive_before_the_release_takes_its_own_stale_claim_back_first(
    flow: Callable[..., tuple[IdempotentService, str | None]], gate: Gate, form: Any
):
    # Given an order stopped in its business step, its claim still held (nothing released it yet)
    service, _ = flow(gate.handler)
    arn = service.start(ORDER)
    assert gate.entered.wait(GATE_TIMEOUT_SECONDS)
    service.cloud.sfn.stop_execution(executionArn=arn)
    gate.open()
    stale = service.record_for(ORDER)
    assert stale is not None
    assert stale["owner"]["S"].startswith(f"{arn}#0#")

    # When it is redriven at once
    result = redrive(service, arn)

    # Then it released the claim its first run held, claimed anew and placed the order: the stopped
    # call may have taken effect (at least once by nature), the redriven one ran with a claim
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert flow_after_redrive(service, result) == ["Execute", *FENCE_PATH, "Execute", "Complete"]
    assert service.business_runs == 2
    record = service.record_for(ORDER)
    assert record is not None
    assert record["status"]["S"] == "COMPLETED"
    assert record["owner"]["S"].startswith(f"{arn}#1#")


STANDALONE_FORMS = [form for form in FORMS if not form.values[0]]


@pytest.mark.parametrize("form", [p.values for p in STANDALONE_FORMS], ids=[p.id for p in STANDALONE_FORMS])
def test_a_late_release_of_the_stopped_run_spares_the_claim_of_the_redriven_run(
    flow: Callable[..., tuple[IdempotentService, str | None]], gate: Gate, form: Any
):
    # Given an order stopped in its business step, whose release workflow has looked at the
    # execution (ended, no run running) and is about to delete the claim
    service, release = flow(gate.handler)
    about_to_release = service.cloud.faults.pause_before("KeyedRelease", state_machine_arn=release)
    arn = stopped_in_its_business_step(service, gate.entered)
    assert about_to_release.entered.wait(GATE_TIMEOUT_SECONDS)
    gate.open()
    # And the execution redriven meanwhile: its run took its stale claim back, claimed anew and ran
    # the business step, and is about to record the result
    about_to_complete = service.cloud.faults.pause_before(
        "Complete", state_machine_arn=service.state_machine_arn
    )
    service.cloud.sfn.redrive_execution(executionArn=arn)
    assert about_to_complete.entered.wait(GATE_TIMEOUT_SECONDS)
    assert service.record_for(ORDER)["owner"]["S"].startswith(f"{arn}#1#")

    # When the late release goes on
    about_to_release.release()
    late = service.cloud.wait(about_to_release.execution_arn)
    # Then it deleted nothing: the claim is the running run's, not the ended one's
    assert late.states[-1] == "NothingToRelease"
    assert service.record_for(ORDER)["owner"]["S"].startswith(f"{arn}#1#")
    # And the redriven run records its result under its own claim; no other run could claim the key
    about_to_complete.release()
    result = service.cloud.wait(arn)
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert service.record_for(ORDER)["status"]["S"] == "COMPLETED"
    assert service.business_runs == 2  # the stopped call (at least once by nature), and the redriven one


# -- an inline step inside a Map ---------------------------------------------------------------------
def map_of_orders(query_language: str) -> str:
    """A Standard machine placing each order of its input inline, one at a time."""
    task: dict[str, Any] = {
        "Type": "Task",
        "Resource": "${BusinessFunctionArn}",
        "TimeoutSeconds": 30,
        "End": True,
    }
    each: dict[str, Any] = {
        "Type": "Map",
        "MaxConcurrency": 1,
        "ItemProcessor": {
            "ProcessorConfig": {"Mode": "INLINE"},
            "StartAt": "PlaceOrder",
            "States": {"PlaceOrder": task},
        },
        "End": True,
    }
    if query_language == "JSONata":
        each["Items"] = "{% $states.input.orders %}"
    else:
        each["ItemsPath"] = "$.orders"
    definition = {"QueryLanguage": query_language, "StartAt": "Each", "States": {"Each": each}}
    return wrap_state(json.dumps(definition), "PlaceOrder", key_prefix="orders", event_key_jmespath="orderId")


class GatedOrder:
    """The place_order business step, whose first call for one order waits for the test."""

    def __init__(self, order_id: str) -> None:
        self.order_id = order_id
        self.gate = Gate()

    def __call__(self, event: Any, context: Any) -> Any:
        if event.get("orderId") == self.order_id:
            return self.gate.handler(event, context)
        return place_order(event)


@pytest.mark.parametrize("query_language", ["JSONPath", "JSONata"])
def test_an_inline_step_in_a_map_redriven_after_another_completed_its_item_replays(
    local_cloud: LocalCloud, query_language: str
):
    # Given a Map of two orders, stopped while its second item's business step ran (the first done)
    first, second = {"orderId": "m-1", "amount": 1}, ORDER
    business = GatedOrder(second["orderId"])
    service = IdempotentService(
        local_cloud, business_handler=business, inline=True, query_language=query_language
    )
    assert service.business is not None
    machine = local_cloud.create_state_machine(
        "each-order",
        map_of_orders(query_language),
        {
            KEY_FUNCTION_PLACEHOLDER: service.compute_key.arn,
            TABLE_PLACEHOLDER: service.table_name,
            "BusinessFunctionArn": service.business.arn,
        },
    )
    arn = local_cloud.start_execution(machine, {"orders": [first, second]})
    try:
        assert business.gate.entered.wait(GATE_TIMEOUT_SECONDS)
        local_cloud.sfn.stop_execution(executionArn=arn)
    finally:
        business.gate.open()
    # ...its claim ended with its lease, and a retry placed the second order
    local_cloud.clock.advance(service.settings.lease + 1)
    retry = service.run(second)
    assert retry.status == "SUCCEEDED"
    assert service.business_runs == 3

    # When the Map's execution is redriven
    local_cloud.sfn.redrive_execution(executionArn=arn)
    result = local_cloud.wait(arn)

    # Then the first item kept its result without running again, the stopped one replayed the
    # retry's result: no business step ran
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert service.business_runs == 3
    assert result.output[1] == retry.output
    assert result.output[0]["orderId"] == "m-1"
    assert json.loads(service.record_for(first)["data"]["S"]) == result.output[0]


# -- started nested (.sync:2) -----------------------------------------------------------------------
def test_a_nested_order_stopped_in_its_business_step_replays_when_child_or_parent_is_redriven(
    local_cloud: LocalCloud, gate: Gate
):
    # Given the order pipeline running the idempotent workflow as its child, the child stopped in
    # its business step (the parent catches that and fails), released, and the order placed by a retry
    service = IdempotentService(local_cloud, business_handler=gate.handler)
    release = service.deploy_claim_release()
    pipeline = service.nest_in(ORDER_WORKFLOW_ASL, "order-pipeline")
    parent = local_cloud.start_execution(pipeline, ORDER)
    assert gate.entered.wait(GATE_TIMEOUT_SECONDS)
    (child,) = local_cloud.executions(service.state_machine_arn)
    local_cloud.sfn.stop_execution(executionArn=child)
    assert local_cloud.wait(parent).status == "FAILED"
    released(service, release)
    retry = service.run(ORDER)
    gate.open()
    assert service.business_runs == 2

    # When the child is redriven, and then the parent
    child_again = redrive(service, child)
    parent_again = redrive(service, parent)

    # Then the child replayed the retry's result; the parent, which caught its child's stop, resumed
    # at the Fail state it ended in and says why again; the business step never ran again
    assert (child_again.status, child_again.output_json) == ("SUCCEEDED", retry.output_json)
    assert (parent_again.status, parent_again.error) == ("FAILED", "ChildWorkflowStoppedError")
    last_redrive = max(i for i, e in enumerate(parent_again.history) if e["type"] == "ExecutionRedriven")
    redriven_states = [e for e in parent_again.history[last_redrive:] if e["type"].endswith("StateEntered")]
    assert [e["stateEnteredEventDetails"]["name"] for e in redriven_states] == [parent_again.states[-1]]
    assert service.business_runs == 2
