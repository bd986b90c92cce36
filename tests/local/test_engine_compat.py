"""The local engine's moto fixes and Lambda dispatch, each against the documented AWS behaviour."""

from __future__ import annotations

import datetime
import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sfn_idempotency.extras import TESTED_MOTO
from sfn_idempotency.local import LocalCloud, compat
from sfn_idempotency.local.engine import patches
from tests import REPOSITORY_ROOT

DEADLINE_SECONDS = 10  # for the test's own threads and waits, not a measurement


class PaymentDeclined(Exception):
    pass


def deploy(
    cloud: LocalCloud, tmp_path: Path, states: dict[str, Any], start_at: str, **substitutions: str
) -> str:
    asl = tmp_path / "machine.asl.json"
    asl.write_text(json.dumps({"StartAt": start_at, "States": states}))
    return cloud.create_state_machine("machine", asl, substitutions)


def invoke_state(next_or_end: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": "${Fn}", "Payload.$": "$"},
        "OutputPath": "$.Payload",
        **extra,
        **next_or_end,
    }


def test_lambda_invoke_runs_the_handler_with_a_lambda_context(local_cloud: LocalCloud, tmp_path: Path):
    # Given a function and a state machine that invokes it through the optimized integration
    seen: list[Any] = []

    def handler(event: Any, context: Any) -> Any:
        seen.append(
            (
                event,
                context.function_name,
                context.invoked_function_arn,
                context.get_remaining_time_in_millis(),
            )
        )
        return {"doubled": event["n"] * 2}

    function = local_cloud.add_function("doubler", handler, timeout_seconds=5)
    machine = deploy(local_cloud, tmp_path, {"Call": invoke_state({"End": True})}, "Call", Fn=function.arn)

    # When executed twice
    results = [local_cloud.run(machine, {"n": n}) for n in (2, 5)]

    # Then the handler got the payload and a context, and its result is the Payload
    assert [r.output for r in results] == [{"doubled": 4}, {"doubled": 10}]
    assert [s[:3] for s in seen] == [({"n": 2}, "doubler", function.arn), ({"n": 5}, "doubler", function.arn)]
    assert all(0 < s[3] <= 5000 for s in seen)
    # And the interpreter reused one Lambda client rather than building one per Task
    lambda_clients = [key for key in compat.interpreter._clients if key[1] == "lambda"]
    assert len(lambda_clients) == 1


def test_raised_exception_is_an_unhandled_error_that_retry_and_catch_match(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Given a function raising PaymentDeclined, retried twice on that name, then caught
    calls: list[int] = []

    def handler(event: Any, context: Any) -> Any:
        calls.append(1)
        raise PaymentDeclined("card expired")

    function = local_cloud.add_function("pay", handler)
    states = {
        "Pay": invoke_state(
            {"Next": "Done"},
            Retry=[{"ErrorEquals": ["PaymentDeclined"], "MaxAttempts": 2, "IntervalSeconds": 1}],
            Catch=[{"ErrorEquals": ["PaymentDeclined"], "ResultPath": "$.error", "Next": "Caught"}],
        ),
        "Caught": {"Type": "Pass", "End": True},
        "Done": {"Type": "Succeed"},
    }
    machine = deploy(local_cloud, tmp_path, states, "Pay", Fn=function.arn)

    # When executed
    result = local_cloud.run(machine, {"order": 1})

    # Then the error name is the exception's class, the cause is Lambda's error payload
    assert result.states == ["Pay", "Caught"]
    assert len(calls) == 3
    assert result.output["error"]["Error"] == "PaymentDeclined"
    cause = json.loads(result.output["error"]["Cause"])
    assert cause["errorType"] == "PaymentDeclined"
    assert cause["errorMessage"] == "card expired"


def test_unknown_function_falls_through_to_moto_and_fails_the_task(local_cloud: LocalCloud, tmp_path: Path):
    machine = deploy(
        local_cloud,
        tmp_path,
        {"Call": invoke_state({"End": True})},
        "Call",
        Fn="arn:aws:lambda:us-east-1:123456789012:function:nobody",
    )
    result = local_cloud.run(machine, {})
    assert result.status == "FAILED"
    assert result.error.startswith("Lambda.")


def test_retry_policy_keeps_its_attempts_when_waits_are_scaled(tmp_path: Path):
    # Given a Retrier whose waits would take minutes, on an engine that scales waits to zero
    with LocalCloud(retry_wait_scale=0) as cloud:
        attempts: list[int] = []

        def flaky(event: Any, context: Any) -> Any:
            attempts.append(1)
            return 1 / 0

        function = cloud.add_function("flaky", flaky)
        retry = [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 60, "MaxAttempts": 3, "BackoffRate": 2}]
        machine = deploy(
            cloud, tmp_path, {"Call": invoke_state({"End": True}, Retry=retry)}, "Call", Fn=function.arn
        )

        # When executed (the wait deadline is far below the unscaled 60+120+240 s)
        result = cloud.run(machine, {}, timeout=10)

    # Then the documented semantics hold: 1 attempt + MaxAttempts retries, then the error
    assert len(attempts) == 4
    assert result.error == "ZeroDivisionError"


@pytest.mark.parametrize("value", ["abc", "", None, 0, False, [], {"a": [1, 2.5]}])
def test_execution_output_is_always_json_text(local_cloud: LocalCloud, tmp_path: Path, value: Any):
    # AWS: DescribeExecution.output is "The JSON output data of the execution", also for strings and null.
    machine = deploy(local_cloud, tmp_path, {"Emit": {"Type": "Pass", "Result": value, "End": True}}, "Emit")
    result = local_cloud.run(machine, {})
    assert result.output_json == json.dumps(value, separators=(",", ":"))


def test_a_fail_state_reports_a_states_prefixed_name_as_written(local_cloud: LocalCloud, tmp_path: Path):
    # AWS runs published samples (the workflows collection's quorum and either-or Parallel patterns)
    # whose branches end in a Fail state with "Error": "States.QuorumMet", routed by a Catch on that
    # name; moto refused such names (fix 87, ledger L5).
    states = {
        "Quorum": {
            "Type": "Parallel",
            "Branches": [
                {
                    "StartAt": "Met",
                    "States": {"Met": {"Type": "Fail", "Error": "States.QuorumMet", "Cause": "3 of 3"}},
                }
            ],
            "Catch": [{"ErrorEquals": ["States.QuorumMet"], "ResultPath": "$.quorum", "Next": "Caught"}],
            "Next": "Caught",
        },
        "Caught": {
            "Type": "Pass",
            "Result": {"Error": "States.Timeout", "Cause": "took too long"},
            "ResultPath": "$.error",
            "Next": "Rethrow",
        },
        "Rethrow": {"Type": "Fail", "ErrorPath": "$.error.Error", "CausePath": "$.error.Cause"},
    }
    machine = deploy(local_cloud, tmp_path, states, "Quorum")

    result = local_cloud.run(machine, {})

    # Then the Catch on the States.-prefixed name fired, and ErrorPath re-threw its name as it stands
    assert result.status == "FAILED"
    assert (result.error, result.cause) == ("States.Timeout", "took too long")
    caught = [e for e in result.history if e["type"] == "PassStateEntered"]
    assert json.loads(caught[0]["stateEnteredEventDetails"]["input"])["quorum"]["Error"] == "States.QuorumMet"


def test_a_task_s_missing_parameter_path_names_its_own_field(local_cloud: LocalCloud, tmp_path: Path):
    # A Task's Parameters are evaluated in a frame of their own; moto named the field its caller had
    # evaluated last ("TimeoutSeconds"), 8 public apps' first answer (fix 94).
    states = {
        "Send": {
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage",
            "Parameters": {
                "QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/q",
                "MessageBody.$": "$.message",
            },
            "End": True,
        }
    }
    result = local_cloud.run(deploy(local_cloud, tmp_path, states, "Send"), {})
    assert (result.error, result.cause) == (
        "States.Runtime",
        "An error occurred while executing the state 'Send' (entered at the event id #2). The JSONPath "
        "'$.message' specified for the field 'MessageBody.$' could not be found in the input '{}'",
    )


