"""A Task of a user's own machine, wrapped inline (wrap_state), run on the local engine as Standard
(StartExecution) and as Express (StartSyncExecution): the parent's state, records, business runs and
errors are what the issue promises."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from sfn_idempotency.deployed.records import owner_execution, plain
from sfn_idempotency.lambdas.place_order.orders import place_order
from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.controls.calls import Reply, interceptor
from sfn_idempotency.local.engine.cloud import INLINE_KEY_FUNCTION, INLINE_TABLE
from sfn_idempotency.local.engine.results import ExecutionResult
from sfn_idempotency.wrap import wrap_state
from tests.local.conftest import FLAVOURS, Gate

ORDER = {"orderId": "o-1", "amount": 25}
IN_PROGRESS_RETRY = {
    "ErrorEquals": ["IdempotencyAlreadyInProgressError"],
    "IntervalSeconds": 1,
    "MaxAttempts": 3,
    "BackoffRate": 1,
}


def user_machine(retry: list[dict[str, Any]] | None = None, language: str = "JSONPath") -> dict[str, Any]:
    """The user's three states: Prepare (Pass), PlaceOrder (Task), Confirm (Pass); a rejected order
    goes to the Task's own Catch. The JSONata machine makes the same outputs its own way."""
    if language == "JSONata":
        return jsonata_user_machine(retry)
    task: dict[str, Any] = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": "${PlaceOrderFunctionArn}", "Payload.$": "$.order"},
        "ResultSelector": {"confirmation.$": "$.Payload"},
        "ResultPath": "$.placed",
        "Catch": [{"ErrorEquals": ["InvalidOrderError"], "ResultPath": "$.rejection", "Next": "Rejected"}],
        "Next": "Confirm",
    }
    if retry:
        task["Retry"] = retry
    return {
        "Comment": "A user's machine",
        "StartAt": "Prepare",
        "States": {
            "Prepare": {
                "Type": "Pass",
                "Parameters": {"order.$": "$", "channel": "web"},
                "Next": "PlaceOrder",
            },
            "PlaceOrder": task,
            "Confirm": {
                "Type": "Pass",
                "Parameters": {"orderId.$": "$.order.orderId", "placed.$": "$.placed.confirmation"},
                "End": True,
            },
            "Rejected": {"Type": "Pass", "Parameters": {"rejected.$": "$.rejection.Error"}, "End": True},
        },
    }


def jsonata_user_machine(retry: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    task: dict[str, Any] = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Arguments": {"FunctionName": "${PlaceOrderFunctionArn}", "Payload": "{% $states.input %}"},
        "Output": "{% {'confirmation': $states.result.Payload} %}",
        "Catch": [
            {
                "ErrorEquals": ["InvalidOrderError"],
                "Output": "{% {'rejected': $states.errorOutput.Error} %}",
                "Next": "Rejected",
            }
        ],
        "Next": "Confirm",
    }
    if retry:
        task["Retry"] = retry
    return {
        "Comment": "A user's machine, in JSONata",
        "QueryLanguage": "JSONata",
        "StartAt": "Prepare",
        "States": {
            "Prepare": {"Type": "Pass", "Assign": {"order": "{% $states.input %}"}, "Next": "PlaceOrder"},
            "PlaceOrder": task,
            "Confirm": {
                "Type": "Pass",
                "Output": {"orderId": "{% $order.orderId %}", "placed": "{% $states.input.confirmation %}"},
                "End": True,
            },
            "Rejected": {"Type": "Pass", "End": True},
        },
    }


# Where the order is in the PlaceOrder Task's input, per language (the key's JMESPath starts there).
ORDER_AT = {"JSONPath": "order.", "JSONata": ""}


@dataclass
class UserWorkflow:
    """The user's machine deployed on the engine, and how to run it as its type is run."""

    cloud: LocalCloud
    arn: str
    express: bool
    function_name: str
    language: str = "JSONPath"

    def run(self, execution_input: Any) -> ExecutionResult:
        if self.express:
            return self.cloud.run_sync(self.arn, execution_input)
        return self.cloud.run(self.arn, execution_input)

    @property
    def business_runs(self) -> int:
        return self.cloud.lambdas.invocations(self.function_name)

    def records(self) -> list[dict[str, Any]]:
        items = self.cloud.dynamodb.scan(TableName=INLINE_TABLE, ConsistentRead=True)["Items"]
        return [plain(item) for item in items]


