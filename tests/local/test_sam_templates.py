"""SAM templates on the local engine (issue 40): packaged as `sam deploy` packages them, translated
by aws-sam-translator, deployed through CloudFormation; Node.js and Python functions of one template
running in one execution; events wired as SAM wires them; parameters, Globals and outputs."""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.apps.deployed import DeployedStack
from sfn_idempotency.local.runtimes.node import NodeVersionWarning

APP = Path(__file__).resolve().parents[1] / "apps" / "sam_orders"
DEADLINE_SECONDS = 20
ORDER = {"orderId": "o-1", "items": [{"price": 2.5, "quantity": 2}, {"price": 1, "quantity": 1}]}


@pytest.fixture(scope="module")
def deployed() -> Iterator[tuple[LocalCloud, DeployedStack]]:
    with LocalCloud() as cloud, warnings.catch_warnings():
        warnings.simplefilter("ignore", NodeVersionWarning)
        yield cloud, cloud.deploy_template(APP, parameters={"Stage": "test"})


def item(cloud: LocalCloud, stack: DeployedStack, order_id: str) -> dict[str, Any] | None:
    table = stack.outputs["OrdersTableName"]
    found: dict[str, Any] | None = cloud.dynamodb.get_item(TableName=table, Key={"id": {"S": order_id}}).get(
        "Item"
    )
    return found


def wait_for_item(cloud: LocalCloud, stack: DeployedStack, order_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while (found := item(cloud, stack, order_id)) is None:
        assert time.monotonic() < deadline, f"{order_id} was never recorded"
        time.sleep(0.05)
    return found


def executions(cloud: LocalCloud, stack: DeployedStack) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = cloud.sfn.list_executions(
        stateMachineArn=stack.outputs["OrderStateMachineArn"]
    )["executions"]
    return listed


def test_node_and_python_functions_of_one_template_run_in_one_execution(deployed):
    cloud, stack = deployed
    # Given the SAM app deployed with Stage=test
    # When its state machine runs an order
    run = cloud.run(stack.outputs["OrderStateMachineArn"], ORDER)
    # Then the CommonJS callback handler validated it, the ES module priced it, Python recorded it
    assert run.status == "SUCCEEDED", run.cause
    assert run.output["validatedBy"] == stack.physical_id("ValidateFunction")
    assert run.output["total"] == 6
    assert run.output["remainingMillisPositive"] is True
    assert run.output["memory"] == "256"  # Globals' MemorySize, as Node's context says it
    assert run.output["stage"] == "test"  # Globals' Environment, from the overridden parameter
    assert item(cloud, stack, "o-1") == {"id": {"S": "o-1"}, "total": {"N": "6"}, "stage": {"S": "test"}}
    # And the visited states are the template's definition file's
    assert [state for state in run.states if state] == ["Validate", "Price", "Record"]


def test_a_warm_node_environment_is_reused(deployed):
    cloud, stack = deployed
    # Given one run priced its order
    first = cloud.run(stack.outputs["OrderStateMachineArn"], {**ORDER, "orderId": "warm-1"})
    # When a second run follows
    second = cloud.run(stack.outputs["OrderStateMachineArn"], {**ORDER, "orderId": "warm-2"})
    # Then the same Node process priced both: its module-level counter went on
    assert second.output["pricedInWarmEnvironment"] == first.output["pricedInWarmEnvironment"] + 1


def test_a_node_function_error_is_reported_as_lambda_reports_it(deployed):
    cloud, stack = deployed
    # When the validating function refuses an order through its callback
    run = cloud.run(stack.outputs["OrderStateMachineArn"], {"items": []})
    # Then the execution fails with the error's name and Lambda's error payload as the cause
    assert run.status == "FAILED"
    assert run.error == "InvalidOrder"
    cause = json.loads(run.cause)
    assert cause["errorType"] == "InvalidOrder"
    assert "has no orderId or items" in cause["errorMessage"]
    assert any("/var/task/app.js" in line for line in cause["trace"])


def test_an_eventbridge_rule_event_starts_the_machine_with_its_input_path(deployed):
    cloud, stack = deployed
    # When an event the EventBridgeRule event matches is put on the default bus
    detail = {**ORDER, "orderId": "from-events"}
    cloud.events.put_events(
        Entries=[{"Source": "sam-orders", "DetailType": "OrderSubmitted", "Detail": json.dumps(detail)}]
    )
    # Then an execution records the order from the event's detail (InputPath $.detail)
    assert wait_for_item(cloud, stack, "from-events")["total"] == {"N": "6"}


def test_a_schedule_is_a_rule_that_no_event_matches(deployed):
    cloud, stack = deployed
    # Given the Schedule event's rule
    rule = cloud.events.describe_rule(Name=stack.physical_id("OrderStateMachineNightly"))
    assert rule["ScheduleExpression"] == "rate(1 day)"
    before = len(executions(cloud, stack))
    # When an event with no pattern of its own arrives on the bus
    cloud.events.put_events(Entries=[{"Source": "anything", "DetailType": "Anything", "Detail": "{}"}])
    # Then the scheduled rule starts nothing (moto matched every event to a rule without a pattern)
    assert len(executions(cloud, stack)) == before


def test_an_sqs_event_runs_its_function_for_each_message(deployed):
    cloud, stack = deployed
    # When an order is sent to the queue the function's SQS event names
    sqs = cloud.client("sqs")
    sqs.send_message(QueueUrl=stack.outputs["OrdersQueueUrl"], MessageBody=json.dumps({"orderId": "queued"}))
    # Then the function recorded it
    assert wait_for_item(cloud, stack, "queued")["source"] == {"S": "queue"}


def test_an_api_event_starts_the_machine_through_the_served_rest_api(deployed):
    cloud, stack = deployed
    # Given the implicit API the state machine's Api event made, served on loopback
    endpoint = stack.api_endpoints["ServerlessRestApi/Prod"]
    # When an order is posted to its path
    answer = httpx.post(f"{endpoint}orders", json={**ORDER, "orderId": "from-api"}, timeout=DEADLINE_SECONDS)
    # Then API Gateway answered with the started execution, which records the order
    assert answer.status_code == 200, answer.text
    assert answer.json()["executionArn"].startswith("arn:aws:states:")
    assert wait_for_item(cloud, stack, "from-api")["stage"] == {"S": "test"}


def test_a_function_api_event_is_a_lambda_proxy_integration(deployed):
    _, stack = deployed
    # When the path the function's Api event declares is called with a path parameter
    answer = httpx.get(
        f"{stack.api_endpoints['ServerlessRestApi/Prod']}orders/o-42", timeout=DEADLINE_SECONDS
    )
    # Then the Node function answered through API Gateway's proxy event and answer
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == {"orderId": "o-42", "stage": "test", "method": "GET"}


def test_outputs_resolve_to_the_deployed_resources(deployed):
    _, stack = deployed
    assert stack.outputs["OrderStateMachineArn"] == stack.arn("OrderStateMachine")
    assert stack.outputs["OrdersTableName"] == stack.physical_id("OrdersTable")
    assert stack.outputs["OrdersApi"].endswith(".amazonaws.com/Prod/orders")