@pytest.mark.parametrize(
    ("input_path", "words"),
    [
        # recorded (LocalStack's snapshots of AWS)
        ("$.NoSuchInputPath", "No results for path: $['NoSuchInputPath']"),
        ("$.no.such.result.path", "Missing property in path $['no']"),
        # Jayway's own words, in bracket notation, where moto cut the path's first two characters
        ("$.order.missing", "No results for path: $['order']['missing']"),
        (
            "$[0].body",
            "Filter: [0]['body'] can only be applied to arrays. Current context is: {order={id=1}}",
        ),
    ],
)
def test_an_input_path_that_selects_nothing_is_worded_as_aws_words_it(
    local_cloud: LocalCloud, tmp_path: Path, input_path: str, words: str
):
    states = {"Parse": {"Type": "Pass", "InputPath": input_path, "End": True}}
    result = local_cloud.run(deploy(local_cloud, tmp_path, states, "Parse"), {"order": {"id": 1}})
    assert (result.error, result.cause) == (
        "States.Runtime",
        f"An error occurred while executing the state 'Parse' (entered at the event id #2). "
        f"Invalid path '{input_path}' : {words}",
    )


def test_an_sdk_action_moto_lacks_fails_the_task_with_the_service_s_error_in_words(
    local_cloud: LocalCloud, tmp_path: Path
):
    # A public app's first step calls transcribe:createVocabularyFilter, which moto has not
    # implemented: a traceback and a KeyError('RequestId') as the cause before fix 97
    states = {
        "Filter": {
            "Type": "Task",
            "Resource": "arn:aws:states:::aws-sdk:transcribe:createVocabularyFilter",
            "Parameters": {"LanguageCode": "en-US", "VocabularyFilterName": "words", "Words": ["mug"]},
            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
            "End": True,
        },
        "Caught": {"Type": "Pass", "End": True},
    }
    result = local_cloud.run(deploy(local_cloud, tmp_path, states, "Filter"), {})
    assert result.status == "SUCCEEDED"
    failed = next(e["taskFailedEventDetails"] for e in result.history if e["type"] == "TaskFailed")
    assert failed["error"] == "Transcribe.TranscribeException"
    assert failed["cause"].startswith(
        "The local engine does not implement transcribe CreateVocabularyFilter (Service: Transcribe, Status Code: 501,"
    )


