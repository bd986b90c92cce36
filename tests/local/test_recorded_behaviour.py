"""The engine answers as AWS was recorded answering (LocalStack's Step Functions snapshot tests, which
were recorded against AWS; docs/aws-fidelity.md names the recordings). One test per compat fix, in
our own words: each fails on plain moto."""

from __future__ import annotations

import io
import json
import re
import zipfile
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.compat.interpreter import aws_timestamp

ROLE = "arn:aws:iam::123456789012:role/machine-role"
AWS_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
FUNCTIONS = """
import os, time
from decimal import Decimal

def echo(event, context):
    return {"event": event, "greeting": os.environ.get("GREETING"), "name": context.function_name}

def fail(event, context):
    raise ValueError("card declined")

def raw(event, context):
    return b"raw bytes"

def slow(event, context):
    time.sleep(5)
    return "late"

def exits(event, context):
    raise SystemExit(4)

def decimals(event, context):
    return {"amount": Decimal("10.50"), "count": Decimal("3"), "city": "Zürich"}

def not_a_number(event, context):
    return {"ratio": float("nan"), "unset": Decimal("NaN")}
"""


def machine(cloud: LocalCloud, states: dict[str, Any], start_at: str, **top: Any) -> str:
    definition = json.dumps({**top, "StartAt": start_at, "States": states})
    name = f"machine-{len(cloud.sfn.list_state_machines()['stateMachines'])}"
    return str(
        cloud.sfn.create_state_machine(name=name, definition=definition, roleArn=ROLE)["stateMachineArn"]
    )


def task(resource: str, parameters: dict[str, Any], **rest: Any) -> dict[str, Any]:
    return {"Type": "Task", "Resource": resource, "Parameters": parameters, **rest}


def task_results(cloud: LocalCloud, execution_arn: str) -> list[Any]:
    events = cloud.sfn.get_execution_history(executionArn=execution_arn)["events"]
    return [
        json.loads(e["taskSucceededEventDetails"]["output"]) for e in events if e["type"] == "TaskSucceeded"
    ]


@pytest.fixture
def lambda_api_functions(local_cloud: LocalCloud) -> Any:
    """Functions created through the Lambda API from a zip, as a deploy tool creates them."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as package:
        package.writestr("app.py", FUNCTIONS)
    client = local_cloud.client("lambda")
    local_cloud.client("iam").create_role(RoleName="fn-role", AssumeRolePolicyDocument="{}")
    handlers = (
        ("echo", 3),
        ("fail", 3),
        ("raw", 3),
        ("slow", 1),
        ("exits", 3),
        ("decimals", 3),
        ("not_a_number", 3),
    )
    for handler, timeout in handlers:
        client.create_function(
            FunctionName=handler,
            Runtime="python3.12",
            Role="arn:aws:iam::123456789012:role/fn-role",
            Handler=f"app.{handler}",
            Code={"ZipFile": archive.getvalue()},
            Timeout=timeout,
            Environment={"Variables": {"GREETING": "hello"}},
        )
    return client


# -- Lambda functions created through the Lambda API (fix 22) --------------------------------------


def test_a_lambda_api_function_runs_in_process_and_names_the_version_that_ran(
    local_cloud: LocalCloud, lambda_api_functions: Any
):
    # Given a state machine invoking a zip function created through the Lambda API
    states = {
        "Call": task("arn:aws:states:::lambda:invoke", {"FunctionName": "echo", "Payload.$": "$"}, End=True)
    }
    arn = machine(local_cloud, states, "Call")

    # When it runs
    result = local_cloud.run(arn, {"orderId": "o-1"})

    # Then the handler ran with the function's environment, and the result names $LATEST as AWS's
    # does, with the SDK's metadata of the answer (recorded, fix 70)
    assert result.status == "SUCCEEDED"
    payload = {"event": {"orderId": "o-1"}, "greeting": "hello", "name": "echo"}
    output = result.output
    metadata = output.pop("SdkHttpMetadata")
    assert output.pop("SdkResponseMetadata") == {"RequestId": metadata["HttpHeaders"]["x-amzn-RequestId"]}
    assert output == {"ExecutedVersion": "$LATEST", "Payload": payload, "StatusCode": 200}
    assert metadata["HttpStatusCode"] == 200
    assert metadata["HttpHeaders"]["X-Amz-Executed-Version"] == "$LATEST"
    assert metadata["HttpHeaders"]["Content-Length"] == str(len(json.dumps(payload)))


def test_a_lambda_api_function_answers_as_the_python_runtime_does(lambda_api_functions: Any):
    # When each function is invoked directly
    answers = {
        name: lambda_api_functions.invoke(FunctionName=name, Payload=b"{}")
        for name in ("fail", "raw", "slow", "exits")
    }
    payloads = {name: answer["Payload"].read() for name, answer in answers.items()}

    # Then an exception is an Unhandled error with Lambda's payload, its stack under /var/task
    failure = json.loads(payloads["fail"])
    assert answers["fail"]["FunctionError"] == "Unhandled"
    assert (failure["errorType"], failure["errorMessage"]) == ("ValueError", "card declined")
    assert re.fullmatch(r"[0-9a-f-]{36}", failure["requestId"])
    assert all("/var/task/app.py" in frame for frame in failure["stackTrace"])
    # And bytes come back as they are, and a function past its timeout ends in Sandbox.Timedout
    assert payloads["raw"] == b"raw bytes"
    assert answers["slow"]["FunctionError"] == "Unhandled"
    timed_out = json.loads(payloads["slow"])
    assert timed_out["errorType"] == "Sandbox.Timedout"
    assert "Task timed out after 1.00 seconds" in timed_out["errorMessage"]
    # And a function that ends its runtime's process answers Runtime.ExitError at once, with its status
    assert answers["exits"]["FunctionError"] == "Unhandled"
    exited = json.loads(payloads["exits"])
    assert exited["errorType"] == "Runtime.ExitError"
    assert exited["errorMessage"].endswith("Error: Runtime exited with error: exit status 4")


def test_a_python_function_s_result_is_written_as_lambda_s_python_runtime_writes_it(
    local_cloud: LocalCloud, lambda_api_functions: Any
):
    # Given python3.12 functions returning Decimals (as boto3 reads DynamoDB numbers), a non-ASCII
    # string, and NaN as a float and as a Decimal

    # When each is invoked directly
    written = {
        name: lambda_api_functions.invoke(FunctionName=name, Payload=b"{}")["Payload"].read()
        for name in ("decimals", "not_a_number")
    }

    # Then the payload is the text awslambdaric 4.2.2 writes: a Decimal's digits as they are, the
    # characters unescaped (python3.12 and later), NaN as JavaScript writes it (a MarshalError before)
    assert written["decimals"] == '{"amount": 10.50, "count": 3, "city": "Zürich"}'.encode()
    assert written["not_a_number"] == b'{"ratio": NaN, "unset": NaN}'

    # When a state machine invokes each
    states = {
        "Decimals": task(
            "arn:aws:states:::lambda:invoke",
            {"FunctionName": "decimals", "Payload": {}},
            ResultSelector={"payload.$": "$.Payload"},
            ResultPath="$.decimals",
            Next="NotANumber",
        ),
        "NotANumber": task(
            "arn:aws:states:::lambda:invoke",
            {"FunctionName": "not_a_number", "Payload": {}},
            ResultSelector={"payload.$": "$.Payload"},
            ResultPath="$.nan",
            End=True,
        ),
    }
    result = local_cloud.run(machine(local_cloud, states, "Decimals"), {})

    # Then the numbers are numbers, and an answer that is not JSON text is the string it holds
    # (fix 148): the execution's output stays JSON, as Step Functions reads JSON
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["decimals"] == {"payload": {"amount": 10.5, "count": 3, "city": "Zürich"}}
    assert result.output["nan"] == {"payload": '{"ratio": NaN, "unset": NaN}'}


def zipped_function(cloud: LocalCloud, name: str, source: str, handler: str) -> Any:
    """A Python function of one module, ``app.py``, created through the Lambda API; its client."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as package:
        package.writestr("app.py", source)
    client = cloud.client("lambda")
    cloud.client("iam").create_role(RoleName="fn-role", AssumeRolePolicyDocument="{}")
    client.create_function(
        FunctionName=name,
        Runtime="python3.11",
        Role="arn:aws:iam::123456789012:role/fn-role",
        Handler=handler,
        Code={"ZipFile": archive.getvalue()},
    )
    return client


