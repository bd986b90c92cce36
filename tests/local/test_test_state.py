"""AWS's unit-test APIs, offline: TestState (each request field, each refusal) and
ValidateStateMachineDefinition, and the idempotency flow unit-tested state by state with them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sfn_idempotency.flow import definitions, provable_key
from sfn_idempotency.flow.resources import IDEMPOTENCY_FLOWS
from sfn_idempotency.local import LocalCloud
from sfn_idempotency.settings import example_settings
from sfn_idempotency.wrap import wrap_state
from tests.local.conftest import FLAVOURS

ROLE = "arn:aws:iam::123456789012:role/test-state"
ORDER = {"orderId": "o-1", "amount": 5}
CONDITIONAL_CHECK_FAILED = {
    "error": "DynamoDB.ConditionalCheckFailedException",
    "cause": "The conditional request failed",
}
SUBSTITUTIONS = {
    "ComputeKeyFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:compute-key",
    "BusinessFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:place-order",
    "TableName": "records",
}
IDEMPOTENCY = {  # the ComputeKey block the flow's states read
    "key": "orders#abc",
    "validation": "",
    "claimToken": "0" * 32,
    "now": 1,
    "nowMs": 1000,
    "expiration": 3601,
    "inProgressExpiration": 61_000,
    "completedExpiration": 3661,
    "timeoutSeconds": 30,
    "maxClaimAttempts": 3,
}
LAMBDA_TASK = {
    "Type": "Task",
    "Resource": "arn:aws:states:::lambda:invoke",
    "Parameters": {"FunctionName": "f"},
}
COMPLETED = {
    "Item": {"id": {"S": "orders#abc"}, "status": {"S": "COMPLETED"}, "data": {"S": '{"placed": true}'}}
}


def flow(language: str) -> str:
    text = IDEMPOTENCY_FLOWS[language].read_text(encoding="utf-8")
    return definitions.render(text, {**SUBSTITUTIONS, **provable_key.substitutions(example_settings(), text)})


def flow_input(language: str, **extra: Any) -> tuple[str, str]:
    """The state input and variables a flow state sees, in each flavour: the record Read brought
    back and the business step's result are workflow variables in both; JSONata keeps the rest of
    its bookkeeping in variables too, JSONPath in the state."""
    variables = {f"sfnIdempotency{k.title()}": v for k, v in extra.items()}
    if language == "JSONata":
        return json.dumps(ORDER), json.dumps({"sfnIdempotency": IDEMPOTENCY, **variables})
    state = {"event": ORDER, "idempotency": IDEMPOTENCY, "claim": {"attempts": 1}}
    return json.dumps(state), json.dumps(variables)


# -- the flow, state by state (docs/guides/test-state.md) -------------------------------------------
# What an execution's context holds and TestState's own does not: the run (redrive count).
EXECUTION_CONTEXT = {
    "Execution": {"Id": "arn:aws:states:us-east-1:123456789012:execution:orders:e-1", "RedriveCount": 0}
}


@pytest.mark.parametrize("language", FLAVOURS)
def test_a_refused_claim_goes_to_read(local_cloud: LocalCloud, language: str):
    state_input, variables = flow_input(language)
    answer = local_cloud.test_state(
        definition=flow(language),
        stateName="ClaimComputedKey",
        input=state_input,
        variables=variables,
        context=json.dumps(EXECUTION_CONTEXT),  # Claim writes the run it is in (the redrive fence's)
        mock={"errorOutput": CONDITIONAL_CHECK_FAILED},
        inspectionLevel="DEBUG",
    )
    assert (answer["status"], answer["nextState"]) == ("CAUGHT_ERROR", "Read")
    assert answer["error"] == "DynamoDB.ConditionalCheckFailedException"
    assert answer["inspectionData"]["errorDetails"] == {"catchIndex": 0}


@pytest.mark.parametrize("language", FLAVOURS)
def test_a_completed_record_is_replayed(local_cloud: LocalCloud, language: str):
    state_input, variables = flow_input(language, record=COMPLETED)
    answer = local_cloud.test_state(
        definition=flow(language),
        stateName="RouteByRecord",
        input=state_input,
        variables=variables,
        roleArn=ROLE,
    )
    assert (answer["status"], answer["nextState"]) == ("SUCCEEDED", "Replay")


@pytest.mark.parametrize("language", FLAVOURS)
def test_a_refused_complete_is_a_lost_lease(local_cloud: LocalCloud, language: str):
    # Complete's input: the business step's result is in a variable
    state_input, variables = flow_input(language, result={"value": {"placed": True}})
    answer = local_cloud.test_state(
        definition=flow(language),
        stateName="Complete",
        input=state_input,
        variables=variables,
        mock={"errorOutput": CONDITIONAL_CHECK_FAILED},
    )
    assert (answer["status"], answer["nextState"]) == ("CAUGHT_ERROR", "LeaseLost")


@pytest.mark.parametrize("language", FLAVOURS)
def test_a_wrapped_steps_business_error_is_caught_by_the_users_catch(local_cloud: LocalCloud, language: str):
    # Given a user's Task wrapped inline: one Parallel, whose Catch is the user's
    task: dict[str, Any] = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Next": "Done"}
    if language == "JSONata":
        task |= {"Arguments": {"FunctionName": "pay", "Payload": "{% $states.input %}"}}
        task["Catch"] = [
            {"ErrorEquals": ["CardDeclined"], "Output": "{% $states.errorOutput %}", "Next": "Declined"}
        ]
    else:
        task |= {"Parameters": {"FunctionName": "pay", "Payload.$": "$"}}
        task["Catch"] = [{"ErrorEquals": ["CardDeclined"], "ResultPath": "$.declined", "Next": "Declined"}]
    machine = {
        "QueryLanguage": language,
        "StartAt": "Pay",
        "States": {"Pay": task, "Done": {"Type": "Succeed"}, "Declined": {"Type": "Succeed"}},
    }
    wrapped = wrap_state(json.dumps(machine), "Pay", key_prefix="payments", event_key_jmespath="orderId")

    # When the Parallel is tested with the business error as its mock
    answer = local_cloud.test_state(
        definition=definitions.render(
            wrapped,
            {
                "IdempotencyTableName": "records",
                "IdempotencyKeyFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:k",
            },
        ),
        stateName="Pay",
        input=json.dumps(ORDER),
        mock={"errorOutput": {"error": "CardDeclined", "cause": "insufficient funds"}},
    )

    # Then the user's Catch caught it, as on AWS
    assert (answer["status"], answer["nextState"], answer["error"]) == (
        "CAUGHT_ERROR",
        "Declined",
        "CardDeclined",
    )


# -- request fields ---------------------------------------------------------------------------


def test_input_result_selector_and_result_path_are_inspected(local_cloud: LocalCloud):
    state = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "InputPath": "$.order",
        "Parameters": {"FunctionName": "place-order", "Payload.$": "$"},
        "ResultSelector": {"placed.$": "$.Payload"},
        "ResultPath": "$.result",
        "Next": "Confirm",
    }
    answer = local_cloud.test_state(
        definition=json.dumps(state),
        input=json.dumps({"order": ORDER}),
        mock={"result": json.dumps({"Payload": {"id": "p-1"}, "StatusCode": 200})},
        inspectionLevel="DEBUG",
    )
    inspected = {name: json.loads(value) for name, value in answer["inspectionData"].items()}
    assert answer["status"] == "SUCCEEDED"
    assert answer["nextState"] == "Confirm"
    assert inspected["afterInputPath"] == ORDER
    assert inspected["afterParameters"] == {"FunctionName": "place-order", "Payload": ORDER}
    assert inspected["result"] == {"Payload": {"id": "p-1"}, "StatusCode": 200}
    assert inspected["afterResultSelector"] == {"placed": {"id": "p-1"}}
    assert json.loads(answer["output"]) == {"order": ORDER, "result": {"placed": {"id": "p-1"}}}
    # And INFO answers no inspection data
    info = local_cloud.test_state(
        definition=json.dumps(state),
        input=json.dumps({"order": ORDER}),
        mock={"result": "{}"},
        inspectionLevel="INFO",
    )
    assert "inspectionData" not in info


def test_variables_are_read_and_assigned(local_cloud: LocalCloud):
    state = {
        "Type": "Pass",
        "QueryLanguage": "JSONata",
        "Output": "{% $greeting & ' ' & $states.input.name %}",
        "Assign": {"seen": "{% $states.input.name %}"},
        "End": True,
    }
    answer = local_cloud.test_state(
        definition=json.dumps(state),
        input=json.dumps({"name": "Ada"}),
        variables=json.dumps({"greeting": "Hello"}),
        inspectionLevel="DEBUG",
    )
    assert json.loads(answer["output"]) == "Hello Ada"
    assert json.loads(answer["inspectionData"]["variables"]) == {"greeting": "Hello", "seen": "Ada"}


def test_a_fail_state_fails_with_its_error(local_cloud: LocalCloud):
    answer = local_cloud.test_state(
        definition=json.dumps({"Type": "Fail", "Error": "Declined", "Cause": "no funds"}), input="{}"
    )
    assert (answer["status"], answer["error"], answer["cause"]) == ("FAILED", "Declined", "no funds")


def test_an_uncaught_mock_error_fails_the_state(local_cloud: LocalCloud):
    state = {**LAMBDA_TASK, "End": True}
    answer = local_cloud.test_state(
        definition=json.dumps(state), input="{}", mock={"errorOutput": {"error": "Boom", "cause": "c"}}
    )
    assert (answer["status"], answer["error"], answer["cause"]) == ("FAILED", "Boom", "c")


# -- refusals, in AWS's exceptions ----------------------------------------------------------------


def test_an_unknown_state_name_is_refused(local_cloud: LocalCloud):
    with pytest.raises(ClientError) as refused:
        local_cloud.test_state(definition=flow("JSONPath"), stateName="Nowhere", input="{}", roleArn=ROLE)
    assert refused.value.response["Error"] == {
        "Code": "ValidationException",
        "Message": "State not found in definition",
    }


def test_a_task_without_a_role_or_a_mock_is_refused(local_cloud: LocalCloud):
    state = {**LAMBDA_TASK, "End": True}
    with pytest.raises(ClientError) as refused:
        local_cloud.test_state(definition=json.dumps(state), input="{}")
    assert refused.value.response["Error"]["Code"] == "ValidationException"


@pytest.mark.parametrize("state_type", ["Map", "Parallel"])
def test_a_map_or_parallel_without_a_mock_is_refused(local_cloud: LocalCloud, state_type: str):
    inner = {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}
    state = {
        "Type": state_type,
        "End": True,
        **({"ItemProcessor": inner} if state_type == "Map" else {"Branches": [inner]}),
    }
    with pytest.raises(local_cloud.sfn.exceptions.InvalidDefinition) as refused:
        local_cloud.test_state(definition=json.dumps(state), input="[]", roleArn=ROLE)
    # (AWS's words, recorded: it tests a Map or a Parallel only with a mock)
    assert refused.value.response["Error"]["Message"].startswith(
        "TestState API does not support Map or Parallel states"
    )


def test_a_mock_for_a_state_that_calls_nothing_is_refused(local_cloud: LocalCloud):
    with pytest.raises(ClientError) as refused:
        local_cloud.test_state(
            definition=json.dumps({"Type": "Pass", "End": True}), input="{}", mock={"result": "{}"}
        )
    assert refused.value.response["Error"]["Code"] == "ValidationException"


def test_a_retriable_error_names_its_retrier_and_backoff(local_cloud: LocalCloud):
    state = {
        **LAMBDA_TASK,
        "Retry": [
            {"ErrorEquals": ["Other"], "MaxAttempts": 1},
            {"ErrorEquals": ["Throttled"], "IntervalSeconds": 2, "BackoffRate": 3, "MaxAttempts": 3},
        ],
        "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Handle"}],
        "End": True,
    }
    throttled = {"errorOutput": {"error": "Throttled", "cause": "slow down"}}

    def attempt(retries_made: int) -> dict[str, Any]:
        return local_cloud.test_state(
            definition=json.dumps(state),
            input="{}",
            mock=throttled,
            inspectionLevel="DEBUG",
            stateConfiguration={"retrierRetryCount": retries_made},
        )

    # Then the matching Retrier decides, with its backoff for the attempts already made
    first, third = attempt(0), attempt(2)
    assert (first["status"], first["error"]) == ("RETRIABLE", "Throttled")
    assert first["inspectionData"]["errorDetails"] == {"retryIndex": 1, "retryBackoffIntervalSeconds": 2}
    assert third["inspectionData"]["errorDetails"] == {"retryIndex": 1, "retryBackoffIntervalSeconds": 18}
    # And once its attempts are spent, the Catch does
    spent = attempt(3)
    assert (spent["status"], spent["nextState"]) == ("CAUGHT_ERROR", "Handle")


def test_a_failure_names_the_retrier_whose_attempts_are_spent(local_cloud: LocalCloud):
    # Recorded (test_state_configuration_retrier_retry_count, 22-11-2025): with no Catch, the state
    # fails and its inspection data still names the Retrier that matched, without a backoff.
    # Given a Task whose second Retrier matches the mocked error, its attempts all made
    state = {**LAMBDA_TASK, "End": True}
    state["Retry"] = [
        {"ErrorEquals": ["Other"], "MaxAttempts": 1},
        {"ErrorEquals": ["Throttled"], "MaxAttempts": 2},
    ]

    # When the state is tested at DEBUG
    answer = local_cloud.test_state(
        definition=json.dumps(state),
        input="{}",
        mock={"errorOutput": {"error": "Throttled", "cause": "slow down"}},
        inspectionLevel="DEBUG",
        stateConfiguration={"retrierRetryCount": 2},
    )

    # Then it failed, naming that Retrier
    assert (answer["status"], answer["error"], answer["cause"]) == ("FAILED", "Throttled", "slow down")
    assert answer["inspectionData"]["errorDetails"] == {"retryIndex": 1}


def test_a_definition_that_is_not_json_is_refused(local_cloud: LocalCloud):
    with pytest.raises(local_cloud.sfn.exceptions.InvalidDefinition):
        local_cloud.test_state(definition="{not json", input="{}")


@pytest.mark.parametrize(
    ("mocked", "problem"),
    [
        ({"Entries": {"EventId": "e"}}, "Field 'Entries' must be an array"),
        ({"Entries": [{"EventId": "e"}, {"EventId": 7}]}, "Field 'EventId' must be a string"),
        ({"FailedEntryCount": "none"}, "Field 'FailedEntryCount' must be a number"),
    ],
)
def test_a_mocked_result_is_checked_against_the_integrations_answer(
    local_cloud: LocalCloud, mocked: Any, problem: str
):
    # Recorded (test_field_validation_mode*): the integration's answer schema, in AWS's words
    state = {
        "Type": "Task",
        "Resource": "arn:aws:states:::events:putEvents",
        "Parameters": {"Entries": []},
        "End": True,
    }
    with pytest.raises(ClientError) as refused:
        local_cloud.test_state(definition=json.dumps(state), input="{}", mock={"result": json.dumps(mocked)})
    assert refused.value.response["Error"]["Message"] == f"Mock result schema validation error: {problem}"
    # And fieldValidationMode NONE takes the mock as it is
    answer = local_cloud.test_state(
        definition=json.dumps(state),
        input="{}",
        mock={"result": json.dumps(mocked), "fieldValidationMode": "NONE"},
    )
    assert json.loads(answer["output"]) == mocked


@pytest.mark.parametrize(
    ("context", "problem"),
    [
        ({"Execution": {"Id": 7}}, "Execution.Id must be a string"),
        ({"Map": {"Item": {"Index": 0}}}, "'Map' field is not supported when mocking a Context object"),
        ({"Execution": {"Nickname": "x"}}, "Field 'Nickname' is not allowed"),
    ],
)
def test_a_context_the_state_could_not_have_is_refused(local_cloud: LocalCloud, context: Any, problem: str):
    with pytest.raises(ClientError) as refused:
        local_cloud.test_state(
            definition=json.dumps({"Type": "Pass", "End": True}), input="{}", context=json.dumps(context)
        )
    assert refused.value.response["Error"]["Message"] == f"Invalid Context object provided: {problem}"


def test_the_context_is_the_states_context(local_cloud: LocalCloud):
    state = {
        "Type": "Pass",
        "Parameters": {"execution.$": "$$.Execution.Name", "state.$": "$$.State.Name"},
        "End": True,
    }
    answer = local_cloud.test_state(
        definition=json.dumps(state),
        input="{}",
        context=json.dumps({"Execution": {"Name": "run-7"}, "State": {"Name": "Charge"}}),
    )
    assert json.loads(answer["output"]) == {"execution": "run-7", "state": "Charge"}


def test_a_mocked_step_functions_error_is_caught_by_name(local_cloud: LocalCloud):
    state = {
        **LAMBDA_TASK,
        "Catch": [{"ErrorEquals": ["States.TaskFailed"], "Next": "Handle"}],
        "End": True,
    }
    answer = local_cloud.test_state(
        definition=json.dumps(state),
        input="{}",
        mock={"errorOutput": {"error": "States.TaskFailed", "cause": "The task failed."}},
    )
    assert (answer["status"], answer["nextState"], answer["error"]) == (
        "CAUGHT_ERROR",
        "Handle",
        "States.TaskFailed",
    )


def test_map_iteration_failures_past_the_tolerance_fail_the_map(local_cloud: LocalCloud):
    # Recorded (test_state_configuration::test_map_state_failure_count): the Map's own decision
    state = {
        "Type": "Map",
        "ItemProcessor": {"StartAt": "Each", "States": {"Each": {"Type": "Pass", "End": True}}},
        "ToleratedFailureCount": 1,
        "Catch": [{"ErrorEquals": ["States.ExceedToleratedFailureThreshold"], "Next": "TooMany"}],
        "End": True,
    }

    def with_failures(failures: int) -> dict[str, Any]:
        return local_cloud.test_state(
            definition=json.dumps(state),
            input="[1, 2, 3]",
            mock={"result": "[1, 1, 1]"},
            stateConfiguration={"mapIterationFailureCount": failures},
        )

    assert with_failures(1)["status"] == "SUCCEEDED"
    exceeded = with_failures(2)
    assert (exceeded["status"], exceeded["nextState"]) == ("CAUGHT_ERROR", "TooMany")
    assert exceeded["error"] == "States.ExceedToleratedFailureThreshold"
    assert exceeded["cause"] == "The specified tolerated failure threshold was exceeded"


def test_a_jsonpath_map_reports_its_items_and_a_jsonata_one_does_not(local_cloud: LocalCloud):
    # Recorded (test_state_configuration::test_state_machine_with_state_error, ::test_map_state_failure_count):
    # a JSONPath Map that reads its items from its input reports them after InputPath and ItemsPath
    inner = {"StartAt": "Each", "States": {"Each": {"Type": "Pass", "End": True}}}
    jsonpath_map = {"Type": "Map", "ItemsPath": "$.values", "ItemProcessor": inner, "End": True}
    jsonata_map = {
        "Type": "Map",
        "QueryLanguage": "JSONata",
        "Items": "{% $states.input.values %}",
        "ItemProcessor": inner,
        "End": True,
    }

    def inspected(state: dict[str, Any]) -> dict[str, Any]:
        answer = local_cloud.test_state(
            definition=json.dumps(state),
            input=json.dumps({"values": ["a", "b"]}),
            inspectionLevel="DEBUG",
            mock={"errorOutput": {"error": "MockException", "cause": "an item failed"}},
            stateConfiguration={"errorCausedByState": "Each"},
        )
        assert (answer["status"], answer["error"]) == ("FAILED", "MockException")
        return dict(answer["inspectionData"])

    with_items = inspected(jsonpath_map)
    assert json.loads(with_items["afterInputPath"]) == {"values": ["a", "b"]}
    assert with_items["afterItemsPath"] == '["a", "b"]'  # AWS's spacing, as recorded
    assert not {"afterInputPath", "afterItemsPath"} & set(inspected(jsonata_map))


def test_a_mocked_result_that_is_not_json_is_refused_whatever_the_validation_mode(local_cloud: LocalCloud):
    state = {**LAMBDA_TASK, "End": True}
    with pytest.raises(ClientError) as refused:
        local_cloud.test_state(
            definition=json.dumps(state),
            input="{}",
            mock={"result": "not JSON", "fieldValidationMode": "NONE"},
        )
    assert refused.value.response["Error"]["Message"] == "Mocked result must be valid JSON"


def test_a_mock_with_both_a_result_and_an_error_is_refused(local_cloud: LocalCloud):
    # Recorded (test_state_mock_validation::test_both_mock_result_and_mock_error_output_are_set): a
    # mock is one or the other; the engine answered the result
    state = {**LAMBDA_TASK, "End": True}
    with pytest.raises(ClientError) as refused:
        local_cloud.test_state(
            definition=json.dumps(state),
            input="{}",
            mock={"result": "{}", "errorOutput": {"error": "Boom", "cause": "because"}},
        )
    assert refused.value.response["Error"] == {
        "Code": "ValidationException",
        "Message": "A test mock should have only one of the following fields: [result, errorOutput].",
    }


@pytest.mark.parametrize(
    "resource",
    ["arn:aws:states:::sqs:sendMessage.waitForTaskToken", "arn:aws:states:::states:startExecution.sync:2"],
)
def test_a_callback_or_sync_task_runs_on_its_mock_only(local_cloud: LocalCloud, resource: str):
    state = {
        "Type": "Task",
        "Resource": resource,
        "Parameters": {"QueueUrl": "q", "MessageBody.$": "$$.Task.Token"},
        "Next": "Then",
    }
    # Without a mock it is refused (there is nothing to wait for offline)
    with pytest.raises(ClientError) as refused:
        local_cloud.test_state(definition=json.dumps(state), input="{}", roleArn=ROLE)
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    # With one, the mock is what the callback or the child answered; the token is the context's
    answer = local_cloud.test_state(
        definition=json.dumps(state),
        input="{}",
        mock={"result": json.dumps({"approved": True}), "fieldValidationMode": "NONE"},
        context=json.dumps({"Task": {"Token": "token-7"}}),
        inspectionLevel="DEBUG",
    )
    assert (answer["status"], answer["nextState"], json.loads(answer["output"])) == (
        "SUCCEEDED",
        "Then",
        {"approved": True},
    )
    if "waitForTaskToken" in resource:
        assert json.loads(answer["inspectionData"]["afterParameters"])["MessageBody"] == "token-7"


def test_reveal_secrets_is_refused_with_a_mock_and_trace_reports_what_debug_does(local_cloud: LocalCloud):
    # Given a Pass state, and a Lambda Task with a mock
    pass_state = json.dumps({"Type": "Pass", "Result": {"ok": True}, "End": True})
    mocked_task = {"definition": json.dumps({**LAMBDA_TASK, "End": True}), "input": "{}"}

    # When the Task asks for its secrets with a mock (AWS's words, recorded)
    with pytest.raises(ClientError) as refused:
        local_cloud.test_state(
            **mocked_task, mock={"result": "{}", "fieldValidationMode": "NONE"}, revealSecrets=True
        )

    # Then it is refused; without a mock it is accepted, and TRACE reports DEBUG's stages (no HTTP
    # Task here: its request and response are what TRACE adds)
    assert refused.value.response["Error"]["Message"] == (
        "TestState does not support RevealSecrets when a mock is specified."
    )
    debug = local_cloud.test_state(definition=pass_state, input="{}", inspectionLevel="DEBUG")
    trace = local_cloud.test_state(
        definition=pass_state, input="{}", inspectionLevel="TRACE", revealSecrets=True
    )
    assert trace == debug
    assert json.loads(trace["output"]) == {"ok": True}


def test_a_distributed_map_reading_its_items_reports_no_item_stages(local_cloud: LocalCloud):
    # Recorded (test_state_configuration::test_state_machine_configuration_item_reader_with_error):
    # with mapItemReaderData standing in for what its ItemReader read, an item's mocked failure fails
    # the Map, which reports its input and MaxConcurrency only
    state = {
        "Type": "Map",
        "ItemReader": {
            "Resource": "arn:aws:states:::s3:getObject",
            "ReaderConfig": {"InputType": "JSON"},
            "Parameters": {"Bucket.$": "$.Bucket", "Key.$": "$.Key"},
        },
        "ItemProcessor": {
            "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
            "StartAt": "Each",
            "States": {"Each": {"Type": "Pass", "End": True}},
        },
        "MaxConcurrency": 1,
        "End": True,
    }
    answer = local_cloud.test_state(
        definition=json.dumps(state),
        input=json.dumps({"Bucket": "b", "Key": "items.json"}),
        inspectionLevel="DEBUG",
        mock={"errorOutput": {"error": "MockException", "cause": "an item failed"}},
        stateConfiguration={"errorCausedByState": "Each", "mapItemReaderData": json.dumps([1, 2, 3])},
    )
    assert (answer["status"], answer["error"], answer["cause"]) == (
        "FAILED",
        "MockException",
        "an item failed",
    )
    assert answer["inspectionData"] == {
        "input": json.dumps({"Bucket": "b", "Key": "items.json"}),
        "maxConcurrency": 1,
    }


@pytest.mark.parametrize(
    ("mode", "problem"),
    [
        ("STRICT", "Mock result schema validation error: Required field 'StartDate' is missing"),
        (None, "Mock result schema validation error: Required field 'StartDate' is missing"),
        ("PRESENT", None),
    ],
)
def test_strict_validation_wants_the_answers_required_fields(
    local_cloud: LocalCloud, mode: str | None, problem: str | None
):
    # Given a mocked StartExecution answer without its required StartDate
    state = {
        "Type": "Task",
        "Resource": "arn:aws:states:::states:startExecution",
        "Parameters": {"StateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:child"},
        "End": True,
    }
    mocked = {"ExecutionArn": "arn:aws:states:us-east-1:123456789012:execution:child:run-1"}
    mock = {"result": json.dumps(mocked), **({"fieldValidationMode": mode} if mode else {})}
    # When it is tested: STRICT (the default) refuses it, PRESENT checks only what is there
    if problem is None:
        assert (
            json.loads(local_cloud.test_state(definition=json.dumps(state), input="{}", mock=mock)["output"])
            == mocked
        )
        return
    with pytest.raises(ClientError) as refused:
        local_cloud.test_state(definition=json.dumps(state), input="{}", mock=mock)
    assert refused.value.response["Error"]["Message"] == problem


def test_a_state_of_an_unknown_type_is_refused_as_aws_words_it(local_cloud: LocalCloud):
    # Recorded: TestState of a definition's state whose Type is none of Step Functions'
    definition = {"StartAt": "Odd", "States": {"Odd": {"Type": "TypeThatDoesNotExist", "End": True}}}
    with pytest.raises(ClientError) as refused:
        local_cloud.test_state(definition=json.dumps(definition), stateName="Odd")
    assert refused.value.response["Error"]["Message"] == (
        "Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: The field 'Type' should have one of "
        "these values: [Task, Wait, Pass, Succeed, Fail, Choice, Parallel, Map] at /States/Odd/Type'"
    )


@pytest.mark.parametrize(
    ("context", "seen"),
    [
        (
            {"Execution": {}, "State": {}, "StateMachine": {}},
            {"Execution": {}, "State": {}, "StateMachine": {}},
        ),
        ({}, {}),
    ],
)
def test_a_given_context_is_the_whole_context_the_state_sees(
    local_cloud: LocalCloud, context: dict[str, Any], seen: dict[str, Any]
):
    # Recorded: what a request's context gives is all the state sees, empty sections included
    state = {"Type": "Pass", "Parameters": {"context.$": "$$"}, "End": True}
    answer = local_cloud.test_state(definition=json.dumps(state), input="{}", context=json.dumps(context))
    assert json.loads(answer["output"]) == {"context": seen}


def test_a_tested_state_is_named_state_name_in_its_context(local_cloud: LocalCloud):
    # Recorded: $$.State.Name is "StateName", also when a definition's state is named to be tested
    definition = {
        "StartAt": "State0",
        "States": {"State0": {"Type": "Pass", "Parameters": {"name.$": "$$.State.Name"}, "End": True}},
    }
    answer = local_cloud.test_state(definition=json.dumps(definition), stateName="State0", input="{}")
    assert json.loads(answer["output"]) == {"name": "StateName"}


@pytest.mark.parametrize("context", [{"Execution": {}, "State": {}, "StateMachine": {}}, {}])
def test_a_task_runs_with_a_given_context_whatever_it_leaves_out(
    local_cloud: LocalCloud, context: dict[str, Any]
):
    # Recorded (EMPTY_OBJECTS): a Task tested with a context of empty sections runs, its mocked
    # answer its result (the engine's own look at which execution calls must not need them)
    state = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": "lambda_function_name", "Payload": {"input-value": 0}},
        "ResultSelector": {"pokemon.$": "$.Payload.pokemon"},
        "End": True,
    }
    answer = local_cloud.test_state(
        definition=json.dumps(state),
        input="{}",
        context=json.dumps(context),
        mock={"result": json.dumps({"Payload": {"pokemon": "pikachu"}})},
    )
    assert (answer["status"], json.loads(answer["output"])) == ("SUCCEEDED", {"pokemon": "pikachu"})
