"""What a Task's integration answers, and how an execution's history links, as AWS's recordings show
them (issue 39; ledger L43 and L44, fixes 70, 71, 73, 74, 76 and 77)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from sfn_idempotency.local import LocalCloud

DYNAMODB = "arn:aws:states:::dynamodb:"


def machine(cloud: LocalCloud, states: dict[str, Any], start: str, name: str = "answers", **top: Any) -> str:
    return cloud.create_state_machine(name, json.dumps({"StartAt": start, "States": states, **top}), {})


def task(resource: str, parameters: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"Type": "Task", "Resource": resource, "Parameters": parameters, **fields}


def history(cloud: LocalCloud, execution_arn: str) -> list[dict[str, Any]]:
    return list(cloud.sfn.get_execution_history(executionArn=execution_arn)["events"])


def test_the_aws_sample_s_result_selector_reads_the_status_of_a_put(local_cloud: LocalCloud):
    # Given AWS's own Step Functions Local sample: a putItem whose ResultSelector keeps the status
    table = local_cloud.create_table("orders")
    put = task(
        f"{DYNAMODB}putItem",
        {"TableName": table, "Item": {"id": {"S": "o-1"}}},
        ResultSelector={"status.$": "$.SdkHttpMetadata.HttpStatusCode"},
        End=True,
    )

    # When it runs
    result = local_cloud.run(machine(local_cloud, {"Put": put}, "Put"), {})

    # Then the selector found the status, and the item is in the table
    assert (result.status, result.output) == ("SUCCEEDED", {"status": 200})
    assert local_cloud.dynamodb.get_item(TableName=table, Key={"id": {"S": "o-1"}})["Item"] == {
        "id": {"S": "o-1"}
    }


def test_each_answer_carries_its_service_s_headers_and_length(local_cloud: LocalCloud):
    # Given a put and a get of one item, an SQS send, and SNS publishes to a plain and a FIFO topic
    table = local_cloud.create_table("orders")
    queue = local_cloud.client("sqs").create_queue(QueueName="q")["QueueUrl"]
    sns = local_cloud.client("sns")
    topic = sns.create_topic(Name="t")["TopicArn"]
    fifo = sns.create_topic(
        Name="t.fifo", Attributes={"FifoTopic": "true", "ContentBasedDeduplication": "true"}
    )
    key = {"id": {"S": "o-1"}}
    states = {
        "Put": task(f"{DYNAMODB}putItem", {"TableName": table, "Item": key}, ResultPath="$.put", Next="Get"),
        "Get": task(f"{DYNAMODB}getItem", {"TableName": table, "Key": key}, ResultPath="$.get", Next="Send"),
        "Send": task(
            "arn:aws:states:::sqs:sendMessage",
            {"QueueUrl": queue, "MessageBody": "x"},
            ResultPath="$.send",
            Next="Pub",
        ),
        "Pub": task(
            "arn:aws:states:::sns:publish",
            {"TopicArn": topic, "Message": "x"},
            ResultPath="$.pub",
            Next="Fifo",
        ),
        "Fifo": task(
            "arn:aws:states:::sns:publish",
            {"TopicArn": fifo["TopicArn"], "Message": "x", "MessageGroupId": "g"},
            ResultPath="$.fifo",
            End=True,
        ),
    }

    # When they run
    output = local_cloud.run(machine(local_cloud, states, "Put"), {}).output

    # Then each answer has the SDK's metadata: its service's headers, its body's length as AWS
    # writes it, its status, and one request id in both places
    def headers(step: str) -> dict[str, str]:
        metadata = output[step]["SdkHttpMetadata"]
        assert metadata["HttpStatusCode"] == 200
        assert metadata["AllHttpHeaders"] == {
            name: [value] for name, value in metadata["HttpHeaders"].items()
        }
        return dict(metadata["HttpHeaders"])

    put, got = headers("put"), headers("get")
    assert (put["Content-Length"], put["Content-Type"], put["Server"]) == (
        "2",
        "application/x-amz-json-1.0",
        "Server",
    )
    assert output["put"]["SdkResponseMetadata"] == {"RequestId": put["x-amzn-RequestId"]}
    # (GetItem names its request id in lower case, as recorded)
    assert "x-amzn-requestid" in got
    assert "x-amzn-RequestId" not in got
    item = {"Item": output["get"]["Item"]}
    assert got["Content-Length"] == str(len(json.dumps(item, separators=(",", ":"))))
    sent = headers("send")
    assert (sent["Content-Length"], sent["connection"]) == ("106", "keep-alive")
    assert (headers("pub")["Content-Length"], headers("pub")["Content-Type"]) == ("294", "text/xml")
    assert headers("fifo")["Content-Length"] == "352"
    # and an aws-sdk or events answer has none of it
    assert set(output) == {"put", "get", "send", "pub", "fifo"}


def test_a_callback_task_s_submitted_event_shows_the_call_s_answer(local_cloud: LocalCloud):
    # Given an SQS send that waits for a task token, answered with a success
    queue = local_cloud.client("sqs").create_queue(QueueName="tokens")["QueueUrl"]
    wait = task(
        "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        {"QueueUrl": queue, "MessageBody": {"token.$": "$$.Task.Token"}},
        End=True,
    )
    arn = local_cloud.start_execution(machine(local_cloud, {"Wait": wait}, "Wait"), {})
    messages: list[dict[str, Any]] = []

    def received() -> bool:
        messages.extend(local_cloud.client("sqs").receive_message(QueueUrl=queue).get("Messages", []))
        return bool(messages)

    local_cloud.wait_until(received, what="the token's message")
    token = json.loads(messages[0]["Body"])["token"]
    local_cloud.sfn.send_task_success(taskToken=token, output='{"done": true}')

    # Then the result is the callback's, and TaskSubmitted shows the send's answer with its metadata
    assert local_cloud.wait(arn).output == {"done": True}
    (submitted,) = [e for e in history(local_cloud, arn) if e["type"] == "TaskSubmitted"]
    answer = json.loads(submitted["taskSubmittedEventDetails"]["output"])
    assert answer["SdkHttpMetadata"]["HttpHeaders"]["Content-Length"] == "106"


def test_a_result_selector_that_fails_on_the_answer_is_the_state_s_runtime_error(local_cloud: LocalCloud):
    # Given a put whose ResultSelector names a path the answer lacks, under a catch-all
    table = local_cloud.create_table("orders")
    put = task(
        f"{DYNAMODB}putItem",
        {"TableName": table, "Item": {"id": {"S": "o-1"}}},
        ResultSelector={"status.$": "$.Nope"},
        Catch=[{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
        End=True,
    )
    states = {"Put": put, "Caught": {"Type": "Pass", "End": True}}

    # When it runs
    result = local_cloud.run(machine(local_cloud, states, "Put"), {})

    # Then it failed with States.Runtime (which States.ALL does not catch), naming the field and the
    # state's entry, not with the service's error
    assert (result.status, result.error) == ("FAILED", "States.Runtime")
    entered = next(e["id"] for e in history(local_cloud, result.arn) if e["type"] == "TaskStateEntered")
    assert result.cause.startswith(
        f"An error occurred while executing the state 'Put' (entered at the event id #{entered}). "
        "The JSONPath '$.Nope' specified for the field 'status.$' could not be found in the input"
    )


def test_a_function_s_error_cause_is_as_written_by_its_resource_kind(local_cloud: LocalCloud):
    # Given a function that raises, called through lambda:invoke and as the Task's Resource, caught
    def handler(event: Any, context: Any) -> Any:
        raise LookupError("no such order")

    arn = local_cloud.add_function("lookup", handler).arn
    caught = {"Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}], "End": True}
    causes = {}
    for kind, call in {
        "invoke": task("arn:aws:states:::lambda:invoke", {"FunctionName": arn}, **caught),
        "resource": {"Type": "Task", "Resource": arn, **caught},
    }.items():
        states = {"Call": call, "Caught": {"Type": "Pass", "End": True}}
        causes[kind] = local_cloud.run(machine(local_cloud, states, "Call", name=kind), {}).output["Cause"]

    # Then lambda:invoke's Cause is the payload as compact JSON, and the Resource's the payload as the
    # Python runtime wrote it, spaces and all (both recorded)
    assert causes["invoke"].startswith(
        '{"errorMessage":"no such order","errorType":"LookupError","requestId":"'
    )
    assert causes["resource"].startswith(
        '{"errorMessage": "no such order", "errorType": "LookupError", "requestId": "'
    )
    assert json.loads(causes["invoke"]) == json.loads(causes["resource"]) | {
        "requestId": json.loads(causes["invoke"])["requestId"]
    }


def test_aws_sdk_errors_count_the_sdk_s_attempts_and_text_bodies_are_text(local_cloud: LocalCloud):
    # Given an aws-sdk S3 PutObject of a body given in the state, then a GetObject of no such key
    s3 = local_cloud.client("s3")
    s3.create_bucket(Bucket="bucket")
    states = {
        "Put": task(
            "arn:aws:states:::aws-sdk:s3:putObject",
            {"Bucket": "bucket", "Key": "k", "Body": {"a": 1}},
            ResultPath=None,
            Next="Missing",
        ),
        "Missing": task(
            "arn:aws:states:::aws-sdk:s3:getObject", {"Bucket": "bucket", "Key": "none"}, End=True
        ),
    }

    # When it runs
    result = local_cloud.run(machine(local_cloud, states, "Put"), {})

    # Then the object is text, and the error's Cause ends as the SDK's message does
    assert s3.get_object(Bucket="bucket", Key="k")["ContentType"] == "text/plain; charset=UTF-8"
    assert result.error == "S3.NoSuchKeyException"
    assert result.cause.endswith(") (SDK Attempt Count: 1)")


def test_history_links_as_recorded(local_cloud: LocalCloud):
    # Given a JSONata Map whose items are not a list, after a Pass
    states = {
        "Start": {"Type": "Pass", "Next": "Map"},
        "Map": {
            "Type": "Map",
            "Items": "{% 1 %}",
            "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}},
            "End": True,
        },
    }
    failed = local_cloud.run(machine(local_cloud, states, "Start", QueryLanguage="JSONata"), {})

    # Then EvaluationFailed follows what the Map's entered event followed (the Pass's exit)
    events = {e["type"]: e for e in history(local_cloud, failed.arn)}
    assert events["EvaluationFailed"]["previousEventId"] == events["MapStateEntered"]["previousEventId"]
    assert events["EvaluationFailed"]["previousEventId"] == events["PassStateExited"]["id"]

    # Given a Distributed Map over two items
    distributed = {
        "Map": {
            "Type": "Map",
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                "StartAt": "P",
                "States": {"P": {"Type": "Pass", "End": True}},
            },
            "End": True,
        }
    }
    done = local_cloud.run(machine(local_cloud, distributed, "Map", name="distributed"), [1, 2])

    # Then its MapStateExited follows its MapRunStarted
    events = {e["type"]: e for e in history(local_cloud, done.arn)}
    assert done.status == "SUCCEEDED"
    assert events["MapStateExited"]["previousEventId"] == events["MapRunStarted"]["id"]


def test_trace_and_function_request_ids_are_drawn_as_moto_draws_its_own(local_cloud: LocalCloud):
    # Given a function (its context has a request id, its Task's answer a trace id too), and moto's
    # generator of identifiers, which a user may seed to make them repeat
    from moto.moto_api._internal import mock_random

    seen: list[str] = []
    function = local_cloud.add_function("echo", lambda event, context: seen.append(context.aws_request_id))
    call = task(
        "arn:aws:states:::lambda:invoke",
        {"FunctionName": function.arn, "Payload": {}},
        ResultSelector={
            "headers.$": "$.SdkHttpMetadata.HttpHeaders",
            "requestId.$": "$.SdkResponseMetadata.RequestId",
        },
        End=True,
    )
    arn = machine(local_cloud, {"Call": call}, "Call")
    local_cloud.run(arn, {})  # what a first run makes once is made

    # When it runs twice, moto's generator seeded alike before each run
    outputs = []
    try:
        for _ in range(2):
            mock_random.seed(55)
            outputs.append(local_cloud.run(arn, {}).output)
    finally:
        mock_random.seed()  # unseeded again for the tests after this one

    # Then both runs drew the same ids: the X-Ray trace id, and the request id in the function's
    # context and in the Task's answer (os.urandom, which gives up the interpreter's lock at every
    # draw, drew different ones)
    first, second = outputs
    assert first["headers"]["X-Amzn-Trace-Id"] == second["headers"]["X-Amzn-Trace-Id"]
    assert re.fullmatch(r"Root=1-[0-9a-f]{8}-[0-9a-f]{24}", first["headers"]["X-Amzn-Trace-Id"])
    assert seen[1] == seen[2] == first["requestId"] == second["requestId"]


def test_a_publish_to_a_topic_that_does_not_exist_says_so(local_cloud: LocalCloud):
    # Given a Task publishing to a topic nobody created
    missing = "arn:aws:sns:us-east-1:123456789012:missing"
    states = {
        "Publish": task("arn:aws:states:::sns:publish", {"TopicArn": missing, "Message": "hi"}, End=True)
    }

    # When it runs
    result = local_cloud.run(machine(local_cloud, states, "Publish", name="publish"), {})

    # Then it fails as recorded: SNS's NotFound, "Topic does not exist", in the SDK's cause format
    # (fix 152; moto looked for a mobile endpoint of that ARN and said "Endpoint does not exist")
    assert result.error == "SNS.NotFoundException"
    assert re.fullmatch(
        r"Topic does not exist \(Service: AmazonSNS; Status Code: 404; Error Code: NotFound; "
        r"Request ID: \S+; Proxy: null\)",
        result.cause,
    )


def test_a_dynamodb_task_given_a_null_member_is_refused_by_dynamodb_in_its_words(local_cloud: LocalCloud):
    # Given a PutItem Task whose Item comes from a path that holds null
    local_cloud.dynamodb.create_table(
        TableName="orders",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    parameters = {"TableName": "orders", "Item.$": "$.item"}
    states = {"Put": task("arn:aws:states:::dynamodb:putItem", parameters, End=True)}

    # When it runs
    result = local_cloud.run(machine(local_cloud, states, "Put", name="put-null"), {"item": None})

    # Then, as recorded, the SDK leaves the null member out and DynamoDB's own validation refuses the
    # request: DynamoDB.AmazonDynamoDBException, "Value null at 'item'" (fix 99 refused the state
    # itself with States.Runtime; moto failed on the missing Item with Python's KeyError)
    assert result.error == "DynamoDB.AmazonDynamoDBException"
    assert result.cause.startswith(
        "1 validation error detected: Value null at 'item' failed to satisfy constraint: Member must not "
        "be null (Service: AmazonDynamoDBv2; Status Code: 400; Error Code: ValidationException;"
    )


@pytest.mark.parametrize(
    ("table_name", "constraint"),
    [
        ("/orders", "satisfy regular expression pattern: [a-zA-Z0-9_.-]+"),
        ("ab", "have length greater than or equal to 3"),
        ("a" * 256, "have length less than or equal to 255"),
    ],
)
def test_a_dynamodb_task_given_a_table_name_dynamodb_refuses_fails_in_its_words(
    local_cloud: LocalCloud, table_name: str, constraint: str
):
    # Given a PutItem Task whose table name breaks DynamoDB's naming rules
    parameters = {"TableName.$": "$.table", "Item": {"id": {"S": "1"}}}
    states = {"Put": task("arn:aws:states:::dynamodb:putItem", parameters, End=True)}

    # When it runs
    result = local_cloud.run(machine(local_cloud, states, "Put", name="put-bad-name"), {"table": table_name})

    # Then DynamoDB's validation refuses it, as recorded for the pattern
    # (test_put_item_invalid_table_name); moto answered ResourceNotFoundException
    assert result.error == "DynamoDB.AmazonDynamoDBException"
    assert result.cause.startswith(
        f"1 validation error detected: Value '{table_name}' at 'tableName' failed to satisfy constraint: "
        f"Member must {constraint} (Service: AmazonDynamoDBv2; Status Code: 400; Error Code: ValidationException;"
    )