@pytest.mark.parametrize(
    ("source", "handler", "error_type", "message"),
    [
        (
            "import not_installed\n",
            "app.handler",
            "Runtime.ImportModuleError",
            "Unable to import module 'app': No module named 'not_installed'",
        ),
        (
            "def handler(event, context):\n    return 1\n",
            "absent.handler",
            "Runtime.ImportModuleError",
            "Unable to import module 'absent': No module named 'absent'",
        ),
        (
            "def handler(event, context)\n    return 1\n",
            "app.handler",
            "Runtime.UserCodeSyntaxError",
            "Syntax error in module 'app': expected ':' (app.py, line 1)",
        ),
        (
            "def other(event, context):\n    return 1\n",
            "app.handler",
            "Runtime.HandlerNotFound",
            "Handler 'handler' missing on module 'app'",
        ),
    ],
)
def test_a_handler_that_cannot_be_loaded_is_refused_in_the_runtime_s_words(
    local_cloud: LocalCloud, source: str, handler: str, error_type: str, message: str
):
    # Given a function whose handler cannot be loaded (awslambdaric's _get_handler words each case)
    client = zipped_function(local_cloud, "broken", source, handler)

    # When it is invoked
    answer = client.invoke(FunctionName="broken", Payload=b"{}")
    payload = json.loads(answer["Payload"].read())

    # Then the runtime answers the error, in its words; no frame of the engine's loader
    assert answer["FunctionError"] == "Unhandled"
    assert (payload["errorType"], payload["errorMessage"]) == (error_type, message)
    assert all(frame.startswith('  File "/var/task/') for frame in payload["stackTrace"])
    assert "sfn_idempotency" not in json.dumps(payload)


def test_a_module_that_raises_as_it_is_imported_answers_its_own_error(local_cloud: LocalCloud):
    source = "import os\nTABLE = os.environ['TABLE']\n\ndef handler(event, context):\n    return 1\n"
    client = zipped_function(local_cloud, "unconfigured", source, "app.handler")
    payload = json.loads(client.invoke(FunctionName="unconfigured", Payload=b"{}")["Payload"].read())
    assert (payload["errorType"], payload["errorMessage"]) == ("KeyError", "'TABLE'")
    assert [frame.split(",")[0] for frame in payload["stackTrace"]] == ['  File "/var/task/app.py"']


def test_invoking_a_function_that_does_not_exist_names_its_latest_qualifier(local_cloud: LocalCloud):
    # Recorded (error_handling/test_task_service_lambda::test_no_such_function): the Cause ends ":$LATEST"
    states = {
        "Call": task("arn:aws:states:::lambda:invoke", {"FunctionName": "absent", "Payload": {}}, End=True)
    }
    result = local_cloud.run(machine(local_cloud, states, "Call"), {})
    assert result.error == "Lambda.ResourceNotFoundException"
    assert result.cause.startswith(
        "Function not found: arn:aws:lambda:us-east-1:123456789012:function:absent:$LATEST ("
    )


# -- The API's answers (fixes 18 to 21) -------------------------------------------------------------


def test_an_invalid_definition_is_refused_with_its_code(local_cloud: LocalCloud):
    # Recorded: InvalidDefinition, which the SDK raises as its own exception (moto sent no code)
    with pytest.raises(local_cloud.sfn.exceptions.InvalidDefinition):
        local_cloud.sfn.create_state_machine(name="broken", definition='{"StartAt": "A"}', roleArn=ROLE)


def _pass(**fields: Any) -> dict[str, Any]:
    return {"StartAt": "P", "States": {"P": {"Type": "Pass", **fields, "End": True}}}


@pytest.mark.parametrize(
    ("definition", "message", "location"),
    [
        (
            {"StartAt": "C", "States": {"C": {"Type": "Choice", "Default": "D"}, "D": {"Type": "Succeed"}}},
            "The field 'Choices' is required but was missing",
            "/States/C",
        ),
        (
            {
                "StartAt": "C",
                "States": {"C": {"Type": "Choice", "Choices": [], "Default": "D"}, "D": {"Type": "Succeed"}},
            },
            "Value cannot be empty",
            "/States/C/Choices",
        ),
        (
            {"StartAt": "B", "States": {"B": {"Type": "Parallel", "End": True}}},
            "The field 'Branches' is required but was missing",
            "/States/B",
        ),
        (
            _pass(InputPath="$..[[["),
            "The value for the field 'InputPath' must be a valid JSONPath",
            "/States/P",
        ),
        (
            _pass(ResultPath="$.a[("),
            "The value for the field 'ResultPath' must be a valid JSONPath",
            "/States/P",
        ),
        (
            _pass(Parameters={"order": {"id.$": "$..[[["}}),
            "The value for the field 'id.$' must be a valid JSONPath or a valid intrinsic function call",
            "/States/P/Parameters/order",
        ),
        (
            {
                "StartAt": "T",
                "QueryLanguage": "JSONata",
                "States": {
                    "T": {
                        "Type": "Task",
                        "Resource": "arn:aws:states:::lambda:invoke",
                        "Arguments": "{% $states.input %}",
                        "Credentials": {"Role": "arn:aws:iam::123456789012:role/other"},
                        "End": True,
                    }
                },
            },
            "The field 'RoleArn' is required but was missing",
            "/States/T/Credentials",
        ),
    ],
    ids=[
        "choice without choices",
        "choice with no rules",
        "parallel without branches",
        "input path",
        "result path",
        "a parameter's path",
        "credentials without a role",
    ],
)
def test_a_definition_aws_refuses_is_refused_at_creation_and_validation_in_its_words(
    local_cloud: LocalCloud, definition: dict[str, Any], message: str, location: str
):
    # When the definition is created, and validated
    text = json.dumps(definition)
    with pytest.raises(local_cloud.sfn.exceptions.InvalidDefinition) as refused:
        local_cloud.sfn.create_state_machine(name="refused", definition=text, roleArn=ROLE)
    validated = local_cloud.sfn.validate_state_machine_definition(definition=text)

    # Then both say why, as AWS words a schema failure (recorded: "The field 'RoleArn' is required but
    # was missing at /States/State0/Credentials", "Value cannot be empty at /States/StateName/Branches",
    # "The value for the field 'parsed.$' must be a valid JSONPath or a valid intrinsic function call
    # at /States/IntrinsicEscape/Parameters"); moto accepted each and failed every execution with
    # Python's exception as the cause
    assert refused.value.response["Error"]["Message"] == (
        f"Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: {message} at {location}'"
    )
    assert validated["result"] == "FAIL"
    assert validated["diagnostics"] == [
        {"severity": "ERROR", "code": "SCHEMA_VALIDATION_FAILED", "message": message, "location": location}
    ]


