"""EventBridge triggers and SQS batches, delivered as the services deliver them."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from typing import Any

import pytest

from sfn_idempotency.flow import inline_workflows
from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.local.observability import function_failures
from sfn_idempotency.settings import ORDER_EVENT_KEY_JMESPATH, example_settings

ORDER = {"orderId": "o-evt", "amount": 12}


@pytest.fixture
def event_workflow(local_cloud: LocalCloud) -> IdempotentService:
    service = IdempotentService(
        local_cloud,
        example_settings({}, IDEMPOTENCY_EVENT_KEY_JMESPATH=ORDER_EVENT_KEY_JMESPATH),
        name="order-events",
    )
    service.deploy_event_trigger()
    return service


def wait_for_executions(service: IdempotentService, count: int) -> list[Any]:
    cloud = service.cloud
    cloud.wait_until(
        lambda: len(cloud.executions(service.state_machine_arn)) >= count, what=f"{count} executions"
    )
    return [cloud.wait(arn) for arn in cloud.executions(service.state_machine_arn)]


def test_the_same_order_published_twice_places_it_once(event_workflow: IdempotentService):
    # Given a producer that publishes the same order twice (two events, two ids), a moment apart
    cloud = event_workflow.cloud
    first_id = cloud.put_event("orders", "OrderPlaced", ORDER)
    (first,) = wait_for_executions(event_workflow, 1)
    second_id = cloud.put_event("orders", "OrderPlaced", ORDER)

    # When the second is delivered
    _, second = wait_for_executions(event_workflow, 2)

    # Then the business key in detail made them one order; the second replayed the first
    assert first_id != second_id
    assert json.loads(second.history[0]["executionStartedEventDetails"]["input"])["id"] == second_id
    assert first.states[-1] == "Complete"
    assert second.states[-1] == "Replay"
    assert second.output_json == first.output_json
    assert event_workflow.business_runs == 1


def test_the_same_order_published_twice_at_once_places_it_once(event_workflow: IdempotentService):
    # When two events for one order arrive together
    for _ in range(2):
        event_workflow.cloud.put_event("orders", "OrderPlaced", ORDER)
    results = wait_for_executions(event_workflow, 2)

    # Then one placed it; the other replayed it or found it in progress (EventBridge does not
    # retry a failed execution, and it need not: the order is placed)
    assert event_workflow.business_runs == 1
    assert sorted(r.states[-1] for r in results) in (
        ["Complete", "Replay"],
        ["AlreadyInProgress", "Complete"],
    )


def test_the_execution_input_is_the_whole_event_as_eventbridge_delivers_it(event_workflow: IdempotentService):
    event_id = event_workflow.cloud.put_event("orders", "OrderPlaced", ORDER)
    (result,) = wait_for_executions(event_workflow, 1)
    delivered = json.loads(result.history[0]["executionStartedEventDetails"]["input"])
    assert delivered["id"] == event_id
    assert delivered["detail"] == ORDER
    assert (delivered["source"], delivered["detail-type"], delivered["version"]) == (
        "orders",
        "OrderPlaced",
        "0",
    )
    assert delivered["account"] == event_workflow.cloud.account
    assert delivered["time"].endswith("Z")
    assert result.output["orderId"] == ORDER["orderId"]


def test_a_redelivered_event_replays(event_workflow: IdempotentService):
    # Given a delivered event
    event_workflow.cloud.put_event("orders", "OrderPlaced", ORDER)
    (first,) = wait_for_executions(event_workflow, 1)
    delivered = json.loads(first.history[0]["executionStartedEventDetails"]["input"])

    # When EventBridge delivers the very same event again (its retry after a target error)
    again = event_workflow.run(delivered)

    # Then it replays
    assert again.output_json == first.output_json
    assert event_workflow.business_runs == 1


@pytest.mark.parametrize(
    ("source", "detail_type"), [("payments", "OrderPlaced"), ("orders", "OrderCancelled")]
)
def test_a_non_matching_event_starts_nothing(
    event_workflow: IdempotentService, source: str, detail_type: str
):
    event_workflow.cloud.put_event(source, detail_type, ORDER)
    # a matching event published after it is the witness that delivery has happened
    event_workflow.cloud.put_event("orders", "OrderPlaced", {"orderId": "witness", "amount": 1})
    (only,) = wait_for_executions(event_workflow, 1)
    assert (
        json.loads(only.history[0]["executionStartedEventDetails"]["input"])["detail"]["orderId"] == "witness"
    )


def sqs_record(message_id: str, body: Any) -> dict[str, Any]:
    """An SQS record as a Lambda poller or EventBridge Pipes delivers it."""
    return {
        "messageId": message_id,
        "receiptHandle": f"handle-{message_id}",
        "body": body if isinstance(body, str) else json.dumps(body),
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:orders",
        "awsRegion": "us-east-1",
    }


@pytest.fixture
def batch_workflow(idempotent_service: IdempotentService) -> str:
    """The SQS batch workflow (Express, its PlaceOrder wrapped inline), sharing the direct workflow's
    table, key Lambda and business Lambda as the stack deploys it."""
    return idempotent_service.deploy_inline(
        inline_workflows.sqs_batch(idempotent_service.settings), "sqs-batch"
    )


def test_sqs_batch_places_a_duplicated_order_once_and_reports_failed_records(
    local_cloud: LocalCloud, idempotent_service: IdempotentService, batch_workflow: str
):
    # Given a batch with an order twice, a rejected order, a body that is not JSON
    batch = [
        sqs_record("m1", {"orderId": "a", "amount": 1}),
        sqs_record("m2", {"orderId": "a", "amount": 1}),
        sqs_record("m3", {"orderId": "b", "amount": -1}),
        sqs_record("m4", "{not json"),
        sqs_record("m5", {"orderId": "c", "amount": 2}),
    ]

    # When the batch runs synchronously, as EventBridge Pipes calls an Express target
    result = local_cloud.run_sync(batch_workflow, batch)

    # Then order a was placed once (m2 replayed m1), and only m3 and m4 are reported, by error name
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output == {
        "batchItemFailures": [
            {"itemIdentifier": "m3", "error": "InvalidOrderError"},
            {"itemIdentifier": "m4", "error": "IdempotencyKeyError"},
        ]
    }
    ends = [
        state for state in result.states if state.split(".")[-1] in ("Complete", "Replay", "BusinessFailed")
    ]
    assert ends == [
        "PlaceOrder.Complete",
        "PlaceOrder.Replay",
        "PlaceOrder.BusinessFailed",
        "PlaceOrder.Complete",
    ]
    assert idempotent_service.business_runs == 3  # a once, b (failed) once, c once

    # And the records are the direct workflow's: it replays what the batch placed
    direct = idempotent_service.run({"orderId": "a", "amount": 1})
    assert idempotent_service.flow_states(direct)[-1] == "Replay"
    assert direct.output["orderId"] == "a"
    assert direct.output["status"] == "PLACED"


def test_a_batch_near_the_input_limit_reports_its_failures_within_the_state_limit(
    local_cloud: LocalCloud, batch_workflow: str
):
    # Given a batch of ~240 KB (the input limit is 256 KB) whose every record fails
    batch = [sqs_record(f"m{n}", {"orderId": f"o-{n}", "amount": -1, "note": "x" * 9_000}) for n in range(25)]
    assert 230_000 < len(json.dumps(batch)) < 256 * 1024

    # When the batch runs
    result = local_cloud.run_sync(batch_workflow, batch)

    # Then every record is reported, and the output is small (no record echoed back)
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output["batchItemFailures"] == [
        {"itemIdentifier": f"m{n}", "error": "InvalidOrderError"} for n in range(25)
    ]
    assert len(result.output_json) < 2_000


def test_a_disabled_rule_delivers_nothing_until_enabled(event_workflow: IdempotentService):
    # Given the trigger's rule disabled (AWS: a DISABLED rule matches no event)
    events = event_workflow.cloud.events
    (rule,) = events.list_rules()["Rules"]
    events.disable_rule(Name=rule["Name"])
    event_workflow.cloud.put_event("orders", "OrderPlaced", ORDER)

    # When it is enabled again and a witness is published
    events.enable_rule(Name=rule["Name"])
    event_workflow.cloud.put_event("orders", "OrderPlaced", {"orderId": "witness", "amount": 1})

    # Then only the witness started an execution
    (only,) = wait_for_executions(event_workflow, 1)
    assert (
        json.loads(only.history[0]["executionStartedEventDetails"]["input"])["detail"]["orderId"] == "witness"
    )


@pytest.mark.parametrize(
    ("target_fields", "expected_input"),
    [
        ({"Input": '{"constant": true}'}, {"constant": True}),
        (
            {
                "InputTransformer": {
                    "InputPathsMap": {"order": "$.detail.orderId"},
                    "InputTemplate": '{"orderId": "<order>"}',
                }
            },
            {"orderId": ORDER["orderId"]},
        ),
    ],
    ids=["Input", "InputTransformer"],
)
def test_a_target_receives_its_input_or_its_transformed_event(
    local_cloud: LocalCloud, target_fields: dict[str, Any], expected_input: Any
):
    # Given a rule whose state machine target has a constant Input or an InputTransformer
    machine = local_cloud.create_state_machine(
        "echo",
        json.dumps({"StartAt": "Pass", "States": {"Pass": {"Type": "Pass", "End": True}}}),
        {},
    )
    local_cloud.events.put_rule(Name="orders", EventPattern=json.dumps({"source": ["orders"]}))
    local_cloud.events.put_targets(
        Rule="orders",
        Targets=[{"Id": "m", "Arn": machine, "RoleArn": "arn:aws:iam::123456789012:role/r", **target_fields}],
    )

    # When a matching event is published
    local_cloud.put_event("orders", "OrderPlaced", ORDER)

    # Then the execution's input is what the target says, not the event
    local_cloud.wait_until(lambda: len(local_cloud.executions(machine)) == 1, what="the delivery")
    result = local_cloud.wait(local_cloud.executions(machine)[0])
    assert result.output == expected_input


def queue_with_dead_letters(sqs: Any) -> tuple[str, str, str]:
    """A queue (visibility 1 s) whose redrive policy moves a message received twice to its DLQ:
    its URL and ARN, and the DLQ's URL."""
    dlq = sqs.create_queue(QueueName="orders-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 2})
    queue = sqs.create_queue(
        QueueName="orders", Attributes={"VisibilityTimeout": "1", "RedrivePolicy": redrive}
    )["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    return queue, queue_arn, dlq


def python_function(cloud: LocalCloud, name: str, code: str, **extra: Any) -> str:
    """A Python function ``name`` whose ``app.py`` is ``code``, created through the Lambda API: its ARN."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as folder:
        folder.writestr("app.py", code)
    role = cloud.client("iam").create_role(RoleName=f"{name}-role", AssumeRolePolicyDocument="{}")["Role"]
    created = cloud.client("lambda").create_function(
        FunctionName=name,
        Runtime="python3.13",
        Role=role["Arn"],
        Handler="app.handler",
        Code={"ZipFile": archive.getvalue()},
        **extra,
    )
    return str(created["FunctionArn"])


def test_a_message_its_function_keeps_failing_reaches_the_dead_letter_queue_each_failure_reported(
    local_cloud: LocalCloud,
):
    # Given a queue (visibility 1 s) whose redrive policy moves a message received twice to its DLQ,
    # and a Python function behind it, through an event source mapping, that fails to run
    sqs = local_cloud.client("sqs")
    queue, queue_arn, dlq = queue_with_dead_letters(sqs)
    python_function(
        local_cloud, "consume", "def handler(event, context):\n    raise KeyError('customerId')\n"
    )
    local_cloud.client("lambda").create_event_source_mapping(
        EventSourceArn=queue_arn, FunctionName="consume", BatchSize=1
    )
    failures: list[Any] = []
    function_failures.listeners.append(failures.append)

    # When a message is sent
    sqs.send_message(QueueUrl=queue, MessageBody='{"orderId": "o-1"}')

    # Then it was delivered again after its visibility timeout, and after its second failure moved to
    # the dead-letter queue (moto delivered it once, and it stayed in its queue for good)
    moved: list[Any] = []

    def in_the_dlq() -> bool:
        moved.extend(sqs.receive_message(QueueUrl=dlq).get("Messages", []))
        return bool(moved)

    local_cloud.wait_until(in_the_dlq, timeout=20, what="the message in the dead-letter queue")
    assert [json.loads(message["Body"]) for message in moved] == [{"orderId": "o-1"}]
    assert "Messages" not in sqs.receive_message(QueueUrl=queue)
    # And each failed run was reported: the function, the queue, the error and its message
    assert [(f.function, f.trigger, f.error) for f in failures] == [("consume", "SQS orders", "KeyError")] * 2
    assert failures[0].line().startswith("consume (SQS orders): KeyError: ")


# A function that fails with the event it got as its message: each failure report shows a delivery.
TELLING_FUNCTION = "import json\n\ndef handler(event, context):\n    raise ValueError(json.dumps(event))\n"


def telling_function(cloud: LocalCloud) -> str:
    return python_function(cloud, "tell", TELLING_FUNCTION)


def reported_failures() -> list[function_failures.FunctionFailure]:
    failures: list[function_failures.FunctionFailure] = []
    function_failures.listeners.append(failures.append)
    return failures


def test_an_eventbridge_rule_invokes_its_function_with_the_event_and_retries_a_failure_twice(
    local_cloud: LocalCloud,
):
    # Given a rule whose target is a function that fails (Lambda's asynchronous invocation)
    function = telling_function(local_cloud)
    events = local_cloud.client("events")
    events.put_rule(Name="orders", EventPattern=json.dumps({"source": ["shop"]}))
    events.put_targets(Rule="orders", Targets=[{"Id": "tell", "Arn": function}])
    failures = reported_failures()

    # When an order event is put
    answer = events.put_events(
        Entries=[{"Source": "shop", "DetailType": "OrderPlaced", "Detail": '{"id": 1}'}]
    )

    # Then PutEvents succeeded (moto failed it whole: it has no Lambda target), the function got the
    # event as EventBridge delivers it, and was tried three times, each failure reported
    assert answer["FailedEntryCount"] == 0
    local_cloud.wait_until(lambda: len(failures) == 3, timeout=20, what="three attempts")
    assert [(f.function, f.trigger, f.error) for f in failures] == [
        ("tell", "EventBridge rule orders", "ValueError")
    ] * 3
    delivered = json.loads(failures[0].cause)
    assert delivered["id"] == answer["Entries"][0]["EventId"]
    assert (delivered["source"], delivered["detail-type"], delivered["detail"]) == (
        "shop",
        "OrderPlaced",
        {"id": 1},
    )


def test_an_sns_subscription_invokes_its_function_with_the_notification_as_published(local_cloud: LocalCloud):
    # Given a topic with a function subscribed (a failing one: each attempt is reported)
    function = telling_function(local_cloud)
    sns = local_cloud.client("sns")
    topic = sns.create_topic(Name="alerts")["TopicArn"]
    subscription = sns.subscribe(TopicArn=topic, Protocol="lambda", Endpoint=function)["SubscriptionArn"]
    failures = reported_failures()

    # When a message is published with an attribute and no subject
    message_id = sns.publish(
        TopicArn=topic,
        Message="disk full",
        MessageAttributes={"severity": {"DataType": "String", "StringValue": "high"}},
    )["MessageId"]

    # Then the function got SNS's notification of it, not moto's fixed sample, and was tried three times
    local_cloud.wait_until(lambda: len(failures) == 3, timeout=20, what="three attempts")
    assert {(f.function, f.trigger) for f in failures} == {("tell", "SNS alerts")}
    (record,) = json.loads(failures[0].cause)["Records"]
    assert (record["EventSource"], record["EventSubscriptionArn"]) == ("aws:sns", subscription)
    notification = record["Sns"]
    assert (notification["TopicArn"], notification["MessageId"]) == (topic, message_id)
    assert (notification["Message"], notification["Subject"]) == ("disk full", None)
    assert notification["MessageAttributes"] == {"severity": {"Type": "String", "Value": "high"}}
    assert notification["Signature"] != "EXAMPLE"


def test_an_sqs_mapping_delivers_a_batch_in_one_event_each_record_as_sqs_holds_it(local_cloud: LocalCloud):
    # Given a queue (visibility 1 s) and a failing function behind a mapping of batches up to 10,
    # disabled while two messages wait, one with attributes
    function = telling_function(local_cloud)
    sqs = local_cloud.client("sqs")
    queue = sqs.create_queue(QueueName="orders", Attributes={"VisibilityTimeout": "1"})["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    lambdas = local_cloud.client("lambda")
    mapping = lambdas.create_event_source_mapping(
        EventSourceArn=queue_arn, FunctionName=function, BatchSize=10, Enabled=False
    )
    sqs.send_message(
        QueueUrl=queue,
        MessageBody="first",
        MessageAttributes={"channel": {"DataType": "String", "StringValue": "web"}},
    )
    sqs.send_message(QueueUrl=queue, MessageBody="second")
    failures = reported_failures()

    # When the mapping is enabled and a third message comes
    lambdas.update_event_source_mapping(UUID=mapping["UUID"], Enabled=True)
    sqs.send_message(QueueUrl=queue, MessageBody="third")

    # Then the function got the three in one event, each record as SQS holds the message
    local_cloud.wait_until(lambda: len(failures) >= 2, timeout=20, what="a delivery and its redelivery")
    first, again = (json.loads(failure.cause)["Records"] for failure in failures[:2])
    assert [record["body"] for record in first] == ["first", "second", "third"]
    assert {failure.trigger for failure in failures} == {"SQS orders"}
    record = first[0]
    assert record["md5OfBody"] == hashlib.md5(b"first").hexdigest()
    assert record["messageAttributes"] == {
        "channel": {
            "stringValue": "web",
            "stringListValues": [],
            "binaryListValues": [],
            "dataType": "String",
        }
    }
    assert int(record["attributes"]["SentTimestamp"]) > 1_700_000_000_000  # not moto's 2018 sample
    # And a redelivery after the visibility timeout counts its receive
    assert [r["attributes"]["ApproximateReceiveCount"] for r in first] == ["1", "1", "1"]
    assert [r["attributes"]["ApproximateReceiveCount"] for r in again] == ["2", "2", "2"]


# A function that names each record whose body is "bad" as failed, by its message id or by an id
# the batch does not hold.
REPORTING_FUNCTION = """
import os

def handler(event, context):
    named = os.environ["NAMED"]
    return {"batchItemFailures": [
        {"itemIdentifier": record["messageId"] if named == "its-id" else named}
        for record in event["Records"] if record["body"] == "bad"
    ]}
"""


@pytest.mark.parametrize(
    ("response_types", "named", "dead_letters"),
    [
        (["ReportBatchItemFailures"], "its-id", ["bad"]),
        (["ReportBatchItemFailures"], "not-in-the-batch", ["bad", "good", "good too"]),
        ([], "its-id", []),
    ],
    ids=["partial-failure", "unknown-id-fails-the-batch", "response-not-read-without-the-setting"],
)
def test_a_partial_batch_response_redelivers_only_the_records_it_names(
    local_cloud: LocalCloud, response_types: list[str], named: str, dead_letters: list[str]
):
    # Given a queue (visibility 1 s) whose DLQ takes a message received twice, and a function behind
    # it that answers a batch by naming its "bad" records as failed
    sqs = local_cloud.client("sqs")
    queue, queue_arn, dlq = queue_with_dead_letters(sqs)
    python_function(local_cloud, "batch", REPORTING_FUNCTION, Environment={"Variables": {"NAMED": named}})
    lambdas = local_cloud.client("lambda")
    mapping = lambdas.create_event_source_mapping(
        EventSourceArn=queue_arn,
        FunctionName="batch",
        BatchSize=10,
        Enabled=False,
        FunctionResponseTypes=response_types,
    )
    sqs.send_message(QueueUrl=queue, MessageBody="bad")
    sqs.send_message(QueueUrl=queue, MessageBody="good")

    # When the three messages are delivered in one batch
    lambdas.update_event_source_mapping(UUID=mapping["UUID"], Enabled=True)
    sqs.send_message(QueueUrl=queue, MessageBody="good too")

    # Then what the response named as failed was delivered again and, failing again, moved to the
    # DLQ, the rest deleted; a response Lambda cannot take fails the whole batch; without the
    # setting the response is not read (moto deleted the whole batch in every case)
    moved: list[str] = []

    def settled() -> bool:
        moved.extend(
            m["Body"] for m in sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10).get("Messages", [])
        )
        counts = sqs.get_queue_attributes(
            QueueUrl=queue,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return len(moved) >= len(dead_letters) and set(counts.values()) == {"0"}

    local_cloud.wait_until(settled, timeout=20, what="the queue emptied")
    assert sorted(moved) == dead_letters


def test_a_function_s_error_is_written_to_its_log_group_whoever_invoked_it(local_cloud: LocalCloud):
    # Given a Python function that fails (its error is the event it got), never invoked before
    function = telling_function(local_cloud)
    logs = local_cloud.client("logs")
    assert logs.describe_log_groups(logGroupNamePrefix="/aws/lambda/")["logGroups"] == []

    # When the Lambda API invokes it, and then an EventBridge rule does
    answer = local_cloud.client("lambda").invoke(FunctionName=function, Payload=b'{"by": "api"}')
    events = local_cloud.client("events")
    events.put_rule(Name="orders", EventPattern=json.dumps({"source": ["shop"]}))
    events.put_targets(Rule="orders", Targets=[{"Id": "tell", "Arn": function}])
    failures = reported_failures()
    events.put_events(Entries=[{"Source": "shop", "DetailType": "OrderPlaced", "Detail": "{}"}])
    local_cloud.wait_until(lambda: len(failures) == 3, timeout=20, what="the rule's three attempts")

    # Then each run is in the function's log group, its error as Lambda's Python runtime writes it
    # (the error's type and message, then its traceback) between its START and its END and REPORT
    assert answer["FunctionError"] == "Unhandled"
    events = [event["message"] for event in logs.filter_log_events(logGroupName="/aws/lambda/tell")["events"]]
    runs = [events[index : index + 4] for index in range(0, len(events), 4)]
    assert len(runs) == 4
    assert [[event.split(" ", 1)[0] for event in run] for run in runs] == [
        ["START", "[ERROR]", "END", "REPORT"]
    ] * 4
    first_line, traceback_header, *_ = runs[0][1].splitlines()
    assert first_line == '[ERROR] ValueError: {"by": "api"}'
    assert traceback_header == "Traceback (most recent call last):"
    assert all(run[1].startswith("[ERROR] ValueError: ") for run in runs)
