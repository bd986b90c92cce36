"""The workflow embedded in others: nested with startExecution.sync:2, inline (the Express pipeline),
and around a non-Lambda step."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sfn_idempotency.flow import inline_workflows
from sfn_idempotency.flow.resources import ORDER_WORKFLOW_ASL
from sfn_idempotency.local import IdempotentService, LocalCloud
from tests.business_steps import SQS_SEND_STEP
from tests.local.conftest import Gate, ServiceFactory

ORDER = {"orderId": "o-nested", "amount": 30}


def test_parent_runs_the_child_once_and_unwraps_its_output(idempotent_service: IdempotentService):
    # Given the order pipeline nesting the idempotent workflow
    pipeline = idempotent_service.nest_in(ORDER_WORKFLOW_ASL, "order-workflow")

    # When the same order goes through the pipeline twice
    first = idempotent_service.cloud.run(pipeline, ORDER)
    second = idempotent_service.cloud.run(pipeline, ORDER)

    # Then both notify with the same placed order; the business step ran once
    assert first.status == second.status == "SUCCEEDED", (first.error, first.cause)
    assert first.states == ["Prepare", "Validate", "PlaceOrder", "Notify"]
    assert first.output["order"]["orderId"] == "o-nested"
    assert second.output == first.output
    assert (
        first.output["notification"]
        == f"Order o-nested is placed as {first.output['order']['placedOrderId']}."
    )
    assert idempotent_service.business_runs == 1


def test_parent_rejects_an_invalid_order_before_any_child_runs(idempotent_service: IdempotentService):
    pipeline = idempotent_service.nest_in(ORDER_WORKFLOW_ASL, "order-workflow")
    result = idempotent_service.cloud.run(pipeline, {"orderId": "o-x", "amount": -3})
    assert (result.status, result.error) == ("FAILED", "InvalidOrderError")
    assert result.states == ["Prepare", "Validate", "RejectInvalidOrder"]
    assert idempotent_service.records() == []


def test_parent_fails_cleanly_with_the_childs_validation_error(make_service: ServiceFactory):
    # Given a completed order, and the same order id with another amount
    service = make_service(IDEMPOTENCY_PAYLOAD_VALIDATION_JMESPATH="amount")
    pipeline = service.nest_in(ORDER_WORKFLOW_ASL, "order-workflow")
    assert service.cloud.run(pipeline, ORDER).status == "SUCCEEDED"

    # When the tampered order goes through the pipeline
    result = service.cloud.run(pipeline, {**ORDER, "amount": 31})

    # Then the pipeline fails with the child's own error and cause, without retrying
    assert result.error == "IdempotencyValidationError"
    assert "Payload does not match" in result.cause
    assert result.states[-2:] == ["RouteChildFailure", "ChildFailed"]
    assert service.business_runs == 1


@pytest.mark.slow
def test_parent_retries_in_progress_until_the_first_run_completes(make_service: ServiceFactory, gate: Gate):
    # Given a direct execution holding the order
    service = make_service(gate.handler)
    pipeline = service.nest_in(ORDER_WORKFLOW_ASL, "order-workflow")
    holder = service.start(ORDER)
    assert gate.entered.wait(10)

    # When the pipeline asks for the same order meanwhile, and the holder then finishes
    waiting = service.cloud.start_execution(pipeline, ORDER)
    service.cloud.wait_until(
        lambda: "WaitBeforeRetry" in service.cloud.states_so_far(waiting),
        timeout=20,
        what="pipeline backing off",
    )
    gate.open()
    first = service.cloud.wait(holder)
    result = service.cloud.wait(waiting)

    # Then the pipeline backed off, asked again, and got the first run's order
    assert result.status == "SUCCEEDED"
    assert "ScheduleRetry" in result.states
    assert result.output["order"] == first.output
    assert service.business_runs == 1


def test_any_task_can_be_the_business_step(local_cloud: LocalCloud):
    # Given the idempotency flow around an SQS send instead of a Lambda
    sqs = local_cloud.client("sqs")
    queue_url = sqs.create_queue(QueueName="orders")["QueueUrl"]
    service = IdempotentService(
        local_cloud, business_step=SQS_SEND_STEP, business_substitutions={"OrdersQueueUrl": queue_url}
    )

    # When the same order is sent twice
    first = service.run(ORDER)
    second = service.run(ORDER)

    # Then one message was sent; the duplicate replayed its message id
    assert first.status == "SUCCEEDED", (first.error, first.cause)
    assert first.states == ["Claim", "Execute", "Complete"]  # the provable key: three states
    assert second.output == first.output
    assert second.states[-1] == "Replay"
    messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
    assert [json.loads(m["Body"]) for m in messages] == [ORDER]
    assert first.output == {"messageId": messages[0]["MessageId"]}
    assert service.record_for(ORDER)["status"]["S"] == "COMPLETED"


def test_a_failing_custom_step_releases_the_claim(local_cloud: LocalCloud):
    # Given an SQS send to a queue that does not exist
    missing = f"https://sqs.us-east-1.amazonaws.com/{local_cloud.account}/missing"
    service = IdempotentService(
        local_cloud, business_step=SQS_SEND_STEP, business_substitutions={"OrdersQueueUrl": missing}
    )

    # When it runs, Then the send's error is the execution's, and no record is left behind
    result = service.run(ORDER)
    assert result.status == "FAILED"
    assert result.error.startswith("SQS.")
    assert result.states[-3:] == ["Release", "RouteBusinessError", "BusinessFailed"]
    assert service.records() == []


# -- every way the child can fail, as the pipeline's Catch hands it over ------------------------------
def pipeline_failing_with(failure: dict[str, Any]) -> str:
    """The order pipeline's own ASL with the child call replaced by that failure (and no real waits)."""
    document = json.loads(ORDER_WORKFLOW_ASL.read_text(encoding="utf-8"))
    states = document["States"]
    states["PlaceOrder"] = {
        "Type": "Pass",
        "Result": failure,
        "ResultPath": "$.failure",
        "Next": "ClassifyFailure",
    }
    states["WaitBeforeRetry"] = {"Type": "Pass", "Next": "PlaceOrder"}
    return json.dumps(document)