@pytest.mark.parametrize(
    "path",
    ["$", "$.detail.my-key", "$['a b'].c", "$.items[?(@.price > 10)]", "$..book[0]", "$.a[*].b", "$.a[1:2]"],
)
def test_a_path_aws_reads_is_accepted_everywhere_a_path_goes(local_cloud: LocalCloud, path: str):
    # Given a JSONPath AWS's JSONPath reads, as a state's path, a parameter's, a context path and a
    # variable's member
    definition = _pass(
        InputPath=path,
        Parameters={
            "here.$": path,
            "context.$": "$$.Execution.Id",
            "intrinsic.$": "States.Format('{}', $.a)",
        },
        ResultPath="$.out",
        Assign={"order.$": path},
    )
    # When it is validated, Then nothing is refused (never stricter than AWS)
    validated = local_cloud.sfn.validate_state_machine_definition(definition=json.dumps(definition))
    assert validated["result"] == "OK", validated["diagnostics"]


def test_a_jsonata_expression_that_is_not_jsonata_fails_in_jsonata_s_words(local_cloud: LocalCloud):
    # Given a JSONata state whose expression does not parse (no recording shows AWS refusing one at
    # creation, so the engine does not)
    definition = {"QueryLanguage": "JSONata", **_pass(Output="{% $$$( %}")}
    arn = local_cloud.sfn.create_state_machine(
        name="jsonata", definition=json.dumps(definition), roleArn=ROLE
    )

    # When it runs
    result = local_cloud.run(arn["stateMachineArn"], {})

    # Then it fails States.QueryEvaluationError with JSONata's words, never a Python exception's name
    # (moto: States.Runtime, "IllegalJSONataVariableReference()")
    assert result.error == "States.QueryEvaluationError"
    assert result.cause.endswith(
        "The JSONata expression '$$$(' threw an error during evaluation: Expected ) before end of expression"
    )


@pytest.mark.parametrize("name", ["bad name/with*chars", "tab\tname", "brace{name}", "dollar$name"])
def test_an_execution_name_aws_refuses_is_invalid_name(local_cloud: LocalCloud, name: str):
    # Given a state machine
    arn = local_cloud.sfn.create_state_machine(name="names", definition=json.dumps(_pass()), roleArn=ROLE)[
        "stateMachineArn"
    ]
    # When an execution is started under a name with a character AWS forbids, Then it is refused as
    # AWS refuses it (recorded for activities' names: InvalidName), and nothing runs
    with pytest.raises(local_cloud.sfn.exceptions.InvalidName) as refused:
        local_cloud.sfn.start_execution(stateMachineArn=arn, name=name)
    assert refused.value.response["Error"]["Message"] == f"Invalid Name: '{name}'"
    assert local_cloud.sfn.list_executions(stateMachineArn=arn)["executions"] == []


@pytest.mark.parametrize(
    ("execution_input", "words"),
    [
        # Recorded (test_sfn_api::test_invalid_start_execution_input): Jackson's words, quoted
        (
            "not some json",
            "Unrecognized token 'not': was expecting (JSON String, Number, Array, Object or token 'null', "
            "'true' or 'false')",
        ),
        (
            "{'not': 'json'",
            "Unexpected character (''' (code 39)): was expecting double-quote to start field name",
        ),
        ("", "Invalid execution input."),
        # Jackson's own words where no recording has them (it refuses NaN, which Python's json reads)
        (
            '{"a" 1}',
            "Unexpected character ('1' (code 49)): was expecting a colon to separate field name and value",
        ),
        ("[1 2]", "Unexpected character ('2' (code 50)): was expecting comma to separate Array entries"),
        (
            '{"amount": NaN}',
            "Non-standard token 'NaN': enable `JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS` to allow",
        ),
    ],
)
def test_input_that_is_not_json_is_refused_in_aws_words(
    local_cloud: LocalCloud, execution_input: str, words: str
):
    # Given a Standard and an Express machine
    standard = machine(local_cloud, {"A": {"Type": "Pass", "End": True}}, "A")
    express = str(
        local_cloud.sfn.create_state_machine(
            name="express",
            definition=json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}}),
            roleArn=ROLE,
            type="EXPRESS",
        )["stateMachineArn"]
    )
    # When each is started with an input that is not JSON, then it is refused in AWS's words
    with pytest.raises(local_cloud.sfn.exceptions.InvalidExecutionInput) as refused:
        local_cloud.sfn.start_execution(stateMachineArn=standard, input=execution_input)
    assert refused.value.response["Error"]["Message"] == f"Invalid State Machine Execution Input: '{words}'"
    with pytest.raises(local_cloud.sfn.exceptions.InvalidExecutionInput) as refused:
        local_cloud.sfn.start_sync_execution(stateMachineArn=express, input=execution_input)
    assert refused.value.response["Error"]["Message"] == f"Invalid State Machine Execution Input: '{words}'"


def test_an_unknown_machine_is_named_before_its_input_is_read(local_cloud: LocalCloud):
    unknown = "arn:aws:states:us-east-1:123456789012:stateMachine:absent"
    with pytest.raises(local_cloud.sfn.exceptions.StateMachineDoesNotExist):
        local_cloud.sfn.start_execution(stateMachineArn=unknown, input="not json")