Deploy = Callable[..., UserWorkflow]


@pytest.fixture(params=["STANDARD", "EXPRESS"])
def workflow_type(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=FLAVOURS)
def language(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def deploy(
    cloud: LocalCloud,
    workflow_type: str,
    handler: Callable[[Any, Any], Any],
    definition: dict[str, Any] | None = None,
    language: str = "JSONPath",
    **settings: Any,
) -> UserWorkflow:
    function = cloud.add_function("place-order", handler)
    text = json.dumps(definition or user_machine(language=language))
    key = f"{ORDER_AT[language]}orderId"
    express = workflow_type == "EXPRESS"
    for state, prefix in settings.pop("steps", {"PlaceOrder": "orders"}).items():
        text = wrap_state(text, state, key_prefix=prefix, event_key_jmespath=key, express=express, **settings)
    substitutions = {**cloud.idempotency_substitutions(), "PlaceOrderFunctionArn": function.arn}
    arn = cloud.create_state_machine("user-workflow", text, substitutions, workflow_type=workflow_type)
    return UserWorkflow(cloud, arn, express, function.name, language)


def placing(event: Any, context: Any) -> Any:
    return place_order(event)


@pytest.fixture
def user_workflow(local_cloud: LocalCloud, workflow_type: str, language: str) -> UserWorkflow:
    return deploy(local_cloud, workflow_type, placing, language=language)


def steps(states: list[str]) -> list[str]:
    """The states visited but a JSONPath step's Result pass (a JSONata step has none)."""
    return [state for state in states if not state.endswith(".Result")]


def claimed(language: str) -> list[str]:
    """The states of a step's first claim, by the provable key: a JSONata step's Claim; a JSONPath
    step keeps its input as it came first (Claim is JSONata, which writes numbers its own way)."""
    if language == "JSONata":
        return ["PlaceOrder.Claim"]
    return ["PlaceOrder.KeepEvent", "PlaceOrder.Claim"]


def first_path(language: str) -> list[str]:
    return [
        "Prepare",
        "PlaceOrder",
        *claimed(language),
        "PlaceOrder.Execute",
        "PlaceOrder.Complete",
        "Confirm",
    ]


def test_first_run_leaves_the_parent_state_as_the_plain_task_would(user_workflow: UserWorkflow):
    # When an order goes through the user's machine
    result = user_workflow.run(ORDER)

    # Then the parent's state after the step is what the plain Task makes (no bookkeeping), and the
    # order was placed once and recorded
    assert result.status == "SUCCEEDED", result.cause
    assert set(result.output) == {"orderId", "placed"}
    assert result.output["placed"]["orderId"] == "o-1"
    assert result.output["placed"]["status"] == "PLACED"
    assert steps(result.states) == first_path(user_workflow.language)
    assert user_workflow.business_runs == 1
    # And no key Lambda was called (the key is provable: a field of printable ASCII)
    assert user_workflow.cloud.lambdas.invocations(INLINE_KEY_FUNCTION) == 0
    (record,) = user_workflow.records()
    assert record["status"] == "COMPLETED"
    assert json.loads(record["data"]) == {"confirmation": result.output["placed"]}
    assert owner_execution(record["owner"]) == result.arn


def test_duplicate_leaves_the_identical_parent_state(user_workflow: UserWorkflow):
    # Given a placed order
    first = user_workflow.run(ORDER)

    # When the same order goes through again
    duplicate = user_workflow.run(dict(ORDER))

    # Then the parent's output is identical and the business step ran once
    assert duplicate.output_json == first.output_json
    assert user_workflow.business_runs == 1
    assert steps(duplicate.states) == [
        "Prepare",
        "PlaceOrder",
        *claimed(user_workflow.language),
        "PlaceOrder.Read",
        "PlaceOrder.RouteByRecord",
        "PlaceOrder.Replay",
        "Confirm",
    ]


def test_business_failure_is_released_and_caught_by_the_tasks_own_catch(user_workflow: UserWorkflow):
    # Given an order the business step rejects
    rejected = {"orderId": "o-bad", "amount": 0}

    # When it goes through
    result = user_workflow.run(rejected)

    # Then the Task's own Catch handled the business error, after the claim was released
    assert result.status == "SUCCEEDED"
    assert result.output == {"rejected": "InvalidOrderError"}
    assert result.states[-4:] == [
        "PlaceOrder.Release",
        "PlaceOrder.RouteBusinessError",
        "PlaceOrder.BusinessFailed",
        "Rejected",
    ]
    assert user_workflow.records() == []

    # And a retry runs the business step again
    user_workflow.run(rejected)
    assert user_workflow.business_runs == 2


def test_the_tasks_own_retry_retries_the_business_call_under_one_claim(local_cloud, workflow_type, language):
    # Given a business step that fails once with an error the Task retries
    calls = []

    def flaky(event: Any, context: Any) -> Any:
        calls.append(event)
        if len(calls) == 1:
            raise type("GatewayBusy", (Exception,), {})("try again")
        return place_order(event)

    retry = [{"ErrorEquals": ["GatewayBusy"], "IntervalSeconds": 1, "MaxAttempts": 2}]
    workflow = deploy(local_cloud, workflow_type, flaky, user_machine(retry, language), language)

    # When an order goes through
    result = workflow.run(ORDER)

    # Then the call was retried inside the flow: one claim, one completion, two calls
    assert result.status == "SUCCEEDED"
    assert steps(result.states) == first_path(language)
    assert workflow.business_runs == 2
    assert [record["status"] for record in workflow.records()] == ["COMPLETED"]


def test_payload_mismatch_fails_with_the_validation_error(local_cloud, workflow_type, language):
    validation = f"{ORDER_AT[language]}amount"
    workflow = deploy(
        local_cloud, workflow_type, placing, language=language, payload_validation_jmespath=validation
    )
    workflow.run(ORDER)

    result = workflow.run({**ORDER, "amount": 99})

    assert result.status == "FAILED"
    assert result.error == "IdempotencyValidationError"
    assert result.states[-1] == "PlaceOrder.ValidationFailed"
    assert workflow.business_runs == 1


def test_no_key_runs_the_task_without_a_record(local_cloud, workflow_type, language):
    # Given a business step that answers whatever it gets
    workflow = deploy(local_cloud, workflow_type, lambda event, context: {"seen": event}, language=language)

    # When an order without a key value goes through, twice
    results = [workflow.run({"orderId": None, "amount": 5}) for _ in range(2)]

    # Then the Task ran each time, its result in place, and nothing was recorded
    assert [result.output for result in results] == [
        {"orderId": None, "placed": {"seen": {"orderId": None, "amount": 5}}}
    ] * 2
    keyless = ["PlaceOrder.Claim", "PlaceOrder.RouteByEvent"]
    if language == "JSONPath":
        keyless = ["PlaceOrder.KeepEvent", *keyless]
    assert steps(results[0].states)[2:] == [*keyless, "PlaceOrder.ExecuteWithoutRecord", "Confirm"]
    assert workflow.business_runs == 2
    assert workflow.records() == []


def test_a_jsonpath_step_s_calls_get_its_input_as_it_came(local_cloud: LocalCloud, workflow_type: str):
    # Given a JSONPath step whose business call answers the types of what it got
    def types(event: Any, context: Any) -> dict[str, str]:
        return {field: type(event[field]).__name__ for field in ("orderId", "amount")}

    workflow = deploy(local_cloud, workflow_type, types, language="JSONPath")

    # When an order written with 5.0 runs (its key provable), then one whose key is 7.0 (the key
    # Lambda's: a number is outside the provable domain)
    provable = workflow.run({"orderId": "o-1", "amount": 5.0})
    lambda_keyed = workflow.run({"orderId": 7.0, "amount": 5.0})

    # Then each business call got 5.0 as sent, not as the JSONata Claim writes it (5)
    assert provable.output["placed"] == {"orderId": "str", "amount": "float"}
    assert lambda_keyed.output["placed"] == {"orderId": "float", "amount": "float"}
    assert "PlaceOrder.ComputeKey" in lambda_keyed.states
    # And the number key's record is Powertools' key of 7.0 as sent ("7.0" hashed, not "7")
    powertools_key = "orders#" + hashlib.md5(json.dumps(7.0).encode()).hexdigest()
    assert powertools_key in {record["id"] for record in workflow.records()}


def test_a_jsonpath_step_built_for_standard_fails_in_express_before_any_claim(local_cloud: LocalCloud):
    # Given a JSONPath step wrapped for a Standard machine, deployed as an Express one
    function = local_cloud.add_function("place-order", placing)
    text = wrap_state(
        json.dumps(user_machine()), "PlaceOrder", key_prefix="orders", event_key_jmespath="order.orderId"
    )
    substitutions = {**local_cloud.idempotency_substitutions(), "PlaceOrderFunctionArn": function.arn}
    machine = local_cloud.create_state_machine(
        "built-for-standard", text, substitutions, workflow_type="EXPRESS"
    )

    # When an order runs synchronously (its context has no RedriveCount)
    result = local_cloud.run_sync(machine, ORDER)

    # Then it failed loudly where the run is read first, naming the field: no call, no claim left
    # to block the retry once the step is built for Express
    assert (result.status, result.error) == ("FAILED", "States.Runtime")
    assert "specified for the field 'sfnIdempotencyClaimRun.$'" in result.cause
    assert result.states[-1] == "PlaceOrder.KeepEvent"
    assert local_cloud.lambdas.invocations("place-order") == 0
    assert local_cloud.items(INLINE_TABLE) == []


def test_no_key_fails_with_the_key_error_when_a_key_is_required(local_cloud, workflow_type, language):
    workflow = deploy(local_cloud, workflow_type, placing, language=language, raise_on_no_key=True)

    result = workflow.run({"amount": 5})

    assert result.status == "FAILED"
    assert result.error == "IdempotencyKeyError"
    assert workflow.business_runs == 0
    assert workflow.records() == []


class ReadThenSignal:
    """Answers the first GetItem with the record as it is then, and signals once that answer is
    fixed: opening the gate after the signal cannot let the Read see the completed record."""

    def __init__(self, cloud: LocalCloud) -> None:
        self.cloud = cloud
        self.answered = threading.Event()

    def hook(self, service: str, operation: str, params: dict[str, Any]) -> Reply | None:
        if (service, operation) != ("dynamodb", "GetItem") or self.answered.is_set():
            return None
        answer = self.cloud.dynamodb.get_item(**params)
        self.answered.set()
        return Reply(200, {name: value for name, value in answer.items() if name != "ResponseMetadata"})


def test_a_concurrent_duplicate_retries_on_in_progress_and_replays(workflow_type: str, language: str):
    # Given a user's Task that retries on IdempotencyAlreadyInProgressError after 1 s, and a first
    # execution holding the claim (real retry waits here: the duplicate must wait for the first)
    gate = Gate()
    with LocalCloud(retry_wait_scale=1.0) as cloud:
        workflow = deploy(
            cloud, workflow_type, gate.handler, user_machine([IN_PROGRESS_RETRY], language), language
        )
        with ThreadPoolExecutor(max_workers=2) as pool:
            first = pool.submit(workflow.run, ORDER)
            assert gate.entered.wait(10)

            # When a duplicate arrives, is told the key is in progress (its Read), and then the
            # first finishes before the duplicate's retry
            read = ReadThenSignal(cloud)
            interceptor.hooks.insert(0, read.hook)
            duplicate = pool.submit(workflow.run, dict(ORDER))
            assert read.answered.wait(10), "the duplicate's Read"
            gate.open()
            first_result, duplicate_result = first.result(30), duplicate.result(30)

    # Then the duplicate's retry replayed the first's result: identical parent state, one order
    assert first_result.status == duplicate_result.status == "SUCCEEDED"
    assert duplicate_result.output_json == first_result.output_json
    assert duplicate_result.states.count("PlaceOrder.AlreadyInProgress") == 1
    assert steps(duplicate_result.states)[-2:] == ["PlaceOrder.Replay", "Confirm"]
    assert workflow.business_runs == 1


def test_two_wrapped_steps_keep_their_own_records(local_cloud, workflow_type):
    # Given a machine placing and then confirming an order, each step wrapped with its own prefix
    definition = user_machine()
    states = definition["States"]
    states["Reserve"] = {**states["PlaceOrder"], "ResultPath": "$.reserved", "Next": "PlaceOrder"}
    del states["Reserve"]["Catch"]
    states["Prepare"]["Next"] = "Reserve"
    workflow = deploy(
        local_cloud,
        workflow_type,
        placing,
        definition,
        steps={"Reserve": "reservations", "PlaceOrder": "orders"},
    )

    # When the same order goes through twice
    first, second = workflow.run(ORDER), workflow.run(ORDER)

    # Then each step ran once, recorded under its own prefix, and both replayed
    assert first.status == "SUCCEEDED"
    assert second.output_json == first.output_json
    assert workflow.business_runs == 2
    assert sorted(record["id"].split("#")[0] for record in workflow.records()) == ["orders", "reservations"]
    assert "Reserve.Replay" in second.states
    assert "PlaceOrder.Replay" in second.states


def test_a_step_in_a_map_is_keyed_per_item(local_cloud, workflow_type):
    # Given a Map over orders whose iterator places each one
    task = {**user_machine()["States"]["PlaceOrder"], "OutputPath": "$.placed.confirmation", "End": True}
    del task["Next"]
    definition = {
        "StartAt": "EachOrder",
        "States": {
            "EachOrder": {
                "Type": "Map",
                "ItemsPath": "$.orders",
                "MaxConcurrency": 1,
                "ItemSelector": {"order.$": "$$.Map.Item.Value"},
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "PlaceOrder",
                    "States": {
                        "PlaceOrder": task,
                        "Rejected": {"Type": "Pass", "End": True},
                    },
                },
                "End": True,
            }
        },
    }
    workflow = deploy(local_cloud, workflow_type, placing, definition)
    orders = [{"orderId": "a", "amount": 1}, {"orderId": "b", "amount": 2}, {"orderId": "a", "amount": 1}]

    # When three items of which two share a key go through
    result = workflow.run({"orders": orders})

    # Then two orders were placed, and the third item replays the first's result
    assert result.status == "SUCCEEDED", result.cause
    placed = result.output
    assert [p["orderId"] for p in placed] == ["a", "b", "a"]
    assert placed[2] == placed[0]
    assert placed[1]["placedOrderId"] != placed[0]["placedOrderId"]
    assert workflow.business_runs == 2
    assert len(workflow.records()) == 2


