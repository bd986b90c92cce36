"""Fencing per claim: two claims of one execution (two Map items with one key) fence each other, and
the release workflow finds an execution's claims exactly (``exec-1`` is not ``exec-10``)."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from sfn_idempotency.deployed.records import plain
from sfn_idempotency.local import ExecutionResult, LocalCloud
from sfn_idempotency.local.engine.cloud import INLINE_TABLE
from sfn_idempotency.wrap import wrap_state
from tests.local.conftest import FLAVOURS, GATE_TIMEOUT_SECONDS, Gate, ServiceFactory, TwoGates

PAST_ANY_LEASE_SECONDS = 10_000
SAME_ORDER = {"orderId": "o-shared", "amount": 3}


class LateFailure(Exception):
    pass


class Barrier:
    """A Lambda that lets the first Map item through and holds the second until the test opens it."""

    def __init__(self) -> None:
        self.opened = threading.Event()

    def handler(self, event: Any, context: Any) -> Any:
        if event["index"] > 0 and not self.opened.wait(GATE_TIMEOUT_SECONDS):
            raise TimeoutError("the test never opened the barrier")
        return event


def map_machine(language: str) -> dict[str, Any]:
    """A user's Map over orders: each item passes a barrier, then places its order (the Task that
    is wrapped); a failed item records its error instead of failing the Map."""
    if language == "JSONata":
        item = {
            "order": "{% $states.context.Map.Item.Value %}",
            "index": "{% $states.context.Map.Item.Index %}",
        }
        barrier: dict[str, Any] = {
            "Arguments": {"FunctionName": "${BarrierFunctionArn}", "Payload": "{% $states.input %}"}
        }
        barrier["Output"] = "{% $states.input %}"
        place: dict[str, Any] = {
            "Arguments": {"FunctionName": "${PlaceOrderFunctionArn}", "Payload": "{% $states.input.order %}"},
            "Output": "{% {'placed': $states.result.Payload} %}",
            "Catch": [
                {
                    "ErrorEquals": ["States.ALL"],
                    "Output": "{% {'failure': $states.errorOutput} %}",
                    "Next": "Failed",
                }
            ],
        }
        top: dict[str, Any] = {"QueryLanguage": "JSONata", "ItemSelector": item}
    else:
        barrier = {
            "Parameters": {"FunctionName": "${BarrierFunctionArn}", "Payload.$": "$"},
            "ResultPath": None,
        }
        place = {
            "Parameters": {"FunctionName": "${PlaceOrderFunctionArn}", "Payload.$": "$.order"},
            "ResultSelector": {"placed.$": "$.Payload"},
            "ResultPath": "$.result",
            "OutputPath": "$.result",
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.failure", "Next": "Failed"}],
        }
        top = {
            "ItemsPath": "$.orders",
            "ItemSelector": {"order.$": "$$.Map.Item.Value", "index.$": "$$.Map.Item.Index"},
        }
    task = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke"}
    states = {
        "Barrier": {**task, **barrier, "Next": "PlaceOrder"},
        "PlaceOrder": {**task, **place, "End": True},
        "Failed": {"Type": "Pass", "End": True},
    }
    each_order: dict[str, Any] = {
        "Type": "Map",
        "MaxConcurrency": 2,
        "ItemProcessor": {"ProcessorConfig": {"Mode": "INLINE"}, "StartAt": "Barrier", "States": states},
        "End": True,
    }
    if language == "JSONata":
        each_order["Items"] = "{% $states.input.orders %}"
        each_order["ItemSelector"] = top.pop("ItemSelector")
        return {**top, "StartAt": "EachOrder", "States": {"EachOrder": each_order}}
    return {"StartAt": "EachOrder", "States": {"EachOrder": {**each_order, **top}}}


class TwoItemsOneKey:
    """One execution whose two Map items claim one key: item 0 hangs in its business step until
    its lease has long ended, item 1 takes the key over and completes, then item 0 ends late."""

    def __init__(self, cloud: LocalCloud, language: str, gate: Gate) -> None:
        self.cloud = cloud
        self.gate = gate
        self.barrier = Barrier()
        place = cloud.add_function("place-order", gate.handler)
        barrier = cloud.add_function("barrier", self.barrier.handler)
        text = wrap_state(
            json.dumps(map_machine(language)),
            "PlaceOrder",
            key_prefix="orders",
            event_key_jmespath="order.orderId",
        )
        substitutions = {
            **cloud.idempotency_substitutions(),
            "PlaceOrderFunctionArn": place.arn,
            "BarrierFunctionArn": barrier.arn,
        }
        self.arn = cloud.create_state_machine("map-of-orders", text, substitutions)
        self.place_order = place.name

    def run(self) -> ExecutionResult:
        execution = self.cloud.start_execution(self.arn, {"orders": [SAME_ORDER, SAME_ORDER]})
        assert self.gate.entered.wait(GATE_TIMEOUT_SECONDS), "item 0 never reached its business step"
        self.cloud.clock.advance(PAST_ANY_LEASE_SECONDS)
        self.barrier.opened.set()
        self.cloud.wait_until(lambda: self.record()["status"] == "COMPLETED", what="item 1 to complete")
        self.gate.open()
        return self.cloud.wait(execution)

    def record(self) -> dict[str, Any]:
        (item,) = self.cloud.dynamodb.scan(TableName=INLINE_TABLE, ConsistentRead=True)["Items"]
        return plain(item)

    @property
    def business_runs(self) -> int:
        return self.cloud.lambdas.invocations(self.place_order)


@pytest.fixture(params=FLAVOURS)
def language(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_a_late_complete_of_one_map_item_cannot_overwrite_another_items_claim(
    local_cloud: LocalCloud, language: str
):
    # Given two items of one execution with one key, the first hanging past its lease
    scenario = TwoItemsOneKey(local_cloud, language, Gate())

    # When the second takes the key over and completes, and the first completes late
    result = scenario.run()

    # Then the first item's Complete is refused, and the second's result stands
    assert result.status == "SUCCEEDED", result.cause
    late, newer = result.output
    assert late["failure"]["Error"] == "IdempotencyPersistenceError"
    assert "another execution claimed the key" in late["failure"]["Cause"]
    record = scenario.record()
    assert record["status"] == "COMPLETED"
    assert newer["placed"]["placedOrderId"] in record["data"]
    assert record["owner"].startswith(f"{result.arn}#")
    assert scenario.business_runs == 2


def test_a_late_release_of_one_map_item_cannot_delete_another_items_result(
    local_cloud: LocalCloud, language: str
):
    # Given the same two items, the first failing late in its business step
    scenario = TwoItemsOneKey(local_cloud, language, Gate(fail_with=LateFailure("card declined, late")))

    # When the second has completed and then the first fails
    result = scenario.run()

    # Then the first's Release is refused: it fails with its own error, the second's result stays
    late, newer = result.output
    assert late["failure"]["Error"] == "LateFailure"
    record = scenario.record()
    assert record["status"] == "COMPLETED"
    assert newer["placed"]["placedOrderId"] in record["data"]
    assert scenario.business_runs == 2


def test_the_release_workflow_of_exec_1_leaves_the_claim_of_exec_10(make_service: ServiceFactory):
    # Given exec-1 holding a key past its lease, and exec-10 (whose ARN begins with exec-1's) holding it now
    gates = TwoGates()
    service = make_service(gates.handler)
    release = service.deploy_claim_release()
    cloud = service.cloud
    try:
        older = service.start(SAME_ORDER, name="exec-1")
        assert gates.entered[0].wait(GATE_TIMEOUT_SECONDS)
        cloud.clock.advance(service.settings.lease + 1)
        newer = service.start(SAME_ORDER, name="exec-10")
        assert gates.entered[1].wait(GATE_TIMEOUT_SECONDS)

        # When exec-1 is stopped, and its status change event starts the release workflow
        cloud.sfn.stop_execution(executionArn=older)
        assert cloud.sfn.describe_execution(executionArn=older)["status"] == "ABORTED"  # at once
        gates.gates[0].set()  # its Lambda answers late: the answer is dropped
        cloud.wait_until(lambda: len(cloud.executions(release)) == 1, what="the release workflow to start")
        released = cloud.wait(cloud.executions(release)[0])

        # Then nothing of exec-10's is released: its claim is still in progress, under its own name
        assert released.states[-1] == "NothingToRelease"
        record = service.record_for(SAME_ORDER)
        assert record is not None
        assert record["status"]["S"] == "INPROGRESS"
        assert record["owner"]["S"].startswith(f"{newer}#")
    finally:
        gates.open_all()
    assert cloud.wait(newer).status == "SUCCEEDED"


@pytest.mark.parametrize("query_language", FLAVOURS)
def test_the_release_workflow_releases_exactly_the_stopped_executions_claim(
    make_service: ServiceFactory, gate: Gate
):
    # Given an execution holding a claim (the owner names it and its claim token)
    service = make_service(gate.handler)
    release = service.deploy_claim_release()
    held = service.start(SAME_ORDER, name="exec-1")
    assert gate.entered.wait(GATE_TIMEOUT_SECONDS)
    assert service.record_for(SAME_ORDER)["owner"]["S"].startswith(f"{held}#")

    # When it is stopped
    service.cloud.sfn.stop_execution(executionArn=held)
    assert service.cloud.sfn.describe_execution(executionArn=held)["status"] == "ABORTED"  # at once
    gate.open()  # its Lambda answers late: the answer is dropped
    service.cloud.wait_until(lambda: len(service.cloud.executions(release)) == 1, what="the release workflow")

    # Then its claim is released
    assert service.cloud.wait(service.cloud.executions(release)[0]).states[-1] == "Released"
    assert service.record_for(SAME_ORDER) is None