def test_the_input_keeps_the_text_it_was_sent_as_until_a_state_changes_it(local_cloud: LocalCloud):
    # Recorded 2024 (scenarios::test_parallel_state_nested, test_map_state_config_inline_parameters):
    # an input sent with spaces enters a Parallel, its branches' Pass states and a Map with that text,
    # a Parallel's output splices its branches' texts, and an object a state builds around the input
    # is written compact (docs/aws-fidelity.md, L12).
    # Given a Parallel whose first branch passes its input on and whose second writes a result, then
    # a Map that builds each item around the whole input
    each = {
        "Type": "Map",
        "ItemsPath": "$[0]",
        "ItemSelector": {"item.$": "$$.Map.Item.Value", "whole.$": "$"},
        "ItemProcessor": {"StartAt": "Item", "States": {"Item": {"Type": "Pass", "End": True}}},
        "End": True,
    }
    arn = machine(
        local_cloud,
        {
            "Both": {
                "Type": "Parallel",
                "Next": "Each",
                "Branches": [
                    {"StartAt": "Same", "States": {"Same": {"Type": "Pass", "End": True}}},
                    {"StartAt": "New", "States": {"New": {"Type": "Pass", "Result": [1, 2], "End": True}}},
                ],
            },
            "Each": each,
        },
        "Both",
    )

    # When it runs on an input sent with spaces
    started = local_cloud.sfn.start_execution(stateMachineArn=arn, input="[[1, 2], [3,  4]]")
    local_cloud.wait(started["executionArn"])
    events = local_cloud.sfn.get_execution_history(executionArn=started["executionArn"])["events"]
    texts = {
        (event["type"], details.get("name")): details.get("input", details.get("output"))
        for event in events
        for key, details in event.items()
        if key in ("stateEnteredEventDetails", "stateExitedEventDetails")
    }

    # Then every state that has the input unchanged writes it as sent
    assert texts[("ParallelStateEntered", "Both")] == "[[1, 2], [3,  4]]"
    assert texts[("PassStateEntered", "Same")] == texts[("PassStateExited", "Same")] == "[[1, 2], [3,  4]]"
    # And a value a state wrote is compact; the Parallel splices its branches' texts
    assert texts[("PassStateExited", "New")] == "[1,2]"
    spliced = "[[[1, 2], [3,  4]],[1,2]]"
    assert texts[("ParallelStateExited", "Both")] == texts[("MapStateEntered", "Each")] == spliced
    # And an object built around the input is written again, compact
    whole = "[[[1,2],[3,4]],[1,2]]"
    output = f'[{{"item":[1,2],"whole":{whole}}},{{"item":[3,4],"whole":{whole}}}]'
    assert texts[("MapStateExited", "Each")] == output
    assert events[-1]["executionSucceededEventDetails"]["output"] == output
    described = local_cloud.sfn.describe_execution(executionArn=started["executionArn"])
    assert (described["input"], described["output"]) == ("[[1, 2], [3,  4]]", output)


def test_a_distributed_map_is_entered_with_the_input_written_again_compactly(local_cloud: LocalCloud):
    # Recorded 20-07-2024 (scenarios::test_map_state_label): an input sent as '["Hello", "World"]'
    # enters a Distributed Map as '["Hello","World"]' (docs/aws-fidelity.md, L12).
    processor = {
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
        "StartAt": "Item",
        "States": {"Item": {"Type": "Pass", "End": True}},
    }
    arn = machine(local_cloud, {"Each": {"Type": "Map", "ItemProcessor": processor, "End": True}}, "Each")
    started = local_cloud.sfn.start_execution(stateMachineArn=arn, input='["Hello", "World"]')
    local_cloud.wait(started["executionArn"])
    events = local_cloud.sfn.get_execution_history(executionArn=started["executionArn"])["events"]
    assert events[0]["executionStartedEventDetails"]["input"] == '["Hello", "World"]'
    assert events[1]["stateEnteredEventDetails"]["input"] == '["Hello","World"]'


def test_describe_and_update_answer_logging_and_revision_as_recorded(local_cloud: LocalCloud):
    # Given a machine created without a logging configuration
    arn = machine(local_cloud, {"A": {"Type": "Pass", "End": True}}, "A")
    created = local_cloud.sfn.describe_state_machine(stateMachineArn=arn)
    assert created["loggingConfiguration"] == {"level": "OFF", "includeExecutionData": False}
    assert "revisionId" not in created

    # When it is updated with a new role, then with the same role again
    first = local_cloud.sfn.update_state_machine(stateMachineArn=arn, roleArn=f"{ROLE}-2")
    second = local_cloud.sfn.update_state_machine(stateMachineArn=arn, roleArn=f"{ROLE}-2")

    # Then the first update makes a revision, the unchanged one keeps it, and Describe names it
    assert first["revisionId"] == second["revisionId"]
    assert local_cloud.sfn.describe_state_machine(stateMachineArn=arn)["revisionId"] == first["revisionId"]
    # And an update of nothing is refused with AWS's code and message
    with pytest.raises(ClientError) as refused:
        local_cloud.sfn.update_state_machine(stateMachineArn=arn)
    assert refused.value.response["Error"] == {
        "Code": "MissingRequiredParameter",
        "Message": "Either the definition, the role ARN, the LoggingConfiguration, or the TracingConfiguration must be specified",
    }


def test_describe_execution_and_its_machine_answer_the_recorded_members(local_cloud: LocalCloud):
    arn = machine(local_cloud, {"A": {"Type": "Pass", "End": True}}, "A")
    result = local_cloud.run(arn, {"n": 1})
    assert local_cloud.sfn.describe_execution(executionArn=result.arn)["inputDetails"] == {"included": True}
    assert "updateDate" in local_cloud.sfn.describe_state_machine_for_execution(executionArn=result.arn)


def test_stop_execution_answers_its_date_and_records_the_given_error_and_cause(local_cloud: LocalCloud):
    # Given two executions waiting
    arn = machine(local_cloud, {"Wait": {"Type": "Wait", "Seconds": 600, "End": True}}, "Wait")
    plain, explained = (local_cloud.start_execution(arn, {}) for _ in range(2))
    local_cloud.wait_until(
        lambda: "Wait" in local_cloud.states_so_far(plain) + local_cloud.states_so_far(explained)
    )

    # When one is stopped plainly and one with an error and a cause
    stopped = local_cloud.sfn.stop_execution(executionArn=plain)
    local_cloud.sfn.stop_execution(executionArn=explained, error="Operator", cause="cancelled by hand")
    results = local_cloud.wait_all([plain, explained])

    # Then StopExecution answers its date, and each ExecutionAborted event says only what was given
    assert stopped["stopDate"] is not None
    aborted = [result.history[-1] for result in results]
    assert [event["type"] for event in aborted] == ["ExecutionAborted", "ExecutionAborted"]
    assert aborted[0]["executionAbortedEventDetails"] == {}
    assert aborted[1]["executionAbortedEventDetails"] == {"error": "Operator", "cause": "cancelled by hand"}


def test_history_pages_and_reverses_as_asked(local_cloud: LocalCloud):
    arn = machine(local_cloud, {"A": {"Type": "Pass", "Next": "B"}, "B": {"Type": "Pass", "End": True}}, "A")
    result = local_cloud.run(arn, {"n": 1})
    everything = local_cloud.sfn.get_execution_history(executionArn=result.arn)["events"]

    newest = local_cloud.sfn.get_execution_history(executionArn=result.arn, reverseOrder=True, maxResults=1)
    assert newest["events"][0]["type"] == "ExecutionSucceeded"
    assert json.loads(newest["events"][0]["executionSucceededEventDetails"]["output"]) == {"n": 1}
    pages = local_cloud.sfn.get_paginator("get_execution_history").paginate(
        executionArn=result.arn, PaginationConfig={"PageSize": 2}
    )
    assert [event["id"] for page in pages for event in page["events"]] == [
        event["id"] for event in everything
    ]
    with pytest.raises(ClientError) as forged:
        local_cloud.sfn.get_execution_history(executionArn=result.arn, nextToken="not-a-token")
    assert forged.value.response["Error"] == {
        "Code": "InvalidToken",
        "Message": "Invalid Token: 'Invalid token'",
    }