def test_a_map_whose_input_is_not_an_array_writes_the_input_as_json(local_cloud: LocalCloud, tmp_path: Path):
    # Recorded: "Map state input must be an array but was: {"foo":"bar"}"; moto wrote <class 'dict'> (fix 98)
    states = {
        "Each": {
            "Type": "Map",
            "ItemsPath": "$.detail",
            "ItemProcessor": {"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}},
            "End": True,
        }
    }
    result = local_cloud.run(deploy(local_cloud, tmp_path, states, "Each"), {"detail": {"foo": "bar"}})
    assert result.status == "FAILED"
    assert result.cause.endswith('Map state input must be an array but was: {"foo":"bar"}')


def test_a_choice_that_matches_nothing_without_a_default_fails_with_no_choice_matched(
    local_cloud: LocalCloud, tmp_path: Path
):
    # A public app's Choice has no Default: moto failed the execution as States.Runtime with a
    # Python RuntimeError's repr as the cause (fix 135)
    choice = {
        "Type": "Choice",
        "Choices": [{"Variable": "$.kind", "StringEquals": "known", "Next": "Known"}],
    }
    known = {"Type": "Pass", "End": True}

    # Given a machine that starts at such a Choice, When its input matches no rule
    alone = local_cloud.run(deploy(local_cloud, tmp_path, {"Route": choice, "Known": known}, "Route"), {})

    # Then the execution fails with the language's error name and no Python text
    assert (alone.status, alone.error) == ("FAILED", "States.NoChoiceMatched")
    assert (
        alone.cause
        == "A Choice state failed to find a match for the condition field extracted from its input."
    )
    assert alone.states == ["Route"]

    # Given the same Choice in a Parallel branch whose failures States.ALL catches
    branch = {"StartAt": "Route", "States": {"Route": choice, "Known": known}}
    states = {
        "Both": {
            "Type": "Parallel",
            "Branches": [branch],
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.failure", "Next": "Caught"}],
            "End": True,
        },
        "Caught": {"Type": "Pass", "End": True},
    }

    # When it matches nothing, Then the Parallel's States.ALL catches States.NoChoiceMatched
    asl = tmp_path / "parallel.asl.json"
    asl.write_text(json.dumps({"StartAt": "Both", "States": states}))
    caught = local_cloud.run(local_cloud.create_state_machine("parallel", asl, {}), {"kind": "other"})
    assert caught.status == "SUCCEEDED", caught.cause
    assert caught.states[-1] == "Caught"
    assert caught.output["failure"]["Error"] == "States.NoChoiceMatched"


def test_an_aws_sdk_map_s_structures_are_spelled_with_capitals_both_ways(
    local_cloud: LocalCloud, tmp_path: Path
):
    # An AWS sample's fis:createExperimentTemplate writes its Actions and Targets maps' members with
    # capitals, as every aws-sdk member is: moto left them so, and botocore failed on 'ActionId',
    # a KeyError's text as the cause (fix 138)
    template = {
        "ClientToken": "token-1",
        "Description": "stress",
        "RoleArn": "arn:aws:iam::123456789012:role/fis",
        "StopConditions": [{"Source": "none"}],
        "Actions": {
            "cpustress": {"ActionId": "aws:ssm:send-command", "Targets": {"Instances": "stressed"}},
        },
        "Targets": {
            "stressed": {
                "ResourceType": "aws:ec2:instance",
                "ResourceTags": {"FISAction": "CPUStress"},
                "SelectionMode": "COUNT(1)",
            },
        },
    }
    states = {
        "Create": {
            "Type": "Task",
            "Resource": "arn:aws:states:::aws-sdk:fis:createExperimentTemplate",
            "Parameters": template,
            "Next": "Read",
        },
        "Read": {
            "Type": "Task",
            "Resource": "arn:aws:states:::aws-sdk:fis:getExperimentTemplate",
            "Parameters": {"Id.$": "$.ExperimentTemplate.Id"},
            "End": True,
        },
    }

    # When a machine creates the template and reads it back
    result = local_cloud.run(deploy(local_cloud, tmp_path, states, "Create"), {})

    # Then both calls ran, and the answer's map values have capitalized members under the user's keys
    assert result.status == "SUCCEEDED", result.cause
    read = result.output["ExperimentTemplate"]
    assert read["Actions"]["cpustress"]["ActionId"] == "aws:ssm:send-command"
    assert read["Actions"]["cpustress"]["Targets"] == {"Instances": "stressed"}
    assert read["Targets"]["stressed"]["ResourceTags"] == {"FISAction": "CPUStress"}


@pytest.mark.parametrize("opener", ["Parallel", "Map"])
def test_a_runtime_error_inside_a_branch_or_an_iteration_names_its_own_state_once(
    local_cloud: LocalCloud, tmp_path: Path, opener: str
):
    # Recorded (a Map iteration's Fallback): the execution's cause names the state that raised the
    # error, once; moto named the Parallel (or 'None', for a Map) around it again (fix 140)
    inner = {"StartAt": "Inner", "States": {"Inner": {"Type": "Pass", "InputPath": "$.missing", "End": True}}}
    outer = (
        {"Type": "Parallel", "Branches": [inner], "End": True}
        if opener == "Parallel"
        else {"Type": "Map", "ItemsPath": "$.items", "ItemProcessor": inner, "End": True}
    )

    # Given a machine whose branch (or iteration) reads a path its input lacks, When it runs
    result = local_cloud.run(deploy(local_cloud, tmp_path, {"Outer": outer}, "Outer"), {"items": [{}]})

    # Then the execution fails with the inner state's runtime error, worded once
    assert (result.status, result.error) == ("FAILED", "States.Runtime")
    cause = result.cause or ""
    assert cause.startswith("An error occurred while executing the state 'Inner' (entered at the event id #")
    assert cause.count("An error occurred while executing the state") == 1
    assert cause.endswith("Invalid path '$.missing' : No results for path: $['missing']")


def test_an_intrinsic_function_s_path_may_chain_brackets(
    local_cloud: LocalCloud, tmp_path: Path, capfd: pytest.CaptureFixture[str]
):
    # An AWS sample formats "States.Format('{}_{}', $$.Execution.Name, $['test-batch']['batch_id'])":
    # moto's lexer stopped at the second bracket, printed a token error on the terminal, and the
    # function formatted the whole object, "run1_{batch_id=7}" (fix 141)
    states = {
        "Format": {
            "Type": "Pass",
            "Parameters": {
                "name.$": "States.Format('{}_{}', $$['Execution']['Name'], $['test-batch']['batch_id'])",
                "cell.$": "States.Format('[{}][{}]', $.grid[1][0], $.grid[0][0])",
            },
            "End": True,
        },
    }

    # Given paths of chained brackets in a definition, When it runs
    result = local_cloud.run(
        deploy(local_cloud, tmp_path, states, "Format"),
        {"test-batch": {"batch_id": 7}, "grid": [[1], [2]]},
        name="run1",
    )

    # Then each path selected what it names, quoted text kept its brackets, and nothing was printed
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {"name": "run1_7", "cell": "[2][1]"}
    assert "token recognition error" not in capfd.readouterr().err


def test_a_dynamodb_item_attribute_that_is_not_an_attribute_value_fails_the_state_in_aws_s_words(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Two public apps write an Item attribute as a plain string ("id.$": "$$.Execution.Id") and a
    # BOOL as text ("false"): the string cannot be an AttributeValue; the text is converted (fix 99)
    local_cloud.dynamodb.create_table(
        TableName="runs",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    states = {
        "Put": {
            "Type": "Task",
            "Resource": "arn:aws:states:::dynamodb:putItem",
            "Parameters": {"TableName": "runs", "Item": {"id.$": "$.id", "timedOut": {"BOOL": "false"}}},
            "End": True,
        }
    }
    result = local_cloud.run(deploy(local_cloud, tmp_path, states, "Put"), {"id": "run-1"})
    assert (result.error, result.cause) == (
        "States.Runtime",
        "An error occurred while executing the state 'Put' (entered at the event id #2). The Parameters "
        '\'{"TableName":"runs","Item":{"id":"run-1","timedOut":{"BOOL":"false"}}}\' could not be used to start '
        "the Task: [The value of the field 'id' has an invalid format]",
    )
    assert local_cloud.dynamodb.scan(TableName="runs")["Items"] == []


@pytest.mark.parametrize(
    ("operation", "parameters", "unfit"),
    [
        ("PutItem", {"TableName": "t", "Item": {"id": {"S": "a"}, "n": {"N": "1"}}}, None),
        ("PutItem", {"TableName": "t", "Item": {"id": "a"}}, "id"),
        ("PutItem", {"TableName": "t", "Item": "a"}, "Item"),
        ("PutItem", {"TableName": "t", "Item": {"m": {"M": {"x": {"L": [{"S": "1"}, "2"]}}}}}, "L[1]"),
        ("PutItem", {"TableName": "t", "Item": {"l": {"L": "not a list"}}}, None),
        ("PutItem", {"TableName": "t", "Item": {"b": {"BOOL": "false"}}, "Unknown": "x"}, None),
        (
            "UpdateItem",
            {"TableName": "t", "Key": {"id": {"S": "a"}}, "ExpressionAttributeValues": 1},
            "ExpressionAttributeValues",
        ),
        ("BatchWriteItem", {"RequestItems": {"t": [{"PutRequest": {"Item": {"id": 1}}}]}}, "id"),
    ],
)
def test_parameters_unfit_for_a_request_are_found_as_botocores_validation_finds_them(
    monkeypatch: pytest.MonkeyPatch, operation: str, parameters: dict[str, Any], unfit: str | None
):
    # Given botocore's whole validation, counted
    from botocore.validate import ParamValidator

    from sfn_idempotency.local.compat import integrations

    validated: list[Any] = []
    validate = ParamValidator.validate

    def counted(self: Any, *args: Any) -> Any:
        validated.append(args)
        return validate(self, *args)

    monkeypatch.setattr(ParamValidator, "validate", counted)

    # When a Task's parameters are checked before its call (fix 99)
    found = integrations._unfit_field("dynamodb", operation, parameters)

    # Then the field is the one botocore's validation names, and parameters with nothing unfit are
    # not validated whole (a tenth of a write's time, at every DynamoDB Task)
    assert found == unfit
    assert len(validated) == (0 if unfit is None else 1)


def test_each_failed_task_attempt_is_reported_once_with_its_state_error_and_cause(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Given a function that always fails, retried once and then caught, and a listener (serve
    # prints each report as one line)
    def declined(event: Any, context: Any) -> Any:
        raise PaymentDeclined("card expired")

    failures: list[Any] = []
    local_cloud.on_task_failure(failures.append)
    states = {
        "Charge": invoke_state(
            {"Next": "Declined"},
            Retry=[{"ErrorEquals": ["PaymentDeclined"], "MaxAttempts": 1, "IntervalSeconds": 1}],
            Catch=[{"ErrorEquals": ["States.ALL"], "Next": "Declined"}],
        ),
        "Declined": {"Type": "Pass", "End": True},
    }
    machine = deploy(
        local_cloud, tmp_path, states, "Charge", Fn=local_cloud.add_function("Pay", declined).arn
    )
    # When it runs
    result = local_cloud.run(machine, {"orderId": "o-1"})
    # Then both attempts were reported, each naming its execution, state and error
    assert result.status == "SUCCEEDED"
    assert [(f.execution_arn, f.state, f.error) for f in failures] == [
        (result.arn, "Charge", "PaymentDeclined")
    ] * 2
    line = failures[0].line()
    assert line.startswith(f"{result.arn.rsplit(':', 1)[-1]} Charge: PaymentDeclined: ")
    assert '{"errorMessage":"card expired","errorType":"PaymentDeclined"' in line
    assert "\n" not in line
    assert line.endswith("…")  # the stack trace cut: the report is one line


def test_failed_executions_do_not_flood_the_log(local_cloud: LocalCloud, tmp_path: Path, caplog):
    machine = deploy(local_cloud, tmp_path, {"Boom": {"Type": "Fail", "Error": "Boom"}}, "Boom")
    with caplog.at_level(logging.DEBUG):
        assert local_cloud.run(machine, {}).error == "Boom"
    assert [r for r in caplog.records if r.name.startswith("moto") and r.levelno >= logging.WARNING] == []


def test_only_one_cloud_runs_at_a_time(local_cloud: LocalCloud):
    from sfn_idempotency.local.engine.cloud import EngineError

    with pytest.raises(EngineError, match="already running"), LocalCloud():
        pass


def test_unnamed_executions_get_unique_names(local_cloud: LocalCloud, tmp_path: Path):
    # AWS: "If you don't provide a name for the execution, Step Functions automatically generates a UUID."
    machine = deploy(local_cloud, tmp_path, {"Done": {"Type": "Succeed"}}, "Done")
    arns = [
        local_cloud.sfn.start_execution(stateMachineArn=machine, input="{}")["executionArn"] for _ in range(2)
    ]
    assert [r.status for r in local_cloud.wait_all(arns)] == ["SUCCEEDED", "SUCCEEDED"]
    names = [arn.rsplit(":", 1)[1] for arn in arns]
    assert names[0] != names[1]
    assert all(len(name) == 36 and name.count("-") == 4 for name in names)


def test_conditional_writes_are_atomic_under_concurrency(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    # AWS: a conditional write succeeds only if its condition holds when the item is written.
    import threading
    import time

    from moto.dynamodb.models import table as moto_table

    # Given a condition check that yields the thread right after it passes (the race window)
    original = moto_table.get_filter_expression

    def slow_filter(*args: Any, **kwargs: Any) -> Any:
        condition = original(*args, **kwargs)
        evaluate = condition.expr

        def expr(item: Any) -> bool:
            verdict = bool(evaluate(item))
            time.sleep(0.05)
            return verdict

        condition.expr = expr
        return condition

    monkeypatch.setattr(moto_table, "get_filter_expression", slow_filter)
    table = local_cloud.create_table("race")
    outcomes: list[str] = []

    def claim(owner: str) -> None:
        try:
            local_cloud.client("dynamodb").put_item(
                TableName=table,
                Item={"id": {"S": "key"}, "owner": {"S": owner}},
                ConditionExpression="attribute_not_exists(id)",
            )
            outcomes.append("claimed")
        except local_cloud.dynamodb.exceptions.ConditionalCheckFailedException:
            outcomes.append("conflict")

    # When two writers claim the same key at once
    writers = [threading.Thread(target=claim, args=(f"w{i}",)) for i in range(2)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(10)

    # Then exactly one wins
    assert sorted(outcomes) == ["claimed", "conflict"]


def test_each_definition_is_parsed_once_and_executions_do_not_share_state(
    local_cloud: LocalCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from moto.stepfunctions.parser.asl.parse import asl_parser

    # Given a counted parser and a machine whose output depends on its input only
    parses: list[int] = []
    original = asl_parser.AmazonStateLanguageParser.parse

    def counted(definition: str) -> Any:
        parses.append(1)
        return original(definition)

    monkeypatch.setattr(asl_parser.AmazonStateLanguageParser, "parse", staticmethod(counted))
    states = {"Double": {"Type": "Pass", "Parameters": {"n.$": "States.MathAdd($.n, $.n)"}, "End": True}}
    machine = deploy(local_cloud, tmp_path, states, "Double")
    parses.clear()

    # When many executions of it run at once
    arns = [local_cloud.start_execution(machine, {"n": n}) for n in range(20)]
    results = local_cloud.wait_all(arns)

    # Then each got its own answer, and the definition was parsed at most once
    assert [r.output for r in results] == [{"n": 2 * n} for n in range(20)]
    assert len(parses) <= 1


def test_catch_all_catches_data_limit_exceeded_as_recorded_on_aws(local_cloud: LocalCloud, tmp_path: Path):
    # Recorded on AWS (LocalStack's test_states_errors, *_catch_state_all_data_limit_exceeded_*): a
    # Catch of only States.ALL catches a Lambda result over 256 KB, and the execution goes on through
    # its handler; the docs say the opposite, the recording wins.
    function = local_cloud.add_function("huge", lambda event, context: "z" * 300_000)
    states = {
        "Call": invoke_state(
            {"End": True}, Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Caught"}]
        ),
        "Caught": {"Type": "Pass", "End": True},
    }
    machine = deploy(local_cloud, tmp_path, states, "Call", Fn=function.arn)
    result = local_cloud.run(machine, {})
    assert result.status == "SUCCEEDED"
    assert result.states == ["Call", "Caught"]
    assert result.output["error"]["Error"] == "States.DataLimitExceeded"
    assert "exceeding the maximum number of bytes service limit" in result.output["error"]["Cause"]


@pytest.mark.parametrize(
    ("characters", "status"), [(120_000, "SUCCEEDED"), (140_000, "FAILED")], ids=["240KB", "280KB"]
)
def test_a_result_is_held_to_the_quota_in_utf8_bytes(
    local_cloud: LocalCloud, tmp_path: Path, characters: int, status: str
):
    # Given a Lambda result of é alone, two bytes each in UTF-8 (six in ASCII-escaped JSON), in an
    # object whose separators Python's default text would pad: 240 KB fits 256 KiB, 280 KB does not
    function = local_cloud.add_function("accents", lambda event, context: {"text": "é" * characters})
    machine = deploy(local_cloud, tmp_path, {"Call": invoke_state({"End": True})}, "Call", Fn=function.arn)
    # When it runs
    result = local_cloud.run(machine, {})
    # Then the quota counts the UTF-8 bytes of its JSON text, as Step Functions states it (fix 145)
    assert result.status == status, result.cause
    if status == "FAILED":
        assert result.error == "States.DataLimitExceeded"
    else:
        assert result.output["text"] == "é" * characters


def test_a_cause_is_cut_to_the_length_the_api_holds(local_cloud: LocalCloud, tmp_path: Path):
    # Given a function whose error message is 100 KB, called once under a Catch that passes the error
    # on to the second call, which nothing catches
    received: list[Any] = []

    def handler(event: Any, context: Any) -> Any:
        received.append(event)
        raise PaymentDeclined("x" * 100_000)

    function = local_cloud.add_function("declines", handler)
    states = {
        "Pay": invoke_state(
            {"Next": "PayAgain"},
            Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "PayAgain"}],
        ),
        "PayAgain": invoke_state({"End": True}),
    }
    machine = deploy(local_cloud, tmp_path, states, "Pay", Fn=function.arn)

    # When it runs
    result = local_cloud.run(machine, {})

    # Then the execution's cause and every event's cause hold the first 32,768 characters of
    # Lambda's error payload, as Step Functions' API holds a cause (fix 147)
    assert result.error == "PaymentDeclined"
    assert len(result.cause) == 32_768
    assert result.cause.startswith('{"errorMessage":"xxx')
    causes = [
        (event["type"], details["cause"])
        for event in result.history
        for details in event.values()
        if isinstance(details, dict) and "cause" in details
    ]
    assert [kind for kind, _ in causes] == ["TaskFailed", "TaskFailed", "ExecutionFailed"]
    assert all(cause == result.cause for _, cause in causes)
    # And the error output the Catch passed on kept the whole payload
    assert json.loads(received[1]["error"]["Cause"])["errorMessage"] == "x" * 100_000


def test_a_character_written_as_its_two_utf16_escapes_is_counted_not_refused(
    local_cloud: LocalCloud, tmp_path: Path
):
    # Given a Pass whose string literal writes 🆗 as its UTF-16 halves, as JSON allows
    states = {"Emoji": {"Type": "Pass", "Parameters": {"emoji": "\ud83c\udd97"}, "End": True}}
    machine = deploy(local_cloud, tmp_path, states, "Emoji")
    # When it runs, Then its output is held to the quota like any other (fix 145), and carried
    result = local_cloud.run(machine, {})
    assert result.status == "SUCCEEDED", result.cause


def test_catch_all_does_not_catch_a_runtime_error(local_cloud: LocalCloud, tmp_path: Path):
    # The same sentence of the docs, for States.Runtime: a path that is not in the input.
    function = local_cloud.add_function("small", lambda event, context: {"ok": True})
    states = {
        "Call": invoke_state(
            {"Next": "Use"},
            Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Caught"}],
        ),
        "Use": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "${Fn}", "Payload.$": "$.missing"},
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Caught"}],
            "End": True,
        },
        "Caught": {"Type": "Pass", "End": True},
    }
    machine = deploy(local_cloud, tmp_path, states, "Call", Fn=function.arn)
    result = local_cloud.run(machine, {})
    assert (result.status, result.error) == ("FAILED", "States.Runtime")
    assert "Caught" not in result.states


def test_each_json_path_is_parsed_once_and_means_the_same(local_cloud: LocalCloud, tmp_path: Path):
    # Fix 11 (speed): paths are immutable, so one parse serves every state and execution that uses it.
    from moto.stepfunctions.parser.asl.utils import json_path

    states = {
        "First": {"Type": "Pass", "Parameters": {"value.$": "$.order.amount"}, "Next": "Second"},
        "Second": {"Type": "Pass", "Parameters": {"again.$": "$.value"}, "End": True},
    }
    machine = deploy(local_cloud, tmp_path, states, "First")
    json_path.parse.cache_clear()
    results = [local_cloud.run(machine, {"order": {"amount": n}}) for n in (1, 2, 3)]
    assert [result.output for result in results] == [{"again": 1}, {"again": 2}, {"again": 3}]
    parses = json_path.parse.cache_info()
    assert parses.hits > 0
    assert parses.misses <= 4  # each distinct path once, however many executions use it


def test_response_methods_are_listed_once_per_class(local_cloud: LocalCloud):
    # Fix 12 (speed): the list of a response class's methods is the same on every request.
    from moto.core import responses

    responses.method_names_from_class.cache_clear()
    for _ in range(3):
        local_cloud.dynamodb.list_tables()
    listed = responses.method_names_from_class.cache_info()
    assert listed.hits >= 2
    assert listed.currsize >= 1


def test_concurrent_executions_of_one_definition_count_their_own_retries(tmp_path: Path):
    # AWS: each execution retries a state MaxAttempts times, whatever other executions do.
    with LocalCloud(retry_wait_scale=0) as cloud:
        attempts: dict[int, int] = {}
        lock = threading.Lock()

        def flaky(event: Any, context: Any) -> Any:
            with lock:
                attempts[event["n"]] = attempts.get(event["n"], 0) + 1
            raise RuntimeError("always")

        function = cloud.add_function("flaky-many", flaky)
        retry = [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 3, "BackoffRate": 1}]
        machine = deploy(
            cloud, tmp_path, {"Call": invoke_state({"End": True}, Retry=retry)}, "Call", Fn=function.arn
        )
        results = cloud.wait_all([cloud.start_execution(machine, {"n": n}) for n in range(12)])

    assert all(r.error == "RuntimeError" for r in results)
    assert attempts == dict.fromkeys(range(12), 4)


def test_start_execution_integration_speaks_pascal_case(local_cloud: LocalCloud, tmp_path: Path):
    # AWS: states:startExecution takes StateMachineArn/Input and returns ExecutionArn and StartDate,
    # with the SDK's response metadata (recorded; fix 70).
    child = deploy(
        local_cloud, tmp_path, {"Done": {"Type": "Pass", "Result": {"child": True}, "End": True}}, "Done"
    )
    parent_asl = tmp_path / "parent.asl.json"
    parent_asl.write_text(
        json.dumps(
            {
                "StartAt": "Start",
                "States": {
                    "Start": {
                        "Type": "Task",
                        "Resource": "arn:aws:states:::states:startExecution",
                        "Parameters": {"StateMachineArn": "${Child}", "Input": {"from": "parent"}},
                        "End": True,
                    }
                },
            }
        )
    )
    parent = local_cloud.create_state_machine("parent", parent_asl, {"Child": child})
    result = local_cloud.run(parent, {})
    assert result.status == "SUCCEEDED", result.cause
    assert set(result.output) == {"ExecutionArn", "StartDate", "SdkHttpMetadata", "SdkResponseMetadata"}
    assert isinstance(result.output["StartDate"], int)
    started = local_cloud.wait(result.output["ExecutionArn"])
    assert json.loads(started.history[0]["executionStartedEventDetails"]["input"]) == {"from": "parent"}
    assert started.output == {"child": True}


def test_a_moto_without_a_patched_internal_is_refused_at_construction(monkeypatch: pytest.MonkeyPatch):
    # Given a moto whose request dispatch moved (fix 12's target is gone)
    import moto
    import moto.core.responses

    monkeypatch.delattr(moto.core.responses, "method_names_from_class")
    # When a LocalCloud is made, Then it refuses, naming the moto version and the fix
    with pytest.raises(compat.IncompatibleMotoError) as refused:
        LocalCloud()
    message = str(refused.value)
    assert f"moto {moto.__version__} is not supported" in message
    assert "fix 12: moto.core.responses.method_names_from_class is missing" in message
    assert f"pip install 'moto=={TESTED_MOTO[-1]}'" in message


def test_the_local_extra_admits_exactly_the_moto_releases_the_engine_was_tested_on():
    # Given the [local] extra's pin of moto, as pyproject declares it for the wheel
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((REPOSITORY_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (pin,) = [Requirement(r) for r in project["optional-dependencies"]["local"] if r.startswith("moto[")]
    # When moto's releases around the tested ones are checked against it
    releases = ["5.1.22", "5.2.4", *TESTED_MOTO, "5.2.7", "5.3.0", "6.0.0"]
    # Then it admits the tested ones and nothing else, and the engine names the same
    assert [release for release in releases if pin.specifier.contains(release)] == list(TESTED_MOTO)
    assert ", ".join(TESTED_MOTO) == patches.SUPPORTED_MOTO


def test_the_installed_moto_has_every_internal_the_fixes_patch():
    assert patches.incompatibilities() == []


# -- fix 13: execution status change events --------------------------------------------------------
def status_events(cloud: LocalCloud) -> Callable[[int], list[dict[str, Any]]]:
    """Subscribe an SQS queue to every status change event; returns a reader that waits (with a
    deadline) until ``count`` events have arrived: the engine sends each just after the status
    changes, as AWS sends them after the fact."""
    sqs = cloud.client("sqs")
    queue_url = sqs.create_queue(QueueName="status-changes")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    pattern = {"source": ["aws.states"], "detail-type": ["Step Functions Execution Status Change"]}
    cloud.events.put_rule(Name="status-changes", EventPattern=json.dumps(pattern))
    cloud.events.put_targets(Rule="status-changes", Targets=[{"Id": "queue", "Arn": queue_arn}])

    received: list[dict[str, Any]] = []

    def arrived(count: int) -> bool:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        received.extend(json.loads(message["Body"])["detail"] for message in messages)
        return len(received) >= count

    def read(count: int) -> list[dict[str, Any]]:
        cloud.wait_until(lambda: arrived(count), what=f"{count} status change events")
        return list(received)

    return read


def test_a_standard_execution_sends_running_then_its_end(local_cloud: LocalCloud, tmp_path: Path):
    # AWS: "Step Functions Execution Status Change" for every status change of a Standard workflow
    read = status_events(local_cloud)
    machine = deploy(
        local_cloud, tmp_path, {"Done": {"Type": "Pass", "Result": {"ok": True}, "End": True}}, "Done"
    )
    execution = local_cloud.run(machine, {"orderId": "o-1"}).arn

    events = read(2)
    assert [event["status"] for event in events] == ["RUNNING", "SUCCEEDED"]
    running, succeeded = events
    assert running["executionArn"] == succeeded["executionArn"] == execution
    assert running["stopDate"] is None
    # (the input as its text was sent, json.dumps's spaces included: L12)
    assert running["input"] == succeeded["input"] == '{"orderId": "o-1"}'
    assert succeeded["output"] == '{"ok":true}'
    assert succeeded["outputDetails"] == {"included": True}
    assert isinstance(succeeded["startDate"], int)
    assert succeeded["stopDate"] >= succeeded["startDate"]
    # And each says, as recorded, the version and alias it ran (null: none) and its redrive
    assert {key: running[key] for key in REDRIVE_AND_VERSION} == {
        "stateMachineVersionArn": None,
        "stateMachineAliasArn": None,
        "redriveCount": 0,
        "redriveDate": None,
        "redriveStatus": "NOT_REDRIVABLE",
        "redriveStatusReason": "Execution is RUNNING and cannot be redriven",
    }
    assert succeeded["redriveStatusReason"] == "Execution is SUCCEEDED and cannot be redriven"


REDRIVE_AND_VERSION = (
    "stateMachineVersionArn",
    "stateMachineAliasArn",
    "redriveCount",
    "redriveDate",
    "redriveStatus",
    "redriveStatusReason",
)


def test_failed_and_stopped_executions_say_so(local_cloud: LocalCloud, tmp_path: Path):
    read = status_events(local_cloud)
    failing = deploy(
        local_cloud, tmp_path, {"Boom": {"Type": "Fail", "Error": "Nope", "Cause": "because"}}, "Boom"
    )
    local_cloud.run(failing, {})
    waiting = local_cloud.create_state_machine(
        "waiting",
        json.dumps({"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 1, "End": True}}}),
        {},
    )
    stopped = local_cloud.start_execution(waiting, {})
    local_cloud.wait_until(lambda: local_cloud.states_so_far(stopped) == ["W"], what="the Wait state")
    local_cloud.sfn.stop_execution(executionArn=stopped, error="Operator", cause="by hand")
    assert local_cloud.wait(stopped).status == "ABORTED"

    ended = {event["status"]: event for event in read(4) if event["status"] != "RUNNING"}
    assert (ended["FAILED"]["error"], ended["FAILED"]["cause"]) == ("Nope", "because")
    assert ended["ABORTED"]["executionArn"] == stopped
    # And a failed execution may be redriven: its event says so, with no reason
    assert (ended["FAILED"]["redriveStatus"], ended["FAILED"]["redriveStatusReason"]) == ("REDRIVABLE", None)


def test_an_express_execution_sends_no_status_change(local_cloud: LocalCloud):
    # AWS sends status change events for Standard workflows only
    read = status_events(local_cloud)
    machine = local_cloud.create_state_machine(
        "express",
        json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}),
        {},
        workflow_type="EXPRESS",
    )
    local_cloud.wait(local_cloud.start_execution(machine, {}))
    # A Standard execution after it is the witness that anything sent has arrived
    witness = local_cloud.create_state_machine(
        "witness", json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}), {}
    )
    witnessed = local_cloud.run(witness, {}).arn
    assert {event["executionArn"] for event in read(2)} == {witnessed}


def test_a_large_input_is_left_out_of_the_event(local_cloud: LocalCloud, tmp_path: Path):
    # Input and output above the event's data limit are omitted, marked included: false
    read = status_events(local_cloud)
    machine = deploy(
        local_cloud, tmp_path, {"Done": {"Type": "Pass", "Result": "small", "End": True}}, "Done"
    )
    local_cloud.run(machine, {"padding": "x" * (compat.MAX_STATUS_EVENT_DATA_BYTES + 1)})

    succeeded = read(2)[-1]
    assert succeeded["input"] is None
    assert succeeded["inputDetails"] == {"included": False}
    assert succeeded["output"] == '"small"'


def _queue_for(cloud: LocalCloud, rule: str, pattern: dict[str, Any]) -> Callable[[], list[str]]:
    """A queue that a new rule with ``pattern`` sends to; returns a reader of the statuses it got."""
    sqs = cloud.client("sqs")
    url = sqs.create_queue(QueueName=rule)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    cloud.events.put_rule(Name=rule, EventPattern=json.dumps(pattern))
    cloud.events.put_targets(Rule=rule, Targets=[{"Id": "queue", "Arn": arn}])

    def statuses() -> list[str]:
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        return [json.loads(message["Body"])["detail"]["status"] for message in messages]

    return statuses


def test_a_status_change_no_rule_can_take_is_not_put_and_one_a_rule_may_take_is(
    local_cloud: LocalCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # Given rules that leave a machine's events out by plain strings (another machine, the FAILED
    # status, another source), a disabled rule, and a count of PutEvents calls
    from moto.events.models import EventsBackend

    machine = deploy(local_cloud, tmp_path, {"Done": {"Type": "Pass", "End": True}}, "Done")
    status_change = {"source": ["aws.states"], "detail-type": ["Step Functions Execution Status Change"]}
    left_out = _queue_for(
        local_cloud, "another-machine", {**status_change, "detail": {"stateMachineArn": [machine + "-2"]}}
    )
    _queue_for(local_cloud, "failures", {**status_change, "detail": {"status": ["FAILED"]}})
    _queue_for(local_cloud, "orders", {"source": ["orders"]})
    _queue_for(local_cloud, "disabled", status_change)
    local_cloud.events.disable_rule(Name="disabled")
    calls: list[int] = []
    put_events = EventsBackend.put_events

    def counted(self: Any, events: list[dict[str, Any]]) -> Any:
        calls.append(len(events))
        return put_events(self, events)

    monkeypatch.setattr(EventsBackend, "put_events", counted)
    # When an execution runs, then a rule that may take its events (a prefix filter) is added and
    # another runs
    local_cloud.run(machine, {})
    put_before_the_prefix_rule = len(calls)
    taken = _queue_for(local_cloud, "by-prefix", {"detail": {"stateMachineArn": [{"prefix": machine}]}})
    local_cloud.run(machine, {})
    got: list[str] = []

    def both_arrived() -> bool:
        got.extend(taken())
        return len(got) >= 2

    local_cloud.wait_until(both_arrived, what="two status change events")
    # Then the first execution's events were not put; the second's two were, the rule that may take
    # them got both, and the rule that leaves them out got neither
    assert put_before_the_prefix_rule == 0
    assert calls == [1, 1]
    assert sorted(got) == ["RUNNING", "SUCCEEDED"]
    assert left_out() == []


# -- fix 14: StartSyncExecution -------------------------------------------------------------------
def express_machine(
    local_cloud: LocalCloud, states: dict[str, Any], start_at: str, **substitutions: str
) -> str:
    definition = json.dumps({"StartAt": start_at, "States": states})
    return local_cloud.create_state_machine("express", definition, substitutions, workflow_type="EXPRESS")


def test_start_sync_execution_answers_with_the_ended_express_execution(local_cloud: LocalCloud):
    # AWS: StartSyncExecution returns when the Express execution has ended, with its output
    function = local_cloud.add_function("echo", lambda event, context: {"got": event})
    machine = express_machine(local_cloud, {"Call": invoke_state({"End": True})}, "Call", Fn=function.arn)

    result = local_cloud.run_sync(machine, {"a": 1})

    assert result.status == "SUCCEEDED"
    assert result.output == {"got": {"a": 1}}
    assert ":express:express:" in result.arn
    assert result.states == ["Call"]


def test_start_sync_execution_reports_a_failure_in_its_answer(local_cloud: LocalCloud):
    machine = express_machine(
        local_cloud, {"Boom": {"Type": "Fail", "Error": "Nope", "Cause": "because"}}, "Boom"
    )
    result = local_cloud.run_sync(machine, {})
    assert (result.status, result.error, result.cause, result.output) == ("FAILED", "Nope", "because", None)


def test_start_sync_execution_refuses_a_standard_state_machine(local_cloud: LocalCloud, tmp_path: Path):
    # AWS: StateMachineTypeNotSupported for a Standard workflow
    machine = deploy(local_cloud, tmp_path, {"Done": {"Type": "Pass", "End": True}}, "Done")
    with pytest.raises(local_cloud.sfn.exceptions.StateMachineTypeNotSupported):
        local_cloud.sfn.start_sync_execution(stateMachineArn=machine, input="{}")


def test_start_sync_execution_refuses_input_that_is_not_json(local_cloud: LocalCloud):
    machine = express_machine(local_cloud, {"Done": {"Type": "Pass", "End": True}}, "Done")
    with pytest.raises(local_cloud.sfn.exceptions.InvalidExecutionInput):
        local_cloud.sfn.start_sync_execution(stateMachineArn=machine, input="{not json")


# -- fix 15: workflow variables (and JSONata expressions) ------------------------------------------
def run_definition(local_cloud: LocalCloud, states: dict[str, Any], execution_input: Any) -> Any:
    definition = json.dumps({"StartAt": next(iter(states)), "States": states})
    name = f"variables-{len(local_cloud.sfn.list_state_machines()['stateMachines'])}"
    return local_cloud.run(local_cloud.create_state_machine(name, definition, {}), execution_input)


def test_a_variable_read_with_brackets_in_a_jsonpath_state_reads_the_member(
    local_cloud: LocalCloud, tmp_path: Path
):
    # A JSONPath state reads a variable with JSONPath: moto read $v['a'] as JSONata, where brackets
    # filter, and answered the whole variable (fix 142)
    states = {
        "Keep": {"Type": "Pass", "Assign": {"v": {"test-batch": {"id": 7}, "list": [1, 2]}}, "Next": "Read"},
        "Read": {
            "Type": "Pass",
            "Parameters": {
                "member.$": "$v['test-batch']",
                "nested.$": "$v['test-batch']['id']",
                "after_a_dot.$": "$v.list[1]",
                "formatted.$": "States.Format('batch {}', $v['test-batch']['id'])",
            },
            "Next": "Route",
        },
        "Route": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.nested", "NumericEqualsPath": "$v['test-batch']['id']", "Next": "Done"}
            ],
            "Default": "Wrong",
        },
        "Done": {"Type": "Succeed"},
        "Wrong": {"Type": "Fail", "Error": "Wrong"},
    }

    # Given a variable read with bracketed members, When the machine runs
    result = local_cloud.run(deploy(local_cloud, tmp_path, states, "Keep"), {})

    # Then each read is the member it names, in a field, an intrinsic function and a Choice rule
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output == {"member": {"id": 7}, "nested": 7, "after_a_dot": 2, "formatted": "batch 7"}
    assert result.states == ["Keep", "Read", "Route", "Done"]


def test_a_variables_missing_member_is_absent_in_a_jsonpath_state(local_cloud: LocalCloud, tmp_path: Path):
    # A JSONPath state reads a variable's member with JSONPath: one that is not there is absent, as a
    # missing path is (moto read it as JSONata, answered null, and IsPresent said present: fix 146)
    states = {
        "Keep": {"Type": "Pass", "Assign": {"v": {"a": None}}, "Next": "Route"},
        "Route": {
            "Type": "Choice",
            "Choices": [
                {
                    "And": [
                        {"Variable": "$v.missing", "IsPresent": False},
                        {"Variable": "$v.a", "IsPresent": True},
                        {"Variable": "$v.a", "IsNull": True},
                    ],
                    "Next": "Read",
                }
            ],
            "Default": "Wrong",
        },
        "Read": {"Type": "Pass", "Parameters": {"value.$": "$v.missing.deeper"}, "End": True},
        "Wrong": {"Type": "Fail", "Error": "Wrong"},
    }

    # Given a variable without the member a rule asks about, When the machine runs
    result = local_cloud.run(deploy(local_cloud, tmp_path, states, "Keep"), {})

    # Then the rule sees it absent (and null as present), and a field reading it fails the state
    # as a missing path does, naming the path
    assert result.states == ["Keep", "Route", "Read"]
    assert result.error == "States.Runtime"
    assert (
        "The JSONPath '$v.missing.deeper' specified for the field 'value.$' could not be found"
        in result.cause
    )


def test_a_jsonpath_state_reads_a_variable_s_numbers_as_they_were_assigned(
    local_cloud: LocalCloud, tmp_path: Path
):
    # A JSONPath state reads a variable as JSONPath reads a path, from the value as assigned (fix
    # 159): moto read it as JSONata, which writes 5.0 as 5
    states = {
        "Keep": {"Type": "Pass", "Assign": {"kept.$": "$"}, "Next": "Read"},
        "Read": {
            "Type": "Pass",
            "InputPath": "$kept",
            "Parameters": {"whole.$": "$kept", "amount.$": "$kept.amount", "also.$": "$.amount"},
            "End": True,
        },
    }

    # Given an input written with 5.0, When a state reads it back from a variable
    result = local_cloud.run(deploy(local_cloud, tmp_path, states, "Keep"), {"amount": 5.0})

    # Then every read is 5.0, as the input wrote it
    assert result.output_json == '{"whole":{"amount":5.0},"amount":5.0,"also":5.0}'


def test_variables_assigned_in_one_state_are_read_by_later_ones(local_cloud: LocalCloud):
    # AWS: a JSONPath state reads a variable in any path field but ResultPath; Pass's `$` in Assign
    # is its result; an Assign's expressions see the values at state entry
    states = {
        "Keep": {"Type": "Pass", "Assign": {"kept.$": "$.a", "count": 1}, "Next": "Read"},
        "Read": {
            "Type": "Pass",
            "InputPath": "$kept",
            "Parameters": {"first.$": "$[0]", "count.$": "$count", "sum.$": "States.MathAdd($count, 41)"},
            "Assign": {"count": 2, "before.$": "$count"},
            "ResultPath": "$.read",
            "Next": "After",
        },
        "After": {
            "Type": "Pass",
            "Parameters": {"count.$": "$count", "before.$": "$before"},
            "ResultPath": "$.after",
            "End": True,
        },
    }

    result = run_definition(local_cloud, states, {"a": [7, 8]})

    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {
        "a": [7, 8],
        "read": {"first": 7, "count": 1, "sum": 42},
        "after": {"count": 2, "before": 1},
    }


def test_variables_of_a_parallel_branch_read_the_outer_scope_and_end_with_it(local_cloud: LocalCloud):
    # AWS: a branch reads outer variables; what it assigns goes out of scope when the Parallel ends;
    # the Parallel's own Assign sees its result as `$`
    states = {
        "Outer": {"Type": "Pass", "Assign": {"outer": "o"}, "Next": "Branching"},
        "Branching": {
            "Type": "Parallel",
            "Branches": [
                {
                    "StartAt": "Inner",
                    "States": {
                        "Inner": {"Type": "Pass", "Assign": {"inner": "i"}, "Next": "UseBoth"},
                        "UseBoth": {
                            "Type": "Pass",
                            "Parameters": {"o.$": "$outer", "i.$": "$inner"},
                            "End": True,
                        },
                    },
                }
            ],
            "Assign": {"fromBranch.$": "$[0]"},
            "ResultPath": None,
            "Next": "Later",
        },
        "Later": {"Type": "Pass", "InputPath": "$fromBranch", "End": True},
    }
    assert run_definition(local_cloud, states, {}).output == {"o": "o", "i": "i"}

    # And a later state does not see the branch's own variable: it went out of scope (read as null
    # here, as LocalStack's evaluator reads an unknown variable; what AWS answers is unverified, L15)
    states["Later"] = {"Type": "Pass", "Parameters": {"o.$": "$outer", "i.$": "$inner"}, "End": True}
    assert run_definition(local_cloud, states, {}).output == {"o": "o", "i": None}


# -- fix 17: CreateStateMachine is idempotent only for the same request ----------------------------
def test_a_taken_name_with_another_definition_is_refused(local_cloud: LocalCloud):
    # AWS: the same request again returns the machine; a different one is StateMachineAlreadyExists
    first = {"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}}
    other = {"StartAt": "B", "States": {"B": {"Type": "Pass", "End": True}}}
    arn = local_cloud.create_state_machine("taken", json.dumps(first), {})
    assert local_cloud.create_state_machine("taken", json.dumps(first), {}) == arn
    with pytest.raises(ClientError) as refused:
        local_cloud.create_state_machine("taken", json.dumps(other), {})
    assert refused.value.response["Error"]["Code"] == "StateMachineAlreadyExists"
    with pytest.raises(ClientError):
        local_cloud.create_state_machine("taken", json.dumps(first), {}, workflow_type="EXPRESS")


def logged_machine(cloud: LocalCloud, group: str, level: str, with_data: bool) -> str:
    group_arn = f"arn:aws:logs:{cloud.region}:{cloud.account}:log-group:{group}:*"
    definition = {
        "StartAt": "Greet",
        "States": {
            "Greet": {"Type": "Pass", "Result": {"hello": "world"}, "Next": "Refuse"},
            "Refuse": {"Type": "Fail", "Error": "Refused", "Cause": "as planned"},
        },
    }
    return str(
        cloud.sfn.create_state_machine(
            name=f"logged-{level.lower()}",
            definition=json.dumps(definition),
            roleArn=f"arn:aws:iam::{cloud.account}:role/logged",
            loggingConfiguration={
                "level": level,
                "includeExecutionData": with_data,
                "destinations": [{"cloudWatchLogsLogGroup": {"logGroupArn": group_arn}}],
            },
        )["stateMachineArn"]
    )


def logged_records(cloud: LocalCloud, group: str) -> list[dict[str, Any]]:
    events = cloud.client("logs").filter_log_events(logGroupName=group)["events"]
    return [json.loads(event["message"]) for event in events]


def test_an_execution_logs_its_history_to_the_configured_log_group(local_cloud: LocalCloud):
    # Given a state machine logging ALL events with their data to a log group (fix 30)
    local_cloud.client("logs").create_log_group(logGroupName="/sfn/all")
    machine = logged_machine(local_cloud, "/sfn/all", "ALL", with_data=True)

    # When it runs
    result = local_cloud.run(machine, {"n": 1})

    # Then every history event is a record in Step Functions' log format, in order, with its data
    records = logged_records(local_cloud, "/sfn/all")
    assert [record["type"] for record in records] == [event["type"] for event in result.history]
    assert {record["execution_arn"] for record in records} == {result.arn}
    assert all(record["event_timestamp"].isdigit() for record in records)
    assert json.loads(records[0]["details"]["input"]) == {"n": 1}
    assert records[-1]["details"]["error"] == "Refused"


def test_records_are_delivered_off_the_execution_s_path(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    # Given a logged machine whose Task runs a function in the execution's own thread, and a note
    # of the thread each delivery to CloudWatch Logs runs in (fix 106)
    from moto.logs.models import LogsBackend

    delivered_in: list[int] = []
    deliver = LogsBackend.put_log_events

    def noted(self: Any, *args: Any, **kwargs: Any) -> Any:
        delivered_in.append(threading.get_ident())
        return deliver(self, *args, **kwargs)

    monkeypatch.setattr(LogsBackend, "put_log_events", noted)
    executed_in: list[int] = []
    step = local_cloud.add_function("step", lambda event, context: executed_in.append(threading.get_ident()))
    local_cloud.client("logs").create_log_group(logGroupName="/sfn/async")
    group_arn = f"arn:aws:logs:{local_cloud.region}:{local_cloud.account}:log-group:/sfn/async:*"
    machine = local_cloud.sfn.create_state_machine(
        name="async-logs",
        definition=json.dumps(
            {"StartAt": "Step", "States": {"Step": {"Type": "Task", "Resource": step.arn, "End": True}}}
        ),
        roleArn=f"arn:aws:iam::{local_cloud.account}:role/logged",
        loggingConfiguration={
            "level": "ALL",
            "includeExecutionData": True,
            "destinations": [{"cloudWatchLogsLogGroup": {"logGroupArn": group_arn}}],
        },
    )["stateMachineArn"]

    # When it runs, and its logs are read
    result = local_cloud.run(machine, {})
    records = logged_records(local_cloud, "/sfn/async")

    # Then a reader sees every record, in order, and none was written by the execution's thread
    assert [record["type"] for record in records] == [event["type"] for event in result.history]
    assert executed_in
    assert delivered_in
    assert executed_in[0] not in delivered_in


def test_records_sent_while_the_delivery_thread_waits_out_its_window_go_in_one_batch(
    monkeypatch: pytest.MonkeyPatch,
):
    # Given a delivery thread whose batch window ends when the test says, and its batches noted
    # (the process's own delivery thread, which earlier tests' engines woke, keeps real time and
    # its batches are not this test's)
    from sfn_idempotency.local.compat import execution_logs

    waiting, window_over = threading.Event(), threading.Event()
    delivery = execution_logs.LogDelivery()
    real_sleep = time.sleep

    class Window:
        @staticmethod
        def sleep(seconds: float) -> None:
            if threading.current_thread() is not delivery._thread:
                real_sleep(seconds)
                return
            assert seconds == execution_logs.BATCH_WINDOW_SECONDS
            waiting.set()
            window_over.wait(DEADLINE_SECONDS)

    group = "/sfn/batched"
    batches: list[int] = []

    def note(batch: list[Any]) -> None:
        if batch and all(record[1] == group for record in batch):
            batches.append(len(batch))

    monkeypatch.setattr(execution_logs, "time", Window)
    monkeypatch.setattr(execution_logs, "_deliver", note)
    record = (None, group, "stream", {"type": "PassStateEntered"}, 0)

    # When one record wakes the thread, and nine more are sent while it waits out its window
    delivery.send(record)
    assert waiting.wait(DEADLINE_SECONDS)
    for _ in range(9):
        delivery.send(record)
    window_over.set()
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not batches:
        assert time.monotonic() < deadline
        time.sleep(0.01)

    # Then the ten went out together, in one batch (one PutLogEvents a stream)
    assert batches == [10]


def test_a_delivery_that_fails_loses_its_records_and_the_next_are_delivered(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    # Given a logged machine, and a Logs backend that fails the first delivery it is given
    from moto.logs.models import LogsBackend

    deliver = LogsBackend.put_log_events
    failures = [RuntimeError("the disk is full")]

    def failing_once(self: Any, *args: Any, **kwargs: Any) -> Any:
        if failures:
            raise failures.pop()
        return deliver(self, *args, **kwargs)

    monkeypatch.setattr(LogsBackend, "put_log_events", failing_once)
    uncaught: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", uncaught.append)
    local_cloud.client("logs").create_log_group(logGroupName="/sfn/flaky")
    machine = logged_machine(local_cloud, "/sfn/flaky", "ALL", with_data=True)

    # When it runs twice, the first run's records read (so delivered) before the second starts: a
    # delivery thread held back by a busy machine would otherwise put both runs' in one batch
    first = local_cloud.run(machine, {"n": 1})
    logged_records(local_cloud, "/sfn/flaky")
    second = local_cloud.run(machine, {"n": 2})

    # Then the failed delivery lost its records only: the first run's are missing some, and every
    # record of the second was delivered
    records = logged_records(local_cloud, "/sfn/flaky")
    assert failures == []
    assert uncaught == []  # (no thread died of it, with a traceback on stderr)
    assert len([r for r in records if r["execution_arn"] == first.arn]) < len(first.history)
    delivered = [r["type"] for r in records if r["execution_arn"] == second.arn]
    assert delivered == [event["type"] for event in second.history]


def test_a_batch_of_records_sent_out_of_time_order_is_delivered_whole_in_time_order(
    local_cloud: LocalCloud,
):
    # Given two executions of one logged machine, whose records share the machine's stream, and a
    # batch in which the second execution's record was sent before the first's earlier one (each
    # execution takes its record's time before sending it: concurrent ones interleave)
    from moto.logs.models import logs_backends

    from sfn_idempotency.local.compat.execution_logs import delivery

    local_cloud.client("logs").create_log_group(logGroupName="/sfn/interleaved")
    machine = logged_machine(local_cloud, "/sfn/interleaved", "ALL", with_data=True)
    first, second = local_cloud.run(machine, {"n": 1}), local_cloud.run(machine, {"n": 2})
    logs = local_cloud.client("logs")
    stream = f"states/{machine}"
    before = len(logs.get_log_events(logGroupName="/sfn/interleaved", logStreamName=stream)["events"])
    backend = logs_backends[local_cloud.account][local_cloud.region]
    now = datetime.datetime.now(datetime.UTC)
    earlier = {"type": "ExecutionFailed", "execution_arn": first.arn, "event_timestamp": now.isoformat()}
    later = {
        "type": "ExecutionSucceeded",
        "execution_arn": second.arn,
        "event_timestamp": (now + datetime.timedelta(seconds=1)).isoformat(),
    }

    # When both are delivered in one batch
    with delivery._delivering:  # (the delivery thread waits, so the two go in one PutLogEvents)
        delivery.send((backend, "/sfn/interleaved", stream, later, 0))
        delivery.send((backend, "/sfn/interleaved", stream, earlier, 0))
    events = logs.get_log_events(logGroupName="/sfn/interleaved", logStreamName=stream)["events"]

    # Then neither is lost, and the stream has them in time order
    delivered = [json.loads(event["message"]) for event in events[before:]]
    assert [(record["execution_arn"], record["type"]) for record in delivered] == [
        (first.arn, "ExecutionFailed"),
        (second.arn, "ExecutionSucceeded"),
    ]


def test_level_error_logs_only_failures_and_no_data(local_cloud: LocalCloud):
    # Given a state machine logging errors only, without execution data (as the stack deploys them)
    local_cloud.client("logs").create_log_group(logGroupName="/sfn/errors")
    machine = logged_machine(local_cloud, "/sfn/errors", "ERROR", with_data=False)

    # When it runs and fails
    local_cloud.run(machine, {"secret": "s3cr3t"})

    # Then only the failure events are logged (AWS's ERROR level counts the Fail state's entry among
    # them), and no input or output with them
    records = logged_records(local_cloud, "/sfn/errors")
    assert [record["type"] for record in records] == ["FailStateEntered", "ExecutionFailed"]
    assert "s3cr3t" not in json.dumps(records)


def test_a_missing_log_group_drops_the_records_and_the_execution_runs_on(local_cloud: LocalCloud):
    # Given a state machine logging to a group that was deleted after it was created
    local_cloud.client("logs").create_log_group(logGroupName="/sfn/gone")
    machine = logged_machine(local_cloud, "/sfn/gone", "ALL", with_data=True)
    local_cloud.client("logs").delete_log_group(logGroupName="/sfn/gone")

    # When it runs, it ends as its definition says
    result = local_cloud.run(machine, {})

    # Then it failed on its Fail state, not on the logging
    assert (result.status, result.error) == ("FAILED", "Refused")
