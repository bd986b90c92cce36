"""wrap_state's rewrite of a user's definition: what it derives from idempotency.asl.json, where the
Task's own fields go, and one clear error for each thing it cannot wrap."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from sfn_idempotency.flow.definitions import placeholders
from sfn_idempotency.flow.provable_key import DISABLED
from sfn_idempotency.flow.resources import IDEMPOTENCY_ASL, IDEMPOTENCY_FLOWS
from sfn_idempotency.flow.wrapped_steps import wrapped_steps
from sfn_idempotency.wrap import (
    KEY_FUNCTION_PLACEHOLDER,
    TABLE_PLACEHOLDER,
    WrapError,
    settings_of_step,
    wrap_state,
)

PLACE_ORDER: dict[str, Any] = {
    "Type": "Task",
    "Resource": "arn:aws:states:::lambda:invoke",
    "Parameters": {"FunctionName": "${PlaceOrderFunctionArn}", "Payload.$": "$.order"},
    "ResultSelector": {"confirmation.$": "$.Payload"},
    "ResultPath": "$.placed",
    "OutputPath": "$.placed",
    "TimeoutSeconds": 20,
    "Retry": [
        {"ErrorEquals": ["Lambda.TooManyRequestsException"], "MaxAttempts": 2},
        {"ErrorEquals": ["IdempotencyAlreadyInProgressError", "Flaky"], "IntervalSeconds": 5},
    ],
    "Catch": [
        {"ErrorEquals": ["States.Timeout", "OrderRejected"], "ResultPath": "$.why", "Next": "Rejected"}
    ],
    "Next": "Confirm",
}


def user_definition(**task_changes: Any) -> dict[str, Any]:
    task = {**copy.deepcopy(PLACE_ORDER), **task_changes}
    task = {field: value for field, value in task.items() if value is not ...}
    return {
        "StartAt": "Prepare",
        "States": {
            "Prepare": {"Type": "Pass", "Next": "PlaceOrder"},
            "PlaceOrder": task,
            "Confirm": {"Type": "Pass", "End": True},
            "Rejected": {"Type": "Pass", "End": True},
        },
    }


LONG_NAME = "Place" * 14
LONG_NAMED = {
    "StartAt": LONG_NAME,
    "States": {LONG_NAME: {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": True}},
}


def wrapped(
    definition: dict[str, Any] | None = None, state: str = "PlaceOrder", **settings: Any
) -> dict[str, Any]:
    settings.setdefault("key_prefix", "orders")
    document: dict[str, Any] = json.loads(
        wrap_state(json.dumps(definition or user_definition()), state, **settings)
    )
    return document


def flow_states() -> dict[str, Any]:
    states: dict[str, Any] = json.loads(IDEMPOTENCY_ASL.read_text(encoding="utf-8"))["States"]
    return states


def test_the_task_becomes_a_parallel_and_a_result_pass_in_its_place():
    # When the Task is wrapped
    states = wrapped()["States"]

    # Then its name is the Parallel (what led to the Task leads to the flow), then its Result state,
    # which continues where the Task did; nothing else of the machine moved
    assert list(states) == ["Prepare", "PlaceOrder", "PlaceOrder.Result", "Confirm", "Rejected"]
    assert states["Prepare"]["Next"] == "PlaceOrder"
    parallel, result = states["PlaceOrder"], states["PlaceOrder.Result"]
    assert parallel["Type"] == "Parallel"
    assert parallel["Next"] == "PlaceOrder.Result"
    assert result["Next"] == "Confirm"
    # The branch's one output travels in one variable, cleared by the state that reads it
    assert parallel["ResultPath"] is None
    assert parallel["Assign"] == {"idempotent_PlaceOrder.$": "$[0]"}
    assert result["InputPath"] == "$idempotent_PlaceOrder"
    assert result["Assign"] == {"idempotent_PlaceOrder": None}
    # The Task's ResultPath and OutputPath apply once, to that output
    assert (result["ResultPath"], result["OutputPath"]) == ("$.placed", "$.placed")


def test_the_branch_is_the_flow_of_idempotency_asl_renamed_under_the_step():
    # When the Task is wrapped
    branch = wrapped()["States"]["PlaceOrder"]["Branches"][0]
    source = flow_states()

    # Then the branch has every state of the flow file, renamed, after KeepEvent, which keeps the
    # step's input as it came (its Claim is JSONata, which writes 5.0 as 5)
    assert branch["StartAt"] == "PlaceOrder.KeepEvent"
    assert list(branch["States"]) == ["PlaceOrder.KeepEvent", *(f"PlaceOrder.{name}" for name in source)]
    # (and reads the run as the fence does: a step built for Standard fails there in Express)
    assert branch["States"]["PlaceOrder.KeepEvent"]["Assign"] == {
        "sfnIdempotencyEvent.$": "$",
        "sfnIdempotencyClaimRun.$": "$$.Execution.RedriveCount",
    }
    # And Claim keys that variable by the provable key
    claim = json.dumps(branch["States"]["PlaceOrder.Claim"])
    assert "$states.input" not in claim
    assert "$event := $sfnIdempotencyEvent" in claim
    # And the states that are not the business step or the key's computations are the file's,
    # transitions renamed and the table a placeholder of its own
    for name, state in source.items():
        if name in ("ComputeKey", "RecomputeKey", "Execute", "ExecuteWithoutRecord", "Claim"):
            continue
        derived = json.dumps(branch["States"][f"PlaceOrder.{name}"])
        expected = json.dumps(state).replace("${TableName}", f"${{{TABLE_PLACEHOLDER}}}")
        for other in source:
            expected = expected.replace(f'"Next": "{other}"', f'"Next": "PlaceOrder.{other}"')
            expected = expected.replace(f'"Default": "{other}"', f'"Default": "PlaceOrder.{other}"')
        assert derived == expected, name


def test_the_business_state_is_the_task_seeing_what_the_task_saw():
    states = wrapped()["States"]["PlaceOrder"]["Branches"][0]["States"]
    for name in ("PlaceOrder.Execute", "PlaceOrder.ExecuteWithoutRecord"):
        business = states[name]
        # Then it runs the Task's Resource and Parameters on the event (the Task's effective input)
        assert business["Resource"] == PLACE_ORDER["Resource"]
        assert business["InputPath"] == "$sfnIdempotencyEvent"
        assert business["TimeoutSeconds"] == 20
        assert "TimeoutSecondsPath" not in business
        # And retries the business call only on the Task's own errors (not the idempotency ones)
        assert business["Retry"] == [
            {"ErrorEquals": ["Lambda.TooManyRequestsException"], "MaxAttempts": 2},
            {"ErrorEquals": ["Flaky"], "IntervalSeconds": 5},
        ]
    # Without a record there is no claim to fence: the Task's own Parameters
    assert states["PlaceOrder.ExecuteWithoutRecord"]["Parameters"] == PLACE_ORDER["Parameters"]
    # With one, the Task's function is called only in the run that made the claim (the fence of
    # the flow file's Execute, with the Task's function and the shared key Lambda)
    fenced = states["PlaceOrder.Execute"]["Parameters"]
    flow_fence = flow_states()["Execute"]["Parameters"]["FunctionName.$"]
    assert fenced == {
        "FunctionName.$": flow_fence.replace(
            "'${BusinessFunctionArn}'", "'${PlaceOrderFunctionArn}'"
        ).replace("${ComputeKeyFunctionArn}", f"${{{KEY_FUNCTION_PLACEHOLDER}}}"),
        "Payload.$": "$.order",
    }
    # The ResultSelector applies once, before the result is recorded (kept in a variable, out of
    # the state's data)
    assert "ResultSelector" not in states["PlaceOrder.Execute"]
    assert states["PlaceOrder.Execute"]["Assign"]["sfnIdempotencyResult"] == {
        "value": PLACE_ORDER["ResultSelector"]
    }
    assert states["PlaceOrder.ExecuteWithoutRecord"]["ResultSelector"] == PLACE_ORDER["ResultSelector"]


def test_retry_on_idempotency_errors_and_catch_belong_to_the_whole_step():
    parallel = wrapped()["States"]["PlaceOrder"]
    # A parent retrying on in-progress computes the key again (and then replays)
    assert parallel["Retry"] == [{"ErrorEquals": ["IdempotencyAlreadyInProgressError"], "IntervalSeconds": 5}]
    # A Catch naming States.Timeout also names what the flow reports it as
    assert parallel["Catch"] == [
        {
            "ErrorEquals": ["States.Timeout", "OrderRejected", "BusinessStepTimeoutError"],
            "ResultPath": "$.why",
            "Next": "Rejected",
        }
    ]


def test_compute_key_carries_the_validated_settings_and_the_event_selection():
    definition = wrapped(
        user_definition(InputPath="$.order"),
        event_key_jmespath="orderId",
        payload_validation_jmespath="amount",
        hash_function="sha256",
        expires_after_seconds=7200,
    )
    branch = definition["States"]["PlaceOrder"]["Branches"][0]["States"]
    compute_key, recompute_key = branch["PlaceOrder.ComputeKey"], branch["PlaceOrder.RecomputeKey"]
    assert compute_key["Parameters"]["FunctionName"] == f"${{{KEY_FUNCTION_PLACEHOLDER}}}"
    # The event is the Task's effective input as KeepEvent kept it, before Claim and after the
    # redrive fence alike (the Task's InputPath is not applied twice)
    assert branch["PlaceOrder.KeepEvent"]["Assign"]["sfnIdempotencyEvent.$"] == "$.order"
    assert compute_key["Parameters"]["Payload"]["event.$"] == "$sfnIdempotencyEvent"
    assert recompute_key["Parameters"] == compute_key["Parameters"]
    settings = settings_of_step(json.dumps(definition), "PlaceOrder")
    assert (settings.key_prefix, settings.event_key_jmespath, settings.hash_function) == (
        "orders",
        "orderId",
        "sha256",
    )
    assert settings.payload_validation_jmespath == "amount"
    assert settings.timeout_seconds == 20  # the Task's own TimeoutSeconds
    # The lease covers both attempts of the business call (Lambda.TooManyRequestsException retried
    # twice: 3 attempts, Flaky 3 more) at the timeout, plus the claim phase and the margin
    assert settings.lease >= 6 * 20
    assert settings.expires_after_seconds == 7200


def test_a_null_input_path_gives_the_key_an_empty_object():
    branch = wrapped(user_definition(InputPath=None))["States"]["PlaceOrder"]["Branches"][0]["States"]
    assert branch["PlaceOrder.KeepEvent"]["Assign"]["sfnIdempotencyEvent"] == {}
    # (and keyed by the Lambda alone, the payload's event is the empty object itself)
    lambda_keyed = wrapped(user_definition(InputPath=None), hash_function="blake2b")
    compute_key = lambda_keyed["States"]["PlaceOrder"]["Branches"][0]["States"]["PlaceOrder.ComputeKey"]
    assert compute_key["Parameters"]["Payload"]["event"] == {}


def test_settings_that_can_never_be_proven_start_at_the_key_lambda_with_the_input_as_it_came():
    # Given a hash $hash lacks, When the Task is wrapped
    branch = wrapped(user_definition(InputPath="$.order"), hash_function="blake2b")["States"]["PlaceOrder"]
    flow = branch["Branches"][0]
    # Then no KeepEvent, no Claim: the key Lambda reads the Task's input, and hands it on as $.event
    assert flow["StartAt"] == "PlaceOrder.ComputeKey"
    assert {"PlaceOrder.KeepEvent", "PlaceOrder.Claim"}.isdisjoint(flow["States"])
    assert flow["States"]["PlaceOrder.ComputeKey"]["Parameters"]["Payload"]["event.$"] == "$.order"
    assert flow["States"]["PlaceOrder.Execute"]["InputPath"] == "$.event"


def test_the_wrapped_definition_needs_the_two_shared_placeholders_and_its_own():
    text = json.dumps(wrapped())
    assert placeholders(text) == {KEY_FUNCTION_PLACEHOLDER, TABLE_PLACEHOLDER, "PlaceOrderFunctionArn"}


def test_a_task_that_ends_the_machine_still_ends_it():
    definition = user_definition(Next=..., End=True)
    states = wrapped(definition)["States"]
    assert states["PlaceOrder.Result"]["End"] is True
    assert "Next" not in states["PlaceOrder.Result"]


def test_two_steps_with_their_own_prefixes_do_not_collide():
    # Given a machine with two Tasks
    definition = user_definition()
    definition["States"]["Prepare"] = {**PLACE_ORDER, "Catch": [], "Next": "PlaceOrder"}
    del definition["States"]["Prepare"]["OutputPath"]

    # When both are wrapped with their own prefixes
    once = wrap_state(json.dumps(definition), "PlaceOrder", key_prefix="orders")
    twice = json.loads(wrap_state(once, "Prepare", key_prefix="reservations"))

    # Then both flows are there, under their own names and variables
    assert wrapped_steps(twice) == {"Prepare": "reservations", "PlaceOrder": "orders"}
    assert twice["States"]["Prepare"]["Assign"] == {"idempotent_Prepare.$": "$[0]"}


def test_a_task_inside_a_map_is_wrapped_where_it_is():
    definition = {
        "StartAt": "EachOrder",
        "States": {
            "EachOrder": {
                "Type": "Map",
                "ItemProcessor": {
                    "StartAt": "PlaceOrder",
                    "States": {
                        "PlaceOrder": {**PLACE_ORDER, "Catch": [], "Next": "Done"},
                        "Done": {"Type": "Succeed"},
                    },
                },
                "End": True,
            }
        },
    }
    processor = wrapped(definition)["States"]["EachOrder"]["ItemProcessor"]["States"]
    assert list(processor) == ["PlaceOrder", "PlaceOrder.Result", "Done"]


@pytest.mark.parametrize(
    ("definition", "state", "settings", "message"),
    [
        (user_definition(), "Nowhere", {}, "no state named 'Nowhere'"),
        (user_definition(), "Confirm", {}, "state 'Confirm' is a Pass, not a Task"),
        (
            {**user_definition(), "QueryLanguage": "JSONata"},
            "PlaceOrder",
            {},
            "has OutputPath, Parameters, ResultPath, ResultSelector, which an inline idempotent step of JSONata",
        ),
        (
            user_definition(QueryLanguage="JSONPathh"),
            "PlaceOrder",
            {},
            "the unknown QueryLanguage 'JSONPathh'",
        ),
        (
            user_definition(Assign={"x.$": "$"}),
            "PlaceOrder",
            {},
            "has Assign, which an inline idempotent step",
        ),
        (
            user_definition(TimeoutSecondsPath="$.t", TimeoutSeconds=...),
            "PlaceOrder",
            {},
            "has TimeoutSecondsPath",
        ),
        (
            user_definition(),
            "PlaceOrder",
            {"timeout_seconds": 30},
            "has TimeoutSeconds 20, and the timeout given is 30",
        ),
        (user_definition(), "PlaceOrder", {"key_prefix": " "}, "IDEMPOTENCY_KEY_PREFIX: must not be blank"),
        (user_definition(), "PlaceOrder", {"hash_function": "nope"}, "IDEMPOTENCY_HASH_FUNCTION: 'nope'"),
        (user_definition(), "PlaceOrder", {"event_key_jmespath": "a["}, "IDEMPOTENCY_EVENT_KEY_JMESPATH"),
        (
            user_definition(),
            "PlaceOrder",
            {"expires_after_seconds": 30},
            "IDEMPOTENCY_EXPIRES_AFTER_SECONDS (30) must be at least the lease",
        ),
        (
            user_definition(),
            "PlaceOrder",
            {"result_variable": "1x"},
            "result variable '1x' is not a workflow variable name",
        ),
        (
            user_definition(Catch=[]),
            "PlaceOrder",
            {"result_variable": "x" * 81},
            "is not a workflow variable name",
        ),
        (LONG_NAMED, LONG_NAME, {}, "too long to wrap"),
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 40 else None,
)
def test_what_cannot_be_wrapped_is_refused_with_one_clear_reason(definition, state, settings, message):
    with pytest.raises(WrapError) as raised:
        wrapped(definition, state, **settings)
    assert message in str(raised.value)


def test_a_step_is_wrapped_once():
    once = json.dumps(wrapped())
    with pytest.raises(WrapError, match="state 'PlaceOrder' is already wrapped"):
        wrap_state(once, "PlaceOrder", key_prefix="again")
    with pytest.raises(WrapError, match="belongs to the already wrapped step 'PlaceOrder'"):
        wrap_state(once, "PlaceOrder.Execute", key_prefix="again")


def test_a_key_prefix_is_used_once_per_machine():
    definition = user_definition()
    definition["States"]["Prepare"] = {**PLACE_ORDER, "Catch": [], "Next": "PlaceOrder"}
    once = wrap_state(json.dumps(definition), "PlaceOrder", key_prefix="orders")
    with pytest.raises(
        WrapError, match="key prefix 'orders' is already used by the wrapped step 'PlaceOrder'"
    ):
        wrap_state(once, "Prepare", key_prefix="orders")


def test_state_names_and_variables_of_the_user_are_never_taken():
    definition = user_definition()
    definition["States"]["PlaceOrder.Claim"] = {"Type": "Pass", "End": True}
    with pytest.raises(WrapError, match=r"already has states named \['PlaceOrder.Claim'\]"):
        wrapped(definition)
    definition = user_definition()
    definition["States"]["Prepare"]["Assign"] = {"idempotent_PlaceOrder": 1}
    with pytest.raises(WrapError, match="already uses the variable 'idempotent_PlaceOrder'"):
        wrapped(definition)


def test_a_definition_that_is_not_asl_is_refused():
    with pytest.raises(WrapError, match="not JSON"):
        wrap_state("{", "PlaceOrder", key_prefix="orders")
    with pytest.raises(WrapError, match="no States object"):
        wrap_state("[]", "PlaceOrder", key_prefix="orders")


def test_a_misspelt_or_missing_setting_is_refused():
    with pytest.raises(WrapError, match="unexpected keyword argument 'key_prefx'"):
        wrap_state(json.dumps(user_definition()), "PlaceOrder", key_prefix="a", key_prefx="b")
    with pytest.raises(WrapError, match="missing 1 required keyword-only argument: 'key_prefix'"):
        wrap_state(json.dumps(user_definition()), "PlaceOrder")


# -- a Task of JSONata ---------------------------------------------------------------------------
JSONATA_TASK: dict[str, Any] = {
    "Type": "Task",
    "Resource": "arn:aws:states:::lambda:invoke",
    "Arguments": {"FunctionName": "${PlaceOrderFunctionArn}", "Payload": "{% $states.input.order %}"},
    "Output": "{% $merge([$states.input, {'placed': $states.result.Payload}]) %}",
    "TimeoutSeconds": 20,
    "Retry": [{"ErrorEquals": ["IdempotencyAlreadyInProgressError"], "IntervalSeconds": 2}],
    "Catch": [{"ErrorEquals": ["States.Timeout"], "Output": "{% $states.errorOutput %}", "Next": "Rejected"}],
    "Next": "Confirm",
}


def jsonata_definition(**task_changes: Any) -> dict[str, Any]:
    definition = user_definition()
    definition["QueryLanguage"] = "JSONata"
    definition["States"]["PlaceOrder"] = {**JSONATA_TASK, **task_changes}
    return definition


def test_a_jsonata_task_becomes_one_parallel_that_unwraps_its_result():
    states = wrapped(jsonata_definition())["States"]

    # Then one state stands where the Task stood: its Parallel returns the branch's output itself
    assert list(states) == ["Prepare", "PlaceOrder", "Confirm", "Rejected"]
    parallel = states["PlaceOrder"]
    assert parallel["Output"] == "{% $states.result[0] %}"
    assert (parallel["Next"], "Assign" in parallel, "ResultPath" in parallel) == ("Confirm", False, False)
    assert parallel["Retry"] == JSONATA_TASK["Retry"]
    assert parallel["Catch"][0]["ErrorEquals"] == ["States.Timeout", "BusinessStepTimeoutError"]
    # And its branch is the JSONata flow, the Task's Arguments and Output in the business state
    branch = parallel["Branches"][0]["States"]
    jsonata_flow = json.loads(IDEMPOTENCY_FLOWS["JSONata"].read_text(encoding="utf-8"))["States"]
    assert list(branch) == [f"PlaceOrder.{name}" for name in jsonata_flow]
    assert parallel["Branches"][0]["StartAt"] == "PlaceOrder.Claim"
    execute = branch["PlaceOrder.Execute"]
    flow_fence = jsonata_flow["Execute"]["Arguments"]["FunctionName"]
    assert execute["Arguments"] == {
        **JSONATA_TASK["Arguments"],
        "FunctionName": flow_fence.replace("${BusinessFunctionArn}", "${PlaceOrderFunctionArn}").replace(
            "${ComputeKeyFunctionArn}", f"${{{KEY_FUNCTION_PLACEHOLDER}}}"
        ),
    }
    assert execute["Output"] == JSONATA_TASK["Output"]
    assert execute["TimeoutSeconds"] == 20
    assert "Retry" not in execute
    compute_key = branch["PlaceOrder.ComputeKey"]["Arguments"]
    assert compute_key["Payload"]["event"] == "{% $states.input %}"
    assert compute_key["Payload"]["settings"]["IDEMPOTENCY_KEY_PREFIX"] == "orders"
    # And its Claim claims by the provable key, the step's settings written in, in the step's table
    claim = branch["PlaceOrder.Claim"]
    assert claim["Arguments"]["TableName"] == f"${{{TABLE_PLACEHOLDER}}}"
    assert "'orders' & '#' & $digest(" in claim["Arguments"]["Item"].replace('"orders"', "'orders'")
    assert placeholders(json.dumps(claim)) == {TABLE_PLACEHOLDER}


@pytest.mark.parametrize(
    ("settings", "start"),
    [
        ({"hash_function": "blake2b"}, "PlaceOrder.ComputeKey"),  # no $hash for it: never provable
        ({"event_key_jmespath": "items[0]"}, "PlaceOrder.ComputeKey"),  # no JSONata translation
        ({"disabled": True}, "PlaceOrder.Claim"),
    ],
)
def test_a_jsonata_step_claims_by_the_provable_key_where_its_settings_allow(settings, start):
    branch = wrapped(jsonata_definition(), **settings)["States"]["PlaceOrder"]["Branches"][0]

    # Then a key the provable key can never compute starts at ComputeKey, without Claim's two states
    assert branch["StartAt"] == start
    assert ("PlaceOrder.Claim" in branch["States"]) == (start == "PlaceOrder.Claim")
    # And a disabled step's Claim ends its expression with the disabled error, for RouteByEvent
    if settings.get("disabled"):
        item = branch["States"]["PlaceOrder.Claim"]["Arguments"]["Item"]
        assert f"$error('{DISABLED}')" in item


def test_a_jsonata_state_in_a_jsonpath_machine_gets_a_flow_that_says_so():
    definition = user_definition()
    definition["States"]["PlaceOrder"] = {**JSONATA_TASK, "QueryLanguage": "JSONata"}
    parallel = wrapped(definition)["States"]["PlaceOrder"]
    assert parallel["QueryLanguage"] == "JSONata"
    assert {state["QueryLanguage"] for state in parallel["Branches"][0]["States"].values()} == {"JSONata"}


@pytest.mark.parametrize(
    ("definition", "settings", "message"),
    [
        (
            jsonata_definition(TimeoutSeconds="{% $states.input.t %}"),
            {},
            "has a TimeoutSeconds that is not a number",
        ),
        (jsonata_definition(Assign={"x": 1}), {}, "has Assign, which an inline idempotent step of JSONata"),
        (jsonata_definition(), {"result_variable": "mine"}, "is JSONata: its step needs no result variable"),
        (
            {
                **jsonata_definition(),
                "States": {
                    **jsonata_definition()["States"],
                    "Prepare": {"Type": "Pass", "Assign": {"sfnIdempotencyRecord": 1}, "Next": "PlaceOrder"},
                },
            },
            {},
            "already uses the variable 'sfnIdempotencyRecord'",
        ),
    ],
)
def test_what_a_jsonata_step_cannot_be_is_refused(definition, settings, message):
    with pytest.raises(WrapError) as raised:
        wrapped(definition, **settings)
    assert message in str(raised.value)


def test_a_step_built_for_express_keeps_the_run_as_the_first():
    # When the Task is wrapped for an Express machine (no RedriveCount in its context)
    branch = wrapped(express=True)["States"]["PlaceOrder"]["Branches"][0]["States"]
    # Then KeepEvent reads no run: it is the first, as every reading of the run in the branch is
    assert branch["PlaceOrder.KeepEvent"]["Assign"] == {
        "sfnIdempotencyEvent.$": "$",
        "sfnIdempotencyClaimRun": 0,
    }
    assert "$$.Execution.RedriveCount" not in json.dumps(branch)