def test_state_machines_are_listed_by_name_and_out_of_range_requests_refused(local_cloud: LocalCloud):
    for name in ("sm_1", "sm_10", "sm_0", "sm_2"):
        local_cloud.sfn.create_state_machine(
            name=name,
            roleArn=ROLE,
            definition=json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}}),
        )
    pages = local_cloud.sfn.get_paginator("list_state_machines").paginate(PaginationConfig={"PageSize": 3})
    assert [sm["name"] for page in pages for sm in page["stateMachines"]] == ["sm_0", "sm_1", "sm_10", "sm_2"]

    with pytest.raises(ClientError) as too_many:
        local_cloud.sfn.list_state_machines(maxResults=1001)
    assert too_many.value.response["Error"] == {
        "Code": "ValidationException",
        "Message": "1 validation error detected: Value '1001' at 'maxResults' failed to satisfy constraint: "
        "Member must have value less than or equal to 1000",
    }
    with pytest.raises(ClientError) as unknown_status:
        local_cloud.sfn.list_executions(
            stateMachineArn=machine(local_cloud, {"A": {"Type": "Pass", "End": True}}, "A"),
            statusFilter="succeeded",
        )
    assert unknown_status.value.response["Error"] == {
        "Code": "ValidationException",
        "Message": "1 validation error detected: Value 'succeeded' at 'statusFilter' failed to satisfy "
        "constraint: Member must satisfy enum value set: [SUCCEEDED, TIMED_OUT, PENDING_REDRIVE, ABORTED, "
        "FAILED, RUNNING]",
    }


# -- aws-sdk integrations (fixes 23 to 25) ----------------------------------------------------------


def test_aws_sdk_errors_spell_the_service_as_aws_does(local_cloud: LocalCloud):
    # Recorded: S3.NoSuchKeyException (with its extended request id) and Sfn.InvalidTokenException;
    # since November 2025 the Cause ends with the SDK's attempt count (fix 77)
    local_cloud.client("s3").create_bucket(Bucket="orders-bucket")
    catch_all = [{"ErrorEquals": ["S3.NoSuchKeyException"], "Next": "Token"}]
    states = {
        "Get": task(
            "arn:aws:states:::aws-sdk:s3:getObject",
            {"Bucket": "orders-bucket", "Key": "absent"},
            Catch=catch_all,
            End=True,
        ),
        "Token": task(
            "arn:aws:states:::aws-sdk:sfn:sendTaskSuccess", {"TaskToken": "forged", "Output": "{}"}, End=True
        ),
    }
    result = local_cloud.run(machine(local_cloud, states, "Get"), {})

    assert result.states == ["Get", "Token"]
    failed = [e["taskFailedEventDetails"] for e in result.history if e["type"] == "TaskFailed"]
    assert failed[0]["error"] == "S3.NoSuchKeyException"
    assert re.fullmatch(
        r"The specified key does not exist\. \(Service: S3, Status Code: 404, Request ID: \S+, "
        r"Extended Request ID: \S+\) \(SDK Attempt Count: 1\)",
        failed[0]["cause"],
    )
    assert (result.error, failed[1]["resourceType"]) == ("Sfn.InvalidTokenException", "aws-sdk:sfn")


@pytest.mark.parametrize(
    ("body", "stored"),
    [
        ({"Dict": "Value"}, b'{"Dict":"Value"}'),
        (["List", "Data"], b'["List","Data"]'),
        (False, b"false"),
        (0, b"0"),
        ("text data", b'"text data"'),
    ],
)
def test_aws_sdk_s3_stores_a_json_body_as_its_text_and_reads_it_back_as_text(
    local_cloud: LocalCloud, body: Any, stored: bytes
):
    # Recorded (services/test_aws_sdk_task_service::test_s3_put_object, ::test_s3_get_object)
    s3 = local_cloud.client("s3")
    s3.create_bucket(Bucket="orders-bucket")
    object_key = {"Bucket": "orders-bucket", "Key": "order.json"}
    states = {
        "Put": task(
            "arn:aws:states:::aws-sdk:s3:putObject",
            {**object_key, "Body.$": "$.body"},
            ResultPath=None,
            Next="Get",
        ),
        "Get": task("arn:aws:states:::aws-sdk:s3:getObject", object_key, End=True),
    }
    result = local_cloud.run(machine(local_cloud, states, "Put"), {"body": body})

    assert result.status == "SUCCEEDED"
    assert s3.get_object(**object_key)["Body"].read() == stored
    assert result.output["Body"] == stored.decode()
    assert result.output["ServerSideEncryption"] == "AES256"
    assert "ChecksumCRC32" not in result.output


def test_s3_objects_are_encrypted_by_default_and_a_single_part_checksum_is_full_object(
    local_cloud: LocalCloud,
):
    # Recorded (services/test_aws_sdk_task_service::test_s3_put_object): a Task's PutObject sends a
    # CRC32 and its answer says FULL_OBJECT; the test's own GetObject says so too
    s3 = local_cloud.client("s3")
    s3.create_bucket(Bucket="receipts")
    object_key = {"Bucket": "receipts", "Key": "by-task.txt"}
    states = {"Put": task("arn:aws:states:::aws-sdk:s3:putObject", {**object_key, "Body": "paid"}, End=True)}
    by_task = local_cloud.run(machine(local_cloud, states, "Put"), {}).output

    put = s3.put_object(Bucket="receipts", Key="r.txt", Body=b"paid", ChecksumAlgorithm="CRC32")
    got = s3.get_object(Bucket="receipts", Key="r.txt", ChecksumMode="ENABLED")
    unsummed = s3.put_object(Bucket="receipts", Key="plain.txt", Body=b"x")

    assert (put["ServerSideEncryption"], put["ChecksumType"]) == ("AES256", "FULL_OBJECT")
    assert (got["ServerSideEncryption"], got["ChecksumType"]) == ("AES256", "FULL_OBJECT")
    assert got["ChecksumCRC32"] == put["ChecksumCRC32"]
    assert unsummed["ServerSideEncryption"] == "AES256"
    assert (by_task["ChecksumType"], by_task["ServerSideEncryption"]) == ("FULL_OBJECT", "AES256")
    assert by_task["ChecksumCRC32"] == s3.head_object(**object_key, ChecksumMode="ENABLED")["ChecksumCRC32"]


def test_a_fifo_topic_wants_a_group_and_numbers_its_messages(local_cloud: LocalCloud):
    # Recorded (services/test_sns_task_service::test_fifo_message_attribute): without a group the
    # Task fails with SNS.InvalidParameterException and AWS's words; with one it answers a SequenceNumber
    sns = local_cloud.client("sns")
    topic = sns.create_topic(
        Name="orders.fifo", Attributes={"FifoTopic": "true", "ContentBasedDeduplication": "true"}
    )["TopicArn"]
    states = {
        "Publish": task("arn:aws:states:::sns:publish", {"TopicArn": topic, "Message.$": "$.m"}, End=True)
    }
    grouped = {
        "Publish": task(
            "arn:aws:states:::sns:publish",
            {"TopicArn": topic, "Message.$": "$.m", "MessageGroupId": "g"},
            End=True,
        )
    }

    refused = local_cloud.run(machine(local_cloud, states, "Publish"), {"m": "hello"})
    first = local_cloud.run(machine(local_cloud, grouped, "Publish"), {"m": "one"})
    second = sns.publish(TopicArn=topic, Message="two", MessageGroupId="g")

    assert refused.error == "SNS.InvalidParameterException"
    assert refused.cause is not None
    assert refused.cause.startswith(
        "Invalid parameter: The MessageGroupId parameter is required for FIFO topics (Service: AmazonSNS;"
    )
    assert first.status == "SUCCEEDED"
    assert len(first.output["SequenceNumber"]) >= 20
    assert int(second["SequenceNumber"]) > int(first.output["SequenceNumber"])


