"""Step Functions Local's mock files (issue 28): ``<stateMachineArn>#<TestCase>`` runs the workflow
with the Tasks the test case names answering from the file, every other Task for real."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from sfn_idempotency.flow.inline_workflows import order_pipeline
from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.local.capabilities.mock_files import MockConfigError, MockConfigSource
from tests.servers import read_ready_line, start_server

ROLE = "arn:aws:iam::123456789012:role/mocked"
MISSING_FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:not-deployed"
LAMBDA_RETRIED = ["Lambda.ServiceException"]


def lambda_answer(payload: Any) -> dict[str, Any]:
    return {"Return": {"StatusCode": 200, "Payload": payload}}


def invoke(name: str, **rest: Any) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": MISSING_FUNCTION, "Payload.$": "$"},
        "OutputPath": "$.Payload",
        **rest,
    }


def machine(cloud: LocalCloud, name: str, states: dict[str, Any], start_at: str, **top: Any) -> str:
    definition = json.dumps({"StartAt": start_at, "States": states, **top})
    return str(
        cloud.sfn.create_state_machine(name=name, definition=definition, roleArn=ROLE)["stateMachineArn"]
    )


def run_case(cloud: LocalCloud, arn: str, case: str, execution_input: Any = None) -> Any:
    started = cloud.sfn.start_execution(
        stateMachineArn=f"{arn}#{case}", input=json.dumps(execution_input or {})
    )
    return cloud.wait(started["executionArn"])


def config(machines: dict[str, dict[str, dict[str, Any]]], responses: dict[str, Any]) -> dict[str, Any]:
    return {
        "StateMachines": {name: {"TestCases": cases} for name, cases in machines.items()},
        "MockedResponses": responses,
    }


RETRY_CONFIG = config(
    {
        "checkout": {
            "HappyPath": {"Charge": "charged"},
            "FlakyGateway": {"Charge": "flaky"},
            "Declined": {"Charge": "declined"},
        }
    },
    {
        "charged": {"0": lambda_answer({"charged": True})},
        "flaky": {
            "0-1": {"Throw": {"Error": "Lambda.ServiceException", "Cause": "mocked outage"}},
            "2": lambda_answer({"charged": "third time"}),
        },
        "declined": {"0": {"Throw": {"Error": "CardDeclined", "Cause": "insufficient funds"}}},
    },
)
CHECKOUT = {
    "Charge": invoke(
        "Charge",
        Retry=[{"ErrorEquals": LAMBDA_RETRIED, "MaxAttempts": 3, "IntervalSeconds": 1}],
        Catch=[{"ErrorEquals": ["CardDeclined"], "ResultPath": "$.error", "Next": "Declined"}],
        Next="Done",
    ),
    "Declined": {"Type": "Fail", "Error": "Declined"},
    "Done": {"Type": "Succeed"},
}


@pytest.fixture
def mocked_cloud() -> Iterator[LocalCloud]:
    with LocalCloud(mock_config=RETRY_CONFIG, retry_wait_scale=0) as cloud:
        yield cloud


# -- selection ----------------------------------------------------------------------------------------
def test_a_test_case_answers_its_tasks_from_the_file_and_the_plain_arn_runs_for_real(
    mocked_cloud: LocalCloud,
):
    # Given a checkout whose Lambda is not deployed at all
    arn = machine(mocked_cloud, "checkout", CHECKOUT, "Charge")

    # When it runs as the test case, and then as itself
    mocked = run_case(mocked_cloud, arn, "HappyPath")
    real = mocked_cloud.wait(mocked_cloud.start_execution(arn, {}))

    # Then the mocked run answered from the file; the real one called the missing function
    assert (mocked.status, mocked.output) == ("SUCCEEDED", {"charged": True})
    assert mocked.arn.startswith("arn:aws:states:us-east-1:123456789012:execution:checkout:")
    assert real.status == "FAILED"
    assert real.error == "Lambda.ResourceNotFoundException"


def test_the_nth_run_of_a_state_takes_the_nth_response(mocked_cloud: LocalCloud):
    # When the flaky gateway fails twice ("0-1") and then answers ("2")
    result = run_case(mocked_cloud, machine(mocked_cloud, "checkout", CHECKOUT, "Charge"), "FlakyGateway")

    # Then Retry ran the state three times, as the history shows
    failures = [e["taskFailedEventDetails"] for e in result.history if e["type"] == "TaskFailed"]
    assert failures == [{"error": "Lambda.ServiceException", "cause": "mocked outage"}] * 2
    assert result.output == {"charged": "third time"}


def test_a_thrown_error_is_caught_as_the_real_one_would_be(mocked_cloud: LocalCloud):
    result = run_case(mocked_cloud, machine(mocked_cloud, "checkout", CHECKOUT, "Charge"), "Declined")
    assert (result.status, result.error) == ("FAILED", "Declined")
    assert result.states == ["Charge", "Declined"]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("checkout#NoSuchCase", "Mock test case 'NoSuchCase' for state machine 'checkout' is not in"),
        ("unlisted#HappyPath", "Mock test case 'HappyPath' for state machine 'unlisted' is not in"),
    ],
)
def test_an_unknown_test_case_or_machine_is_refused_by_name(
    mocked_cloud: LocalCloud, target: str, message: str
):
    # Given both machines exist
    arns = {name: machine(mocked_cloud, name, CHECKOUT, "Charge") for name in ("checkout", "unlisted")}
    name, case = target.split("#")

    # When the start names a test case the file does not have
    with pytest.raises(ClientError) as refused:
        mocked_cloud.sfn.start_execution(stateMachineArn=f"{arns[name]}#{case}", input="{}")

    # Then it is refused by name, not as a machine that does not exist, and nothing ran
    assert refused.value.response["Error"]["Code"] == "InvalidName"
    assert message in refused.value.response["Error"]["Message"]
    assert mocked_cloud.executions(arns[name]) == []


def test_a_test_case_without_a_mock_configuration_is_refused(local_cloud: LocalCloud):
    arn = machine(local_cloud, "checkout", CHECKOUT, "Charge")
    with pytest.raises(ClientError) as refused:
        local_cloud.sfn.start_execution(stateMachineArn=f"{arn}#HappyPath", input="{}")
    assert "no mock configuration is loaded" in refused.value.response["Error"]["Message"]


def test_running_a_state_past_its_last_response_names_the_state_and_the_test_case(mocked_cloud: LocalCloud):
    # Given a loop that charges until told to stop, with one response for two runs
    states = {
        "Charge": invoke("Charge", Next="Again"),
        "Again": {"Type": "Pass", "Next": "Charge"},
    }
    result = run_case(mocked_cloud, machine(mocked_cloud, "checkout", states, "Charge"), "HappyPath")

    # Then the second run fails the execution with a message naming both
    assert result.status == "FAILED"
    assert "'Charge' ran 2 times in mock test case 'HappyPath' of state machine 'checkout'" in (
        result.cause or ""
    )


# -- every kind of Task, inside Map and Parallel, in JSONata ------------------------------------------
def test_mocks_answer_inside_map_and_parallel_in_turn():
    # Given a Map over three orders (one at a time) beside a Parallel branch, both mocked
    states = {
        "Both": {
            "Type": "Parallel",
            "Branches": [
                {
                    "StartAt": "EachOrder",
                    "States": {
                        "EachOrder": {
                            "Type": "Map",
                            "MaxConcurrency": 1,
                            "ItemsPath": "$.orders",
                            "ItemProcessor": {
                                "StartAt": "Price",
                                "States": {"Price": invoke("Price", End=True)},
                            },
                            "End": True,
                        }
                    },
                },
                {"StartAt": "Notify", "States": {"Notify": invoke("Notify", End=True)}},
            ],
            "End": True,
        }
    }
    mocks = config(
        {"batch": {"Batch": {"Price": "prices", "Notify": "notified"}}},
        {
            "prices": {"0": lambda_answer(10), "1-2": lambda_answer(20)},
            "notified": {"0": lambda_answer("sent")},
        },
    )
    with LocalCloud(mock_config=mocks) as cloud:
        # When the batch runs as the test case
        result = run_case(
            cloud, machine(cloud, "batch", states, "Both"), "Batch", {"orders": ["a", "b", "c"]}
        )

    # Then each Map item took the next response, and the branch its own
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == [[10, 20, 20], "sent"]


def test_an_sdk_task_an_optimized_one_and_a_callback_are_mocked_in_jsonata():
    # Given a JSONata machine: an aws-sdk call, an optimized DynamoDB call, a callback over SQS
    states = {
        "ListTables": {
            "Type": "Task",
            "Resource": "arn:aws:states:::aws-sdk:dynamodb:listTables",
            "Arguments": {},
            "Output": "{% {'tables': $states.result.TableNames} %}",
            "Next": "GetItem",
        },
        "GetItem": {
            "Type": "Task",
            "Resource": "arn:aws:states:::dynamodb:getItem",
            "Arguments": {"TableName": "orders", "Key": {"id": {"S": "o-1"}}},
            "Output": "{% $merge([$states.input, {'status': $states.result.Item.status.S}]) %}",
            "Next": "AwaitApproval",
        },
        "AwaitApproval": {
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
            "Arguments": {
                "QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/none",
                "MessageBody": "{% $states.context.Task.Token %}",
            },
            "Output": "{% $merge([$states.input, {'approved': $states.result.approved}]) %}",
            "End": True,
        },
    }
    mocks = config(
        {"approvals": {"Approved": {"ListTables": "tables", "GetItem": "item", "AwaitApproval": "approved"}}},
        {
            "tables": {"0": {"Return": {"TableNames": ["orders"]}}},
            "item": {"0": {"Return": {"Item": {"status": {"S": "PLACED"}}}}},
            "approved": {"0": {"Return": {"approved": "yes"}}},
        },
    )
    with LocalCloud(mock_config=mocks) as cloud:
        arn = machine(cloud, "approvals", states, "ListTables", QueryLanguage="JSONata")

        # When it runs as the test case (no table, no queue, no one sending the token)
        result = run_case(cloud, arn, "Approved")

    # Then every Task answered from the file, the callback without waiting for a token
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {"tables": ["orders"], "status": "PLACED", "approved": "yes"}


def test_an_http_task_and_a_lambda_arn_resource_are_mocked():
    # Given an HTTP Task whose connection and endpoint do not exist, then a Lambda named by its ARN
    states = {
        "CallPartner": {
            "Type": "Task",
            "Resource": "arn:aws:states:::http:invoke",
            "Parameters": {
                "ApiEndpoint": "https://partner.invalid/orders",
                "Method": "POST",
                "Authentication": {
                    "ConnectionArn": "arn:aws:events:us-east-1:123456789012:connection/absent/0000"
                },
            },
            "ResultSelector": {"partner.$": "$.ResponseBody.accepted"},
            "Next": "Legacy",
        },
        "Legacy": {"Type": "Task", "Resource": MISSING_FUNCTION, "ResultPath": "$.legacy", "End": True},
    }
    mocks = config(
        {"partner": {"Accepted": {"CallPartner": "accepted", "Legacy": "legacy"}}},
        {
            "accepted": {
                "0": {"Return": {"StatusCode": 200, "StatusText": "OK", "ResponseBody": {"accepted": True}}}
            },
            # a Lambda ARN resource's mock is Invoke's answer too; the state's result is its Payload
            "legacy": {"0": lambda_answer({"from": "the function"})},
        },
    )
    with LocalCloud(mock_config=mocks) as cloud:
        result = run_case(cloud, machine(cloud, "partner", states, "CallPartner"), "Accepted")
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {"partner": True, "legacy": {"from": "the function"}}


def test_a_nested_sync_execution_is_mocked():
    # Given a machine that starts a child workflow, which does not exist, with .sync:2
    states = {
        "Child": {
            "Type": "Task",
            "Resource": "arn:aws:states:::states:startExecution.sync:2",
            "Parameters": {
                "StateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:absent",
                "Input.$": "$",
            },
            "OutputPath": "$.Output",
            "End": True,
        }
    }
    mocks = config(
        {"parent": {"ChildDone": {"Child": "child"}}},
        {"child": {"0": {"Return": {"Output": {"done": 1}, "Status": "SUCCEEDED"}}}},
    )
    with LocalCloud(mock_config=mocks) as cloud:
        # When it runs as the test case
        result = run_case(cloud, machine(cloud, "parent", states, "Child"), "ChildDone")

    # Then the mocked child's answer is the output
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {"done": 1}


def test_start_sync_execution_selects_a_test_case():
    mocks = config({"quote": {"Cheap": {"Price": "cheap"}}}, {"cheap": {"0": lambda_answer({"price": 1})}})
    with LocalCloud(mock_config=mocks) as cloud:
        definition = json.dumps({"StartAt": "Price", "States": {"Price": invoke("Price", End=True)}})
        arn = cloud.sfn.create_state_machine(
            name="quote", definition=definition, roleArn=ROLE, type="EXPRESS"
        )["stateMachineArn"]
        answer = cloud.client("stepfunctions", inject_host_prefix=False).start_sync_execution(
            stateMachineArn=f"{arn}#Cheap", input="{}"
        )
    assert answer["status"] == "SUCCEEDED", answer.get("cause")
    assert json.loads(answer["output"]) == {"price": 1}


# -- our own flow: the claim stays real, the business step is mocked -----------------------------------
def test_the_business_step_is_mocked_while_the_claim_is_real():
    mocks = config(
        {"idempotency": {"PaymentDown": {"Execute": "gateway_down"}, "Placed": {"Execute": "placed"}}},
        {
            "gateway_down": {"0": {"Throw": {"Error": "PaymentGatewayTimeout", "Cause": "mocked"}}},
            "placed": {"0": lambda_answer({"orderId": "o-7", "status": "PLACED"})},
        },
    )
    with LocalCloud(mock_config=mocks) as cloud:
        service = IdempotentService(cloud)
        order = {"orderId": "o-7", "amount": 5}

        # When the mocked gateway fails, then a retry of the same order runs with it answering
        failed = run_case(cloud, service.state_machine_arn, "PaymentDown", order)
        after_failure = service.record_for(order)
        placed = run_case(cloud, service.state_machine_arn, "Placed", order)
        replayed = run_case(cloud, service.state_machine_arn, "Placed", order)

        # Then the claim was released after the failure, and written COMPLETED with the mocked result
        record = service.record_for(order)
        assert (failed.status, failed.error) == ("FAILED", "PaymentGatewayTimeout")
        assert after_failure is None
        assert placed.output == {"orderId": "o-7", "status": "PLACED"}
        assert record is not None
        assert record["status"]["S"] == "COMPLETED"
        assert json.loads(record["data"]["S"]) == {"orderId": "o-7", "status": "PLACED"}
        # the duplicate replayed the record and never reached the mocked step
        assert replayed.output == placed.output
        assert "Execute" not in replayed.states
        # the real business Lambda never ran
        assert service.business_runs == 0


def test_the_business_step_of_an_inline_idempotent_step_is_mocked_by_its_prefixed_name():
    # Given the Express order pipeline whose PlaceOrder Task is wrapped inline (IdempotentStep)
    mocks = config(
        {"order-pipeline-inline": {"Placed": {"PlaceOrder.Execute": "placed"}}},
        {"placed": {"0": lambda_answer({"orderId": "o-inline", "placedOrderId": "p-1", "status": "PLACED"})}},
    )
    with LocalCloud(mock_config=mocks) as cloud:
        service = IdempotentService(cloud)
        machine = service.deploy_inline(order_pipeline(service.settings), "order-pipeline-inline")
        order = {"orderId": "o-inline", "amount": 3}
        sync = cloud.client("stepfunctions", inject_host_prefix=False)

        # When the pipeline runs twice as the test case
        first = sync.start_sync_execution(stateMachineArn=f"{machine}#Placed", input=json.dumps(order))
        again = sync.start_sync_execution(stateMachineArn=f"{machine}#Placed", input=json.dumps(order))

        # Then the mocked step ran once (the second replayed the real record) and no Lambda ran
        assert first["status"] == "SUCCEEDED", first.get("cause")
        assert json.loads(again["output"]) == json.loads(first["output"])
        assert "p-1" in first["output"]
        record = service.record_for(order)
        assert record is not None
        assert record["status"]["S"] == "COMPLETED"
        assert service.business_runs == 0


# -- the file: ranges, reloads, and every fault named -----------------------------------------------
def write(path: Path, document: Any) -> None:
    text = document if isinstance(document, str) else json.dumps(document)
    path.write_text(text, encoding="utf-8")
    stamp = path.stat().st_mtime_ns + 1_000_000_000  # a fresh modification time, as an editor's save
    os.utime(path, ns=(stamp, stamp))


def test_a_changed_file_is_read_again_and_a_bad_one_refuses_only_mocked_starts(tmp_path: Path):
    # Given a mock file, and a machine started from it
    path = tmp_path / "MockConfigFile.json"
    write(path, RETRY_CONFIG)
    with LocalCloud(mock_config=path, retry_wait_scale=0) as cloud:
        arn = machine(cloud, "checkout", CHECKOUT, "Charge")
        first = run_case(cloud, arn, "HappyPath")

        # When the file changes, the next start reads it
        changed = json.loads(json.dumps(RETRY_CONFIG))
        changed["MockedResponses"]["charged"]["0"] = lambda_answer({"charged": "edited"})
        write(path, changed)
        second = run_case(cloud, arn, "HappyPath")

        # When it is saved broken, mocked starts are refused with its fault; plain starts go on
        write(path, '{"StateMachines": ')
        with pytest.raises(ClientError) as refused:
            cloud.sfn.start_execution(stateMachineArn=f"{arn}#HappyPath", input="{}")
        plain = cloud.wait(cloud.start_execution(arn, {}))

        # When it is mended, mocked starts work again
        write(path, RETRY_CONFIG)
        third = run_case(cloud, arn, "HappyPath")

    assert [first.output, second.output, third.output] == [
        {"charged": True},
        {"charged": "edited"},
        {"charged": True},
    ]
    assert (
        f"{path}: line 1 column 19: malformed JSON: Expecting value"
        in refused.value.response["Error"]["Message"]
    )
    assert plain.status == "FAILED"
    assert plain.error == "Lambda.ResourceNotFoundException"


def test_ranges_expand_in_order():
    mocks = MockConfigSource(
        config(
            {"m": {"T": {"S": "r"}}},
            {"r": {"2-3": lambda_answer("late"), "0": lambda_answer("first"), "1": lambda_answer("second")}},
        )
    )
    answers = mocks.current().test_cases["m", "T"]["S"]
    assert [answer.returns["Payload"] for answer in answers] == ["first", "second", "late", "late"]


BAD_RESPONSES = {
    "a gap in the numbering": (
        {"0": lambda_answer(1), "2": lambda_answer(2)},
        "MockedResponses.r: numbering has a gap or an overlap: expected response 1, found 2",
    ),
    "not starting at 0": ({"1": lambda_answer(1)}, "expected response 0, found 1"),
    "an overlap": ({"0-1": lambda_answer(1), "1": lambda_answer(2)}, "expected response 2, found 1"),
    "a backwards range": (
        {"0": lambda_answer(1), "3-1": lambda_answer(2)},
        "MockedResponses.r.3-1: is a range that ends (1) before it starts (3)",
    ),
    "a key that is no number": (
        {"first": lambda_answer(1)},
        'MockedResponses.r.first: is not a response number ("0") or range ("1-2")',
    ),
    "both Return and Throw": (
        {"0": {"Return": {}, "Throw": {"Error": "E"}}},
        "MockedResponses.r.0: holds Return and Throw: exactly one of Return or Throw",
    ),
    "neither": ({"0": {"Retrun": {}}}, "MockedResponses.r.0: holds neither Return nor Throw"),
    "a Throw without Error": (
        {"0": {"Throw": {"Cause": "why"}}},
        "MockedResponses.r.0.Throw: has no Error (a string)",
    ),
    "no responses": ({}, 'MockedResponses.r: has no responses (number them from "0")'),
}


@pytest.mark.parametrize(("responses", "message"), BAD_RESPONSES.values(), ids=BAD_RESPONSES.keys())
def test_a_bad_response_is_one_line_naming_the_file_and_the_place(
    tmp_path: Path, responses: Any, message: str
):
    path = tmp_path / "mocks.json"
    write(path, config({"m": {"T": {"S": "r"}}}, {"r": responses}))
    with pytest.raises(MockConfigError) as bad:
        LocalCloud(mock_config=path)
    assert str(bad.value).startswith(f"{path}: MockedResponses.r")
    assert message in str(bad.value)
    assert "\n" not in str(bad.value)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            '{"StateMachines": {',
            "line 1 column 20: malformed JSON: Expecting property name enclosed in double quotes",
        ),
        ("[]", "the document: must be a JSON object, not list"),
        (
            config({"m": {"T": {"S": "missing"}}}, {}),
            "StateMachines.m.TestCases.T.S: names the response 'missing', which MockedResponses does not define",
        ),
        (
            config({"m": {"T": {"S": 3}}}, {}),
            "StateMachines.m.TestCases.T.S: names a response by its name (a string), not 3",
        ),
    ],
)
def test_a_bad_document_is_one_line_naming_the_file_and_the_place(
    tmp_path: Path, document: Any, message: str
):
    path = tmp_path / "mocks.json"
    write(path, document)
    with pytest.raises(MockConfigError) as bad:
        MockConfigSource(path).current()
    assert str(bad.value) == f"{path}: {message}"


def test_a_missing_file_is_named(tmp_path: Path):
    with pytest.raises(MockConfigError) as bad:
        MockConfigSource(tmp_path / "absent.json").current()
    assert str(bad.value) == f"{tmp_path / 'absent.json'}: cannot read: No such file or directory"


# -- the pytest marker -----------------------------------------------------------------------------
@pytest.mark.sfn_mock_config(RETRY_CONFIG)
def test_the_marker_gives_local_cloud_its_mock_configuration(local_cloud: LocalCloud):
    result = run_case(local_cloud, machine(local_cloud, "checkout", CHECKOUT, "Charge"), "FlakyGateway")
    assert result.output == {"charged": "third time"}


@pytest.mark.sfn_mock_config("mock_config_file.json")
def test_the_marker_reads_a_file_beside_the_test(local_cloud: LocalCloud):
    result = run_case(local_cloud, machine(local_cloud, "checkout", CHECKOUT, "Charge"), "HappyPath")
    assert result.output == {"charged": "from the file beside the test"}


# -- serve -----------------------------------------------------------------------------------------
SERVE_DEADLINE_SECONDS = 30


def test_serve_reads_sfn_mock_config_and_names_each_fault_once(tmp_path: Path):
    # Given serve started with the variable Step Functions Local reads
    path = tmp_path / "MockConfigFile.json"
    placed = lambda_answer({"orderId": "o-9", "status": "PLACED"})
    write(path, config({"idempotency": {"Placed": {"Execute": "placed"}}}, {"placed": {"0": placed}}))
    process = start_server(environment={"SFN_MOCK_CONFIG": str(path)})
    try:
        ready = read_ready_line(process)
        sfn = boto3.client(
            "stepfunctions",
            endpoint_url=ready["endpoint"],
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )
        machine = next(arn for arn in ready["stateMachineArns"] if arn.endswith(":idempotency"))

        # When an order runs as the test case
        started = sfn.start_execution(
            stateMachineArn=f"{machine}#Placed", input=json.dumps({"orderId": "o-9"})
        )
        output = wait_for_output(sfn, started["executionArn"])

        # When the file is saved broken, mocked starts are refused until it is mended
        write(path, '{"StateMachines": ')
        refusal = poll_until_refused(sfn, machine)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=SERVE_DEADLINE_SECONDS)

    # Then the mocked step answered, the ready line named the file, and the fault was said once
    assert ready["mockConfig"] == str(path)
    assert output == {"orderId": "o-9", "status": "PLACED"}
    fault = f"{path}: line 1 column 19: malformed JSON: Expecting value"
    assert fault in refusal
    assert f"mock configuration {path}: 1 test case(s)" in stderr
    assert stderr.count(fault) == 1


def wait_for_output(sfn: Any, execution_arn: str) -> Any:
    deadline = time.monotonic() + SERVE_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        described = sfn.describe_execution(executionArn=execution_arn)
        if described["status"] != "RUNNING":
            return json.loads(described.get("output", "null"))
        time.sleep(0.05)
    raise AssertionError(f"{execution_arn} did not end within {SERVE_DEADLINE_SECONDS} s")


def poll_until_refused(sfn: Any, machine: str) -> str:
    deadline = time.monotonic() + SERVE_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        try:
            sfn.start_execution(stateMachineArn=f"{machine}#Placed", input=json.dumps({"orderId": "o-10"}))
        except ClientError as error:
            return str(error.response["Error"]["Message"])
        time.sleep(0.1)
    raise AssertionError("a broken mock file was never refused")