CHILD_ARN = "arn:aws:states:us-east-1:123456789012:execution:idempotency:child"


def describe(**fields: Any) -> str:
    return json.dumps({"ExecutionArn": CHILD_ARN, "Status": "FAILED", **fields}, separators=(",", ":"))


@pytest.mark.parametrize(
    ("failure", "last_state", "error"),
    [
        pytest.param(
            {
                "Error": "StepFunctions.AWSStepFunctionsException",
                "Cause": "Rate exceeded (Service: AWSStepFunctions)",
            },
            "ChildNotRun",
            "ChildWorkflowUnavailableError",
            id="service error, plain-text cause",
        ),
        pytest.param(
            {
                "Error": "States.TaskFailed",
                "Cause": describe(Error="InvalidOrderError", Cause="x" * 50)[:-20],
            },
            "ChildFailureUnreadable",
            "ChildWorkflowFailedError",
            id="cause cut short",
        ),
        pytest.param(
            {"Error": "States.TaskFailed"},
            "ChildFailureUnreadable",
            "ChildWorkflowFailedError",
            id="no cause",
        ),
        pytest.param(
            {"Error": "States.TaskFailed", "Cause": describe(Status="ABORTED")},
            "ChildStopped",
            "ChildWorkflowStoppedError",
            id="aborted child, no error",
        ),
        pytest.param(
            {"Error": "States.TaskFailed", "Cause": describe(Error="States.Runtime", Cause="boom")},
            "ChildRuntimeFailure",
            "ChildWorkflowFailedError",
            id="child failed with a States.* error",
        ),
        pytest.param(
            {"Error": "States.TaskFailed", "Cause": describe(Error="InvalidOrderError", Cause="amount")},
            "ChildFailed",
            "InvalidOrderError",
            id="child's own error",
        ),
        pytest.param(
            {
                "Error": "States.TaskFailed",
                "Cause": describe(Error="IdempotencyAlreadyInProgressError", Cause="x" * 100)[:-50],
            },
            "StillInProgress",
            "IdempotencyAlreadyInProgressError",
            id="in progress, cause cut short",
        ),
    ],
)
def test_every_child_failure_ends_in_a_named_outcome(
    local_cloud: LocalCloud, failure: dict[str, Any], last_state: str, error: str
):
    # Given the pipeline's Catch handing over this failure
    machine = local_cloud.create_state_machine("pipeline", pipeline_failing_with(failure), {})

    # When an order runs
    result = local_cloud.run(machine, ORDER)

    # Then it ends in its own named state and error, never States.Runtime or a re-thrown States.* name
    assert result.states[-1] == last_state
    assert result.error == error
    if last_state == "StillInProgress":
        assert result.states.count("ScheduleRetry") == 4
    if last_state == "ChildFailed":
        assert result.cause == "amount"
    if last_state in ("ChildStopped", "ChildRuntimeFailure"):
        assert CHILD_ARN in result.cause


# -- the same pipeline with its PlaceOrder wrapped inline (Express, no nested execution) -------------
@pytest.fixture
def inline_pipeline(idempotent_service: IdempotentService) -> str:
    settings = idempotent_service.settings
    return idempotent_service.deploy_inline(
        inline_workflows.order_pipeline(settings), "order-pipeline-inline"
    )


def test_the_inline_pipeline_places_once_and_notifies_the_same_order(
    idempotent_service: IdempotentService, inline_pipeline: str
):
    # When the same order goes through the Express pipeline twice, synchronously
    first = idempotent_service.cloud.run_sync(inline_pipeline, ORDER)
    second = idempotent_service.cloud.run_sync(inline_pipeline, ORDER)

    # Then the second notifies exactly what the first did, and the order was placed once, within
    # the pipeline's own execution (no child)
    assert first.status == second.status == "SUCCEEDED", (first.error, first.cause)
    assert second.output_json == first.output_json
    assert (
        first.output["notification"]
        == f"Order o-nested is placed as {first.output['order']['placedOrderId']}."
    )
    assert first.states[:3] == ["Prepare", "Validate", "PlaceOrder"]
    assert first.states[-1] == "Notify"
    assert "PlaceOrder.Replay" in second.states
    assert idempotent_service.business_runs == 1
    assert idempotent_service.cloud.executions(idempotent_service.state_machine_arn) == []

    # And its record is the direct workflow's: a direct start replays the pipeline's order
    direct = idempotent_service.run(ORDER)
    assert direct.output == first.output["order"]


def test_the_inline_pipeline_rejects_an_invalid_order_before_placing(
    idempotent_service: IdempotentService, inline_pipeline: str
):
    result = idempotent_service.cloud.run_sync(inline_pipeline, {"orderId": "o-x", "amount": -3})
    assert (result.status, result.error) == ("FAILED", "InvalidOrderError")
    assert result.states == ["Prepare", "Validate", "RejectInvalidOrder"]
    assert idempotent_service.records() == []