def test_a_secret_name_with_a_space_is_refused_as_aws_refuses_it(local_cloud: LocalCloud):
    # Recorded (error_handling/test_aws_sdk::test_invalid_secret_name): the Task fails, and its
    # Catch sees the service's generic exception with AWS's words
    create = task(
        "arn:aws:states:::aws-sdk:secretsmanager:createSecret",
        {"Name.$": "$.name", "SecretString": "s3cr3t"},
        End=True,
    )
    arn = machine(local_cloud, {"Create": create}, "Create")

    refused = local_cloud.run(arn, {"name": "Invalid Name"})
    created = local_cloud.run(arn, {"name": "valid/Name_1+=.@!-"})

    assert refused.error == "SecretsManager.SecretsManagerException"
    assert refused.cause is not None
    assert refused.cause.startswith(
        "Invalid name. Must be a valid name containing alphanumeric characters, or any of the "
        "following: -/_+=.@! (Service: SecretsManager, Status Code: 400, Request ID: "
    )
    assert created.status == "SUCCEEDED"


def test_aws_sdk_start_execution_speaks_the_sdks_capitalized_members(local_cloud: LocalCloud):
    target = machine(local_cloud, {"A": {"Type": "Pass", "End": True}}, "A")
    states = {
        "Start": task(
            "arn:aws:states:::aws-sdk:sfn:startExecution",
            {"StateMachineArn": target, "Input": {"a": 1}},
            End=True,
        )
    }
    result = local_cloud.run(machine(local_cloud, states, "Start"), {})
    assert result.status == "SUCCEEDED"
    assert sorted(result.output) == ["ExecutionArn", "StartDate"]
    assert local_cloud.wait(result.output["ExecutionArn"]).output == {"a": 1}


def test_dynamodb_results_carry_no_capacity_unless_asked(local_cloud: LocalCloud):
    local_cloud.create_table("orders")
    item = {"TableName": "orders", "Item": {"id": {"S": "o-1"}}}
    states = {
        "Plain": task("arn:aws:states:::dynamodb:putItem", item, ResultPath="$.plain", Next="Sdk"),
        "Sdk": task("arn:aws:states:::aws-sdk:dynamodb:putItem", item, ResultPath="$.sdk", Next="Asked"),
        "Asked": task(
            "arn:aws:states:::dynamodb:putItem",
            {**item, "ReturnConsumedCapacity": "TOTAL"},
            ResultPath="$.asked",
            End=True,
        ),
    }
    result = local_cloud.run(machine(local_cloud, states, "Plain"), {})
    # (the optimized integration's answer carries the SDK's metadata besides, fix 70; aws-sdk's not)
    plain_answer = {
        name: value for name, value in result.output["plain"].items() if not name.startswith("Sdk")
    }
    assert (plain_answer, result.output["sdk"]) == ({}, {})
    assert result.output["asked"]["ConsumedCapacity"]["TableName"] == "orders"


# -- Definitions and the context object (fixes 26, 27, 15) -----------------------------------------


def test_strings_in_a_definition_are_json_strings(local_cloud: LocalCloud):
    # Recorded (scenarios ESCAPE_SEQUENCES_JSONATA_COMPARISON_ASSIGN, assign BASE_REFERENCE_IN_INTRINSIC_FUNCTION)
    jsonata = machine(
        local_cloud,
        {
            "Pass": {"Type": "Pass", "Assign": {"quote": '"'}, "Next": "Check"},
            "Check": {"Type": "Pass", "Output": "{% $quote = '\"' %}", "End": True},
        },
        "Pass",
        QueryLanguage="JSONata",
    )
    jsonpath = machine(
        local_cloud,
        {
            "Pass": {"Type": "Pass", "Assign": {"text": '{"key":"value"}'}, "Next": "Parse"},
            "Parse": {"Type": "Pass", "Parameters": {"parsed.$": "States.StringToJson($text)"}, "End": True},
        },
        "Pass",
    )
    assert local_cloud.run(jsonata, {}).output is True
    assert local_cloud.run(jsonpath, {}).output == {"parsed": {"key": "value"}}


def test_context_timestamps_are_written_as_aws_writes_them(local_cloud: LocalCloud):
    # Recorded (base/test_base::test_execution_dateformat): "2023-11-21T06:27:31.545Z", the API's startDate
    states = {
        "Pass": {
            "Type": "Pass",
            "Parameters": {"started.$": "$$.Execution.StartTime", "entered.$": "$$.State.EnteredTime"},
            "End": True,
        }
    }
    result = local_cloud.run(machine(local_cloud, states, "Pass"), {})
    assert AWS_TIMESTAMP.match(result.output["started"])
    assert AWS_TIMESTAMP.match(result.output["entered"])
    start_date = local_cloud.sfn.describe_execution(executionArn=result.arn)["startDate"]
    assert result.output["started"] == aws_timestamp(start_date)


def test_range_of_one_item_is_that_item(local_cloud: LocalCloud):
    # Recorded (intrinsic_functions/test_array_jsonata::test_array_range): $range(1, 1, 1) is 1
    states = {
        "Pass": {
            "Type": "Pass",
            "Output": "{% {'one': $range(1, 1, 1), 'three': $range(1, 3, 1)} %}",
            "End": True,
        }
    }
    result = local_cloud.run(machine(local_cloud, states, "Pass", QueryLanguage="JSONata"), {})
    assert result.output == {"one": 1, "three": [1, 2, 3]}


def test_a_lone_dollar_is_jsonatas_context_value(local_cloud: LocalCloud):
    # Recorded (test_state/test_state_configuration, MAP_TASK_STATE): an Output filtering with
    # [$ = 1] and mapping with function($v) evaluates; the engine refused any lone $ before
    states = {
        "Pass": {
            "Type": "Pass",
            "Output": {
                "ones": "{% $count($states.input.values[$ = 1]) %}",
                "labels": "{% $map($states.input.values, function($v) { $v = 1 ? 'pass' : 'failed' }) %}",
            },
            "End": True,
        }
    }
    arn = machine(local_cloud, states, "Pass", QueryLanguage="JSONata")
    result = local_cloud.run(arn, {"values": [1, 0, 1]})
    assert result.output == {"ones": 2, "labels": ["pass", "failed", "pass"]}


# -- Definitions: CreateStateMachine and ValidateStateMachineDefinition agree (fix 28) --------------