def function_resource_machine(language: str) -> dict[str, Any]:
    """The user's machine with the function's ARN as the Task's Resource (its result is what the
    function returns), selected by a ResultSelector (JSONPath) or an Output (JSONata)."""
    machine = user_machine(language=language)
    task = machine["States"]["PlaceOrder"]
    task["Resource"] = "${PlaceOrderFunctionArn}"
    if language == "JSONata":
        del task["Arguments"]
        task["Output"] = (
            "{% {'confirmation': {'id': $states.result.placedOrderId, 'order': $states.result}} %}"
        )
    else:
        task["Parameters"] = {"order.$": "$.order"}  # the payload, a template of the input
        task["ResultSelector"] = {"confirmation": {"id.$": "$.placedOrderId", "order.$": "$"}}
    return machine


@pytest.mark.parametrize("language", FLAVOURS)
def test_a_function_resource_with_its_selection_runs_as_the_plain_task_would(
    local_cloud: LocalCloud, language: str
):
    # Given the same machine plain and with its Task wrapped (which calls the function through
    # lambda:invoke, for the redrive fence)
    seen: list[Any] = []

    def handler(event: Any, context: Any) -> Any:
        seen.append(event)
        return place_order(event["order"] if language == "JSONPath" else event)

    machine = function_resource_machine(language)
    plain_arn = local_cloud.create_state_machine(
        "plain",
        json.dumps(machine),
        {"PlaceOrderFunctionArn": local_cloud.add_function("plain-f", handler).arn},
    )
    wrapped = deploy(local_cloud, "STANDARD", handler, definition=machine, language=language)

    # When one order runs through each
    plain_result, wrapped_result = local_cloud.run(plain_arn, ORDER), wrapped.run(ORDER)

    # Then the function saw the same payload and the machines' outputs have the same shape
    assert plain_result.status == wrapped_result.status == "SUCCEEDED", (
        plain_result.cause,
        wrapped_result.cause,
    )
    assert seen[0] == seen[1]
    placed, replayed = plain_result.output["placed"], wrapped_result.output["placed"]
    assert set(placed) == set(replayed) == {"id", "order"}
    assert replayed["id"] == replayed["order"]["placedOrderId"]
    assert wrapped.run(ORDER).output == wrapped_result.output
    assert wrapped.business_runs == 1
