"""The project's own synthesized stacks, deployed unchanged on the local engine (issue 29): the
constructs' resources (key Lambda from its asset, workflows, claim release and its rule, the HTTP
front door) run from the template, not from a Python re-creation of it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from sfn_idempotency.deployed.records import plain
from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.apps.deployed import DeployedAssembly, DeployedStack, SkippedResourceWarning
from tests.infra.conftest import INLINE_STEP_STACK, SERVICE_STACK, SHARED_TABLE_STACK, Synthesized

HTTP_DEADLINE_SECONDS = 30


@pytest.fixture(scope="module")
def deployment(synthesized: Synthesized) -> Iterator[tuple[LocalCloud, DeployedAssembly, list[str]]]:
    with LocalCloud(retry_wait_scale=0) as cloud, warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always", SkippedResourceWarning)
        deployed = cloud.deploy_cdk_out(synthesized.assembly_dir)
        yield cloud, deployed, [str(w.message) for w in warned if w.category is SkippedResourceWarning]


@pytest.fixture(scope="module")
def cloud(deployment: tuple[LocalCloud, DeployedAssembly, list[str]]) -> LocalCloud:
    return deployment[0]


@pytest.fixture(scope="module")
def service(deployment: tuple[LocalCloud, DeployedAssembly, list[str]]) -> DeployedStack:
    return deployment[1].stack(SERVICE_STACK)


def records(cloud: LocalCloud, stack: DeployedStack, table: str) -> dict[str, dict[str, Any]]:
    items = cloud.dynamodb.scan(TableName=stack.physical_id(table), ConsistentRead=True)["Items"]
    return {record["id"]: record for record in map(plain, items)}


def test_every_stack_deploys_and_only_the_pipe_is_skipped(
    deployment: tuple[LocalCloud, DeployedAssembly, list[str]],
):
    cloud, deployed, warned = deployment
    # Then the three stacks are there, each with its state machines visible to the API
    assert [stack.name for stack in deployed.stacks] == [SERVICE_STACK, SHARED_TABLE_STACK, INLINE_STEP_STACK]
    listed = {m["stateMachineArn"] for m in cloud.sfn.list_state_machines()["stateMachines"]}
    machines = {r.arn for stack in deployed.stacks for r in stack.of_type("AWS::StepFunctions::StateMachine")}
    assert machines
    assert machines == listed
    # And the one thing the engine cannot run (an EventBridge Pipe) was skipped, with one line
    assert warned == [
        f"{SERVICE_STACK}: skipped OrdersPipe (AWS::Pipes::Pipe): the engine does not run this resource type"
    ]
    # And the metrics' alarms and dashboards are there, as CloudWatch lists them
    alarms = cloud.client("cloudwatch").describe_alarms()["MetricAlarms"]
    assert len(alarms) == sum(len(stack.of_type("AWS::CloudWatch::Alarm")) for stack in deployed.stacks) > 0
    dashboards = cloud.client("cloudwatch").list_dashboards()["DashboardEntries"]
    assert len(dashboards) == sum(
        len(stack.of_type("AWS::CloudWatch::Dashboard")) for stack in deployed.stacks
    )


def test_the_stack_s_metric_filters_count_outcomes_as_the_engine_s_own(
    cloud: LocalCloud, service: DeployedStack
):
    # Given the order workflow's metric filters, as the stack deployed them on its log group
    logs = cloud.client("logs")
    filters = [
        f
        for f in logs.describe_metric_filters()["metricFilters"]
        if f["filterName"].endswith("-orders-Replays")
    ]
    (replays,) = [f for f in filters if "OrderWorkflow" in f["filterName"]]
    metric = replays["metricTransformations"][0]
    workflow = metric["metricNamespace"].split("/")[1]
    before = cloud.outcome_counts(workflow, "orders")
    # When an order arrives twice
    order = {"orderId": f"o-{uuid.uuid4()}", "amount": 5}
    machine = service.outputs["StateMachineArn"]
    cloud.run(machine, order), cloud.run(machine, order)
    # Then CloudWatch counts one more first run and one more replay
    after = cloud.outcome_counts(workflow, "orders")
    assert after["FirstRuns"] == before["FirstRuns"] + 1
    assert after["Replays"] == before["Replays"] + 1


def test_the_order_workflow_runs_its_asset_lambdas_once_per_order(cloud: LocalCloud, service: DeployedStack):
    # Given the stack's workflow, its business Lambda, and a new order
    machine = service.outputs["StateMachineArn"]
    business = service.arn("PlaceOrderFunction")
    order = {"orderId": f"o-{uuid.uuid4()}", "amount": 5}
    # When it arrives twice
    first, again = cloud.run(machine, order), cloud.run(machine, order)
    # Then the business Lambda ran once, the duplicate replayed its output, and the record is complete
    assert (first.status, again.status) == ("SUCCEEDED", "SUCCEEDED"), first.cause
    assert first.lambda_invocations(business) == 1
    assert again.lambda_invocations(business) == 0
    assert again.states[-1] == "Replay"
    assert again.output == first.output
    (record,) = [
        r for r in records(cloud, service, "Idempotency/Table").values() if r["owner"].startswith(first.arn)
    ]
    assert record["status"] == "COMPLETED"


def test_a_stopped_execution_s_claim_is_released_by_the_stacks_rule(
    cloud: LocalCloud, service: DeployedStack
):
    # Given an execution holding its claim while the business step runs
    machine = service.outputs["StateMachineArn"]
    order = {"orderId": f"o-{uuid.uuid4()}", "amount": 5, "simulate": {"delaySeconds": 1}}
    execution = cloud.start_execution(machine, order)
    table = "Idempotency/Table"
    cloud.wait_until(
        lambda: any(r["owner"].startswith(execution) for r in records(cloud, service, table).values()),
        what="the claim",
    )
    # When it is stopped (no Catch runs: only the claim-release workflow, started by its rule, can act)
    cloud.sfn.stop_execution(executionArn=execution)
    # Then the claim goes, and a retry places the order
    cloud.wait_until(
        lambda: not any(r["owner"].startswith(execution) for r in records(cloud, service, table).values()),
        what="the release",
    )
    retry = cloud.run(machine, {**order, "simulate": {"delaySeconds": 0}})
    assert retry.status == "SUCCEEDED"
    assert "Replay" not in retry.states


def post(url: str, body: Any, key: str) -> tuple[int, dict[str, str], Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Idempotency-Key": key, "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=HTTP_DEADLINE_SECONDS) as answer:
            return answer.status, dict(answer.headers), json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), json.loads(refused.read())


def test_the_http_front_door_is_served_from_the_template(cloud: LocalCloud, service: DeployedStack):
    # Given the stack's REST API, served at its stage's path
    url = service.api_endpoints[service.resource("OrdersHttpApi/Api").logical_id] + "orders"
    assert url.startswith("http://127.0.0.1:")
    assert url.endswith("/api/orders")
    key, order = str(uuid.uuid4()), {"orderId": f"o-{uuid.uuid4()}", "amount": 7}
    before = records(cloud, service, "Idempotency/Table")
    # When a client sends the same request twice, and a different body under the same key
    first, again = post(url, order, key), post(url, order, key)
    conflict = post(url, {**order, "amount": 8}, key)
    # Then the first placed the order, the second replayed it, the third is refused
    assert first[0] == 201
    assert first[1].get("Idempotent-Replayed") is None
    assert again[0] == 201
    assert again[1]["Idempotent-Replayed"] == "true"
    assert again[2] == first[2]
    assert conflict[0] == 422
    # And one record was made for the key, in the stack's own table, under the front door's prefix
    new = [r for key, r in records(cloud, service, "Idempotency/Table").items() if key not in before]
    assert [(r["id"].split("#")[0], r["status"]) for r in new] == [("orders-http", "COMPLETED")]


def test_a_users_inline_steps_run_once_per_key(
    cloud: LocalCloud, deployment: tuple[LocalCloud, DeployedAssembly, list[str]]
):
    # Given the user's Express machine with an inline idempotent step
    inline = deployment[1].stack(INLINE_STEP_STACK)
    machine = inline.arn("Express")
    shipment = {"shipmentId": f"s-{uuid.uuid4()}", "orderId": "o-1"}
    # When the same shipment goes through twice
    first, again = cloud.run_sync(machine, shipment), cloud.run_sync(machine, shipment)
    # Then the second replayed the first's result
    assert (first.status, again.status) == ("SUCCEEDED", "SUCCEEDED"), first.cause
    assert again.output_json == first.output_json
    assert any(state.endswith(".Replay") for state in again.states)