SQS_WAIT_FOR_TOKEN = {
    "Type": "Task",
    "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
    "Parameters": {
        "QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/q",
        "MessageBody.$": "$$.Task.Token",
    },
    "End": True,
}
REFUSED = [
    # (type, definition, code, message, location): the recorded answers where recordings exist
    (
        "STANDARD",
        {"States": {"A": {"Type": "Pass", "End": True}}},
        "SCHEMA_VALIDATION_FAILED",
        "These fields are required: [StartAt]",
        "/",
    ),
    (
        "STANDARD",
        {
            "QueryLanguage": "JSONata",
            "StartAt": "Pass",
            "States": {"Pass": {"Type": "Pass", "QueryLanguage": "JSONPath", "End": True}},
        },
        "SCHEMA_VALIDATION_FAILED",
        "'QueryLanguage' can not be 'JSONPath' if set to 'JSONata' for whole state machine",
        "/States/Pass",
    ),
    (
        "EXPRESS",
        {"StartAt": "Send", "States": {"Send": SQS_WAIT_FOR_TOKEN}},
        "SCHEMA_VALIDATION_FAILED",
        "Express state machine does not support '.waitForTaskToken' service integration ",
        "/States/Send/Resource",
    ),
    (
        "EXPRESS",
        {
            "StartAt": "Child",
            "States": {
                "Child": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::states:startExecution.sync",
                    "Parameters": {"StateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:c"},
                    "End": True,
                }
            },
        },
        "SCHEMA_VALIDATION_FAILED",
        "Express state machine does not support '.sync' service integration",
        "/States/Child/Resource",
    ),
    (
        "STANDARD",
        {"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "Nowhere"}}},
        "MISSING_TRANSITION_TARGET",
        "Missing 'Next' target: Nowhere",
        "/States/A/Next",
    ),
]


@pytest.mark.parametrize(("machine_type", "definition", "code", "message", "location"), REFUSED)
def test_a_definition_is_refused_alike_by_create_and_validate(
    local_cloud: LocalCloud,
    machine_type: str,
    definition: dict[str, Any],
    code: str,
    message: str,
    location: str,
):
    text = json.dumps(definition)
    # When the definition is validated, then created
    answer = local_cloud.sfn.validate_state_machine_definition(definition=text, type=machine_type)
    with pytest.raises(local_cloud.sfn.exceptions.InvalidDefinition) as refused:
        local_cloud.sfn.create_state_machine(name="refused", definition=text, roleArn=ROLE, type=machine_type)

    # Then both say the same thing, in AWS's words
    assert (answer["result"], answer["truncated"]) == ("FAIL", False)
    assert answer["diagnostics"] == [
        {"severity": "ERROR", "code": code, "message": message, "location": location}
    ]
    assert (
        refused.value.response["Error"]["Message"]
        == f"Invalid State Machine Definition: '{code}: {message} at {location}'"
    )


@pytest.mark.parametrize(
    ("label", "problem"),
    [("", "'Label cannot be empty'"), ("pay#1", "\"Label contains invalid character: '#'\"")],
)
def test_what_the_parser_refuses_is_refused_in_the_parsers_words(
    local_cloud: LocalCloud, label: str, problem: str
):
    # Given a Distributed Map whose Label the parser refuses (empty, or a character labels cannot have)
    processor = {
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
        "StartAt": "Each",
        "States": {"Each": {"Type": "Pass", "End": True}},
    }
    text = json.dumps(
        {
            "StartAt": "Pay",
            "States": {"Pay": {"Type": "Map", "ItemProcessor": processor, "Label": label, "End": True}},
        }
    )
    # When it is created, then the refusal is the parser's own sentence, the definition quoted (recorded)
    with pytest.raises(local_cloud.sfn.exceptions.InvalidDefinition) as refused:
        local_cloud.sfn.create_state_machine(name="labelled", definition=text, roleArn=ROLE)
    assert (
        refused.value.response["Error"]["Message"]
        == f"Error=ValueError Args=[{problem}] in definition '{text}'."
    )
    # And ValidateStateMachineDefinition reports the same finding as a schema diagnostic
    (diagnostic,) = local_cloud.sfn.validate_state_machine_definition(definition=text)["diagnostics"]
    assert diagnostic["code"] == "SCHEMA_VALIDATION_FAILED"


def test_a_valid_definition_validates_and_the_answer_honours_max_results(local_cloud: LocalCloud):
    valid = json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}})
    answer = local_cloud.sfn.validate_state_machine_definition(definition=valid)
    assert (answer["result"], answer["diagnostics"], answer["truncated"]) == ("OK", [], False)
    # A definition with three missing targets, asked for one diagnostic
    broken = json.dumps(
        {
            "StartAt": "A",
            "States": {
                "A": {
                    "Type": "Choice",
                    "Choices": [{"Variable": "$.x", "IsPresent": True, "Next": "X"}],
                    "Default": "Y",
                },
                "B": {"Type": "Pass", "Next": "Z"},
            },
        }
    )
    answer = local_cloud.sfn.validate_state_machine_definition(definition=broken, maxResults=1)
    assert (answer["result"], len(answer["diagnostics"]), answer["truncated"]) == ("FAIL", 1, True)
    # And the same definitions are refused inside a Parallel branch, where they stand
    in_branch = {
        "StartAt": "P",
        "States": {
            "P": {
                "Type": "Parallel",
                "Branches": [{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "Gone"}}}],
                "End": True,
            }
        },
    }
    (diagnostic,) = local_cloud.sfn.validate_state_machine_definition(definition=json.dumps(in_branch))[
        "diagnostics"
    ]
    assert diagnostic["location"] == "/States/P/Branches[0]/States/A/Next"


# -- answers the harness compares strictly (issue 39) -----------------------------------------------
@pytest.mark.parametrize(
    ("operation", "member"),
    [
        ("describe_state_machine", "stateMachineArn"),
        ("list_executions", "stateMachineArn"),
        ("describe_execution", "executionArn"),
        ("get_execution_history", "executionArn"),
    ],
)
def test_an_arn_that_is_not_one_is_an_invalid_prefix(local_cloud: LocalCloud, operation: str, member: str):
    # Recorded: "Invalid Arn: 'Invalid ARN prefix: not_a_valid_arn'" (fix 75)
    with pytest.raises(ClientError) as refused:
        getattr(local_cloud.sfn, operation)(**{member: "not_a_valid_arn"})
    error = refused.value.response["Error"]
    assert (error["Code"], error["Message"]) == (
        "InvalidArn",
        "Invalid Arn: 'Invalid ARN prefix: not_a_valid_arn'",
    )


@pytest.mark.parametrize("operation", ["describe_map_run", "update_map_run"])
def test_an_unknown_map_run_is_resource_not_found_naming_it(local_cloud: LocalCloud, operation: str):
    # Fix 72: moto failed to build its error (HTTP 500); AWS names the resource
    arn = "arn:aws:states:us-east-1:123456789012:mapRun:machine/map:0b6e3b04-7f3a-4d32-a0c5-9d8e7b0e0a11"
    extra = {"maxConcurrency": 2} if operation == "update_map_run" else {}
    with pytest.raises(ClientError) as refused:
        getattr(local_cloud.sfn, operation)(mapRunArn=arn, **extra)
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    error = refused.value.response["Error"]
    assert (error["Code"], error["Message"]) == ("ResourceNotFound", f"Resource not found: '{arn}'")


def test_a_synchronous_express_execution_is_billed_and_its_context_has_no_run(local_cloud: LocalCloud):
    # Given an Express machine whose output is its context's Execution
    definition = json.dumps(
        {
            "StartAt": "Context",
            "States": {
                "Context": {"Type": "Pass", "Parameters": {"execution.$": "$$.Execution"}, "End": True}
            },
        }
    )
    arn = local_cloud.sfn.create_state_machine(
        name="sync", definition=definition, roleArn=ROLE, type="EXPRESS"
    )["stateMachineArn"]

    # When it is run synchronously
    sync = local_cloud.client("stepfunctions", inject_host_prefix=False).start_sync_execution(
        stateMachineArn=arn
    )

    # Then it is billed by 100 ms and 64 MB, and its context has no RedriveCount (recorded:
    # StartSyncExecution's has none, where an Express StartExecution's has 0)
    assert sync["billingDetails"]["billedMemoryUsedInMB"] == 64
    assert sync["billingDetails"]["billedDurationInMilliseconds"] % 100 == 0
    assert sync["billingDetails"]["billedDurationInMilliseconds"] >= 100
    assert "RedriveCount" not in json.loads(sync["output"])["execution"]


@pytest.mark.parametrize(
    "timestamp",
    [
        "2016-12-05 21:29:29Z",
        "2016-12-05T21:29:29",
        "2016-13-05T21:29:29Z",
        "2016-12-05T25:29:29Z",
        "2016-12-05t21:29:29z",
        "{% 'date' %}",  # in a JSONPath state, a string like any other
    ],
)
def test_a_wait_timestamp_that_is_not_rfc_3339_is_refused_as_aws_words_it(
    local_cloud: LocalCloud, timestamp: str
):
    definition = json.dumps(
        {"StartAt": "Until", "States": {"Until": {"Type": "Wait", "Timestamp": timestamp, "End": True}}}
    )
    with pytest.raises(ClientError) as refused:
        local_cloud.sfn.create_state_machine(name="wait", definition=definition, roleArn=ROLE)
    assert refused.value.response["Error"]["Message"] == (
        "Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: String does not match RFC3339 "
        "timestamp at /States/Until/Timestamp'"
    )
    # and the same timestamp, well formed, is accepted
    good = json.dumps(
        {
            "StartAt": "Until",
            "States": {"Until": {"Type": "Wait", "Timestamp": "2016-12-05T21:29:29Z", "End": True}},
        }
    )
    assert local_cloud.sfn.create_state_machine(name="wait", definition=good, roleArn=ROLE)["stateMachineArn"]


def test_a_resource_nobody_integrates_is_refused_at_its_state(local_cloud: LocalCloud):
    states = {
        "Outer": {
            "Type": "Parallel",
            "Branches": [
                {
                    "StartAt": "Query",
                    "States": {"Query": task("arn:aws:states:::dynamodb:query", {}, End=True)},
                }
            ],
            "End": True,
        }
    }
    definition = json.dumps({"StartAt": "Outer", "States": states})
    with pytest.raises(ClientError) as refused:
        local_cloud.sfn.create_state_machine(name="query", definition=definition, roleArn=ROLE)
    assert refused.value.response["Error"]["Message"] == (
        "Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: The resource provided "
        "arn:aws:states:::dynamodb:query is not recognized. The value is not a valid resource ARN, or the "
        "resource is not available in this region. at /States/Outer/Branches[0]/States/Query/Resource'"
    )


# -- an optimized integration's refusal, named as the SDK for Java names it (fix 102) -------------
def test_a_catch_on_the_dynamodb_generic_exception_fires_for_a_validation_error(local_cloud: LocalCloud):
    # Recorded (error_handling/test_task_service_dynamodb): a ValidationException is
    # DynamoDB.AmazonDynamoDBException, its code in the cause; a user's Catch on that name fires
    local_cloud.dynamodb.create_table(
        TableName="orders",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    states = {
        "Put": task(
            "arn:aws:states:::dynamodb:putItem",
            {"TableName": "orders", "Item": {"orderId": {"S.$": "$.id"}}},
            Catch=[
                {
                    "ErrorEquals": ["DynamoDB.AmazonDynamoDBException"],
                    "ResultPath": "$.error",
                    "Next": "Invalid",
                }
            ],
            End=True,
        ),
        "Invalid": {"Type": "Pass", "OutputPath": "$.error", "End": True},
    }
    result = local_cloud.run(machine(local_cloud, states, "Put"), {"id": "o-1"})
    assert result.status == "SUCCEEDED"
    assert result.output["Error"] == "DynamoDB.AmazonDynamoDBException"
    assert result.output["Cause"].startswith(
        "One or more parameter values were invalid: Missing the key id in the item (Service: AmazonDynamoDBv2; "
        "Status Code: 400; Error Code: ValidationException; Request ID: "
    )
    assert result.output["Cause"].endswith("; Proxy: null)")


def test_sqs_refusals_are_named_as_the_sdk_names_them(local_cloud: LocalCloud):
    # Recorded (error_handling/test_task_service_sqs::test_send_message_empty_body): no body is
    # SQS.AmazonSQSException, "The request must contain the parameter MessageBody." (MissingParameter;
    # moto failed on the missing body with Python's words, fix 103); a queue that does not exist is
    # the modelled QueueDoesNotExistException, its query-protocol code in the cause
    queue = local_cloud.client("sqs").create_queue(QueueName="orders")["QueueUrl"]
    send = {
        "Send": task(
            "arn:aws:states:::sqs:sendMessage", {"QueueUrl.$": "$.queue", "MessageBody.$": "$.body"}, End=True
        )
    }
    no_body = local_cloud.run(machine(local_cloud, send, "Send"), {"queue": queue, "body": None})
    no_queue = local_cloud.run(machine(local_cloud, send, "Send"), {"queue": queue + "-gone", "body": "x"})
    assert no_body.error == "SQS.AmazonSQSException"
    assert no_body.cause.startswith(
        "The request must contain the parameter MessageBody. (Service: AmazonSQS; Status Code: 400; "
        "Error Code: MissingParameter; Request ID: "
    )
    assert no_queue.error == "SQS.QueueDoesNotExistException"
    assert "Error Code: AWS.SimpleQueueService.NonExistentQueue;" in no_queue.cause


def test_a_publish_succeeds_when_a_subscribed_queue_does_not_exist(local_cloud: LocalCloud):
    # AWS: the publisher's call succeeds; only that delivery fails, on SNS's side (fix 104). moto
    # failed the Task with SNS.AWS.SimpleQueueService.NonExistentQueueException
    sns = local_cloud.client("sns")
    topic = sns.create_topic(Name="orders")["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint="arn:aws:sqs:us-east-1:123456789012:gone")
    states = {
        "Publish": task("arn:aws:states:::sns:publish", {"TopicArn": topic, "Message": "placed"}, End=True)
    }
    result = local_cloud.run(machine(local_cloud, states, "Publish"), {})
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["MessageId"]


def test_an_execution_past_its_machine_s_timeout_says_when_it_stopped(local_cloud: LocalCloud):
    # Given a machine whose TimeoutSeconds ends its execution in the middle of a Wait
    definition = {
        "TimeoutSeconds": 1,
        "StartAt": "W",
        "States": {"W": {"Type": "Wait", "Seconds": 30, "End": True}},
    }
    arn = local_cloud.sfn.create_state_machine(
        name="timeout", definition=json.dumps(definition), roleArn=ROLE
    )

    # When it times out
    execution = local_cloud.sfn.start_execution(stateMachineArn=arn["stateMachineArn"])["executionArn"]
    assert local_cloud.wait(execution, 20).status == "TIMED_OUT"

    # Then DescribeExecution answers its stopDate, as recorded (test_timeouts::test_global_timeout;
    # moto answered one for SUCCEEDED, FAILED and ABORTED only)
    described = local_cloud.sfn.describe_execution(executionArn=execution)
    assert described["stopDate"] >= described["startDate"]
