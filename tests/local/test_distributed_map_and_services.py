"""Distributed Map batches, tolerated failures and UpdateMapRun (fixes 49 to 51); EventBridge and
SNS as AWS answers them (fixes 52 to 55); in our own words."""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.capabilities.distributed_map import THRESHOLD_EXCEEDED_CAUSE, batches
from sfn_idempotency.local.compat.services import string_to_sign
from tests.local.conftest import GATE_TIMEOUT_SECONDS

ROLE = "arn:aws:iam::123456789012:role/maps"


def distributed_map(processor_states: dict[str, Any], start_at: str, **fields: Any) -> str:
    return json.dumps(
        {
            "StartAt": "Start",
            "States": {
                "Start": {"Type": "Pass", "Assign": {"perBatch": "2"}, "Next": "Fan"},
                "Fan": {
                    "Type": "Map",
                    "ItemsPath": "$.items",
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                        "StartAt": start_at,
                        "States": processor_states,
                    },
                    "End": True,
                    **fields,
                },
            },
        }
    )


ECHO = {"Echo": {"Type": "Pass", "End": True}}
FAILS_ON_TWO = {
    "Check": {
        "Type": "Choice",
        "Choices": [{"Variable": "$", "NumericEquals": 2, "Next": "Broken"}],
        "Default": "Done",
    },
    "Broken": {"Type": "Fail", "Error": "Broken", "Cause": "item two"},
    "Done": {"Type": "Pass", "End": True},
}


def run(local_cloud: LocalCloud, definition: str, execution_input: Any) -> Any:
    machine = local_cloud.sfn.create_state_machine(name="fan", definition=definition, roleArn=ROLE)
    return local_cloud.run(machine["stateMachineArn"], execution_input)


def test_items_are_batched_after_their_selection(local_cloud: LocalCloud):
    # Given a Distributed Map that selects each item, then batches two at a time with a BatchInput
    definition = distributed_map(
        ECHO,
        "Echo",
        ItemSelector={"n.$": "$$.Map.Item.Value", "index.$": "$$.Map.Item.Index"},
        ItemBatcher={"MaxItemsPerBatchPath": "$perBatch", "BatchInput": {"run.$": "$.run"}},
    )
    # When it runs over five items
    result = run(local_cloud, definition, {"run": "r-1", "items": [10, 20, 30, 40, 50]})
    # Then each child had one batch of selected items, BatchInput first, the last batch shorter
    assert result.status == "SUCCEEDED"
    assert result.output == [
        {"BatchInput": {"run": "r-1"}, "Items": [{"n": 10, "index": 0}, {"n": 20, "index": 1}]},
        {"BatchInput": {"run": "r-1"}, "Items": [{"n": 30, "index": 2}, {"n": 40, "index": 3}]},
        {"BatchInput": {"run": "r-1"}, "Items": [{"n": 50, "index": 4}]},
    ]


def test_an_express_item_processor_is_accepted_and_runs_its_children(local_cloud: LocalCloud):
    # Given a Distributed Map whose children are Express workflows, as AWS documents (moto's grammar
    # knew STANDARD only: fix 88), written over several lines
    document = json.loads(distributed_map(FAILS_ON_TWO, "Check", ToleratedFailureCount=1))
    document["States"]["Fan"]["ItemProcessor"]["ProcessorConfig"]["ExecutionType"] = "EXPRESS"
    definition = json.dumps(document, indent=2)
    # When it is validated and runs over three items
    verdict = local_cloud.sfn.validate_state_machine_definition(definition=definition)
    result = run(local_cloud, definition, {"items": [1, 2, 3]})
    # Then it is valid, each child ran, and the one failure was tolerated
    assert verdict["result"] == "OK", verdict["diagnostics"]
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == [1, None, 3]


def test_a_jsonata_batcher_evaluates_its_limits():
    # The grouping itself: by count, and by the child input's size in bytes
    assert batches([1, 2, 3], 2, 1024, None) == [{"Items": [1, 2]}, {"Items": [3]}]
    assert batches(["aaaa", "bbbb", "cccc"], None, len('{"Items":["aaaa","bbbb"]}'), None) == [
        {"Items": ["aaaa", "bbbb"]},
        {"Items": ["cccc"]},
    ]


def test_a_jsonata_map_batches_by_its_expressions(local_cloud: LocalCloud):
    definition = json.dumps(
        {
            "QueryLanguage": "JSONata",
            "StartAt": "Fan",
            "States": {
                "Fan": {
                    "Type": "Map",
                    "Items": "{% $states.input.items %}",
                    "ItemBatcher": {"MaxItemsPerBatch": "{% $states.input.size %}"},
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                        "StartAt": "Echo",
                        "States": {"Echo": {"Type": "Pass", "End": True}},
                    },
                    "End": True,
                }
            },
        }
    )
    result = run(local_cloud, definition, {"size": 3, "items": [1, 2, 3, 4]})
    assert result.output == [{"Items": [1, 2, 3]}, {"Items": [4]}]


def test_a_failed_child_fails_the_map_run_unless_tolerated(local_cloud: LocalCloud):
    # When one child of three fails and nothing is tolerated
    failed = run(local_cloud, distributed_map(FAILS_ON_TWO, "Check"), {"items": [1, 2, 3]})
    # Then the map run, and the execution, fail with the threshold's error
    assert (failed.status, failed.error, failed.cause) == (
        "FAILED",
        "States.ExceedToleratedFailureThreshold",
        THRESHOLD_EXCEEDED_CAUSE,
    )
    assert "MapRunFailed" in [event["type"] for event in failed.history]
    (map_run,) = local_cloud.sfn.list_map_runs(executionArn=failed.arn)["mapRuns"]
    assert local_cloud.sfn.describe_map_run(mapRunArn=map_run["mapRunArn"])["status"] == "FAILED"


@pytest.mark.parametrize(
    ("tolerance", "status"),
    [
        ({"ToleratedFailureCount": 1}, "SUCCEEDED"),
        ({"ToleratedFailurePercentage": 50}, "SUCCEEDED"),
        ({"ToleratedFailurePercentage": 20}, "FAILED"),
    ],
)
def test_a_tolerance_lets_the_map_run_succeed(
    local_cloud: LocalCloud, tolerance: dict[str, Any], status: str
):
    # One failure in three items is 33%: tolerated by a count of 1 or 50%, not by 20%
    result = run(local_cloud, distributed_map(FAILS_ON_TWO, "Check", **tolerance), {"items": [1, 2, 3]})
    assert result.status == status


def test_update_map_run_raises_the_concurrency_of_a_running_map_run(local_cloud: LocalCloud):
    # Given a map run of three children, one at a time, whose first child waits for the test
    release = threading.Event()
    started: list[Any] = []

    def hold_the_first(event: Any, context: Any) -> Any:
        started.append(event)
        if len(started) == 1 and not release.wait(GATE_TIMEOUT_SECONDS):
            raise TimeoutError("never released")
        return event

    function = local_cloud.add_function("hold", hold_the_first)
    worker = {"Work": {"Type": "Task", "Resource": function.arn, "End": True}}
    machine = local_cloud.sfn.create_state_machine(
        name="fan", definition=distributed_map(worker, "Work", MaxConcurrency=1), roleArn=ROLE
    )
    arn = local_cloud.start_execution(machine["stateMachineArn"], {"items": [1, 2, 3]})
    local_cloud.wait_until(lambda: len(started) == 1, what="the first child")
    (map_run,) = local_cloud.sfn.list_map_runs(executionArn=arn)["mapRuns"]
    # When its concurrency is raised while the first child still runs
    local_cloud.sfn.update_map_run(mapRunArn=map_run["mapRunArn"], maxConcurrency=3)
    # Then the other children start without waiting for the first
    local_cloud.wait_until(lambda: len(started) == 3, what="the other children")
    release.set()
    result = local_cloud.wait(arn)
    assert (result.status, result.output) == ("SUCCEEDED", [1, 2, 3])
    assert local_cloud.sfn.describe_map_run(mapRunArn=map_run["mapRunArn"])["maxConcurrency"] == 3


def test_update_map_run_tolerates_failures_of_a_running_map_run(local_cloud: LocalCloud):
    release = threading.Event()

    def fails_after_release(event: Any, context: Any) -> Any:
        if not release.wait(GATE_TIMEOUT_SECONDS):
            raise TimeoutError("never released")
        raise RuntimeError("bad item")

    function = local_cloud.add_function("bad", fails_after_release)
    worker = {"Work": {"Type": "Task", "Resource": function.arn, "End": True}}
    machine = local_cloud.sfn.create_state_machine(
        name="fan", definition=distributed_map(worker, "Work"), roleArn=ROLE
    )
    arn = local_cloud.start_execution(machine["stateMachineArn"], {"items": [1]})
    local_cloud.wait_until(
        lambda: bool(local_cloud.sfn.list_map_runs(executionArn=arn)["mapRuns"]), what="the map run"
    )
    (map_run,) = local_cloud.sfn.list_map_runs(executionArn=arn)["mapRuns"]
    # When the running map run is told to tolerate every failure, then its failed child is tolerated
    local_cloud.sfn.update_map_run(mapRunArn=map_run["mapRunArn"], toleratedFailurePercentage=100)
    release.set()
    assert local_cloud.wait(arn).status == "SUCCEEDED"


# -- EventBridge and SNS ---------------------------------------------------------------------------


def test_a_delivered_event_names_its_account(local_cloud: LocalCloud):
    # Given a rule that sends every event of a source to a queue
    sqs = local_cloud.client("sqs")
    queue = sqs.create_queue(QueueName="seen")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    local_cloud.events.put_rule(Name="all", EventPattern=json.dumps({"source": ["shop"]}))
    local_cloud.events.put_targets(Rule="all", Targets=[{"Id": "q", "Arn": queue_arn}])
    # When an event is put, then the queue receives it with the account that sent it
    local_cloud.put_event("shop", "OrderPlaced", {"orderId": "o-1"})
    (message,) = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=0)["Messages"]
    assert json.loads(message["Body"])["account"] == local_cloud.account


def test_put_events_answers_each_entry_and_the_task_fails_with_the_answer(local_cloud: LocalCloud):
    # Given a Task that puts two events, the second with a Detail that is JSON but no object
    definition = json.dumps(
        {
            "StartAt": "Put",
            "States": {
                "Put": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::events:putEvents",
                    "Parameters": {"Entries.$": "$.entries"},
                    "End": True,
                }
            },
        }
    )
    good = {"Source": "shop", "DetailType": "Placed", "Detail": "{}"}
    bad = {"Source": "shop", "DetailType": "Placed", "Detail": json.dumps("a string")}
    result = run(local_cloud, definition, {"entries": [good, bad]})
    # Then the Task fails with EventBridge's per-entry answer, as JSON text, in order
    assert (result.status, result.error) == ("FAILED", "EventBridge.FailedEntry")
    answer = json.loads(result.cause)
    assert answer["FailedEntryCount"] == 1
    assert "EventId" in answer["Entries"][0]
    assert answer["Entries"][1] == {"ErrorCode": "MalformedDetail", "ErrorMessage": "Detail is malformed."}


@pytest.mark.parametrize(
    ("asked", "version", "digest"), [(None, "1", hashes.SHA1()), ("2", "2", hashes.SHA256())]
)
def test_an_sns_notification_is_signed_as_its_topic_asks(
    local_cloud: LocalCloud, asked: str | None, version: str, digest: hashes.HashAlgorithm
):
    # Given a topic (asking for a signature version, or not) with a queue subscribed
    sns, sqs = local_cloud.client("sns"), local_cloud.client("sqs")
    topic = sns.create_topic(Name="orders", Attributes={"SignatureVersion": asked} if asked else {})[
        "TopicArn"
    ]
    queue = sqs.create_queue(QueueName="copies")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    # When a message with a subject is published
    sns.publish(TopicArn=topic, Message="placed", Subject="order o-1")
    (message,) = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=0)["Messages"]
    notification = json.loads(message["Body"])
    # Then it says the version, and its signature verifies with that digest over the subject too
    assert notification["SignatureVersion"] == version
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sns.models import sns_backends

    key_name = notification["SigningCertURL"].rsplit("/", 1)[-1]
    pem = sns_backends[DEFAULT_ACCOUNT_ID][local_cloud.region]._message_public_keys[key_name]
    public_key = x509.load_pem_x509_certificate(pem).public_key()
    assert "Subject\norder o-1\n" in string_to_sign(notification)
    public_key.verify(  # type: ignore[call-arg]
        base64.b64decode(notification["Signature"]),
        string_to_sign(notification).encode(),
        padding.PKCS1v15(),
        digest,
    )


def reader_map(input_type: str, key: str) -> str:
    return json.dumps(
        {
            "StartAt": "Fan",
            "States": {
                "Fan": {
                    "Type": "Map",
                    "ItemReader": {
                        "Resource": "arn:aws:states:::s3:getObject",
                        "ReaderConfig": {"InputType": input_type},
                        "Parameters": {"Bucket": "items", "Key": key},
                    },
                    "ItemProcessor": {
                        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                        "StartAt": "Echo",
                        "States": {"Echo": {"Type": "Pass", "End": True}},
                    },
                    "End": True,
                }
            },
        }
    )


def test_a_map_reads_json_lines(local_cloud: LocalCloud):
    # Given an object of JSON Lines, a blank line among them
    s3 = local_cloud.client("s3")
    s3.create_bucket(Bucket="items")
    s3.put_object(Bucket="items", Key="orders.jsonl", Body=b'{"id": 1}\n\n{"id": 2}\n"three"\n')
    # When a Distributed Map reads it, then each line was an item
    result = run(local_cloud, reader_map("JSONL", "orders.jsonl"), {})
    assert (result.status, result.output) == ("SUCCEEDED", [{"id": 1}, {"id": 2}, "three"])


def test_a_map_reads_the_objects_an_inventory_manifest_lists(local_cloud: LocalCloud):
    # Given an S3 inventory: a manifest naming two gzipped CSV files of objects
    import gzip

    s3 = local_cloud.client("s3")
    s3.create_bucket(Bucket="items")
    s3.put_object(Bucket="items", Key="inv/a.csv.gz", Body=gzip.compress(b'"photos","a.jpg","10"\n'))
    s3.put_object(Bucket="items", Key="inv/b.csv.gz", Body=gzip.compress(b'"photos","b.jpg","20"\n'))
    manifest = {
        "sourceBucket": "photos",
        "destinationBucket": "arn:aws:s3:::items",
        "fileFormat": "CSV",
        "fileSchema": "Bucket, Key, Size",
        "files": [{"key": "inv/a.csv.gz"}, {"key": "inv/b.csv.gz"}],
    }
    s3.put_object(Bucket="items", Key="inv/manifest.json", Body=json.dumps(manifest).encode())
    # When a Distributed Map reads the manifest, then each listed object was an item
    result = run(local_cloud, reader_map("MANIFEST", "inv/manifest.json"), {})
    assert (result.status, result.output) == (
        "SUCCEEDED",
        [
            {"Bucket": "photos", "Key": "a.jpg", "Size": "10"},
            {"Bucket": "photos", "Key": "b.jpg", "Size": "20"},
        ],
    )


def test_an_item_source_that_cannot_be_read_fails_the_reader(local_cloud: LocalCloud):
    # Given JSON Lines with a line that is not JSON, then the Map fails with States.ItemReaderFailed
    s3 = local_cloud.client("s3")
    s3.create_bucket(Bucket="items")
    s3.put_object(Bucket="items", Key="bad.jsonl", Body=b'{"id": 1}\n{oops\n')
    result = run(local_cloud, reader_map("JSONL", "bad.jsonl"), {})
    assert (result.status, result.error) == ("FAILED", "States.ItemReaderFailed")
    assert (result.cause or "").startswith("The JSONL item source could not be read")


def test_an_item_source_s3_refuses_fails_the_reader_with_s3_s_answer(local_cloud: LocalCloud):
    # Given a Map reading an object that is not there (fix 107; moto's cause was botocore's words)
    local_cloud.client("s3").create_bucket(Bucket="items")
    result = run(local_cloud, reader_map("JSON", "absent.json"), {})
    # Then the reader failed, its cause S3's answer as the SDK for Java words it
    assert (result.status, result.error) == ("FAILED", "States.ItemReaderFailed")
    assert (result.cause or "").startswith(
        "The specified key does not exist. (Service: S3, Status Code: 404,"
    )
    assert "GetObject operation" not in (result.cause or "")


def test_a_map_over_every_object_of_a_prefix_reads_every_page_and_an_empty_one_is_no_items(
    local_cloud: LocalCloud,
):
    # Given a Map over the objects of a prefix (ListObjectsV2): 1,005 of them, then none
    s3 = local_cloud.client("s3")
    s3.create_bucket(Bucket="items")
    for number in range(1005):
        s3.put_object(Bucket="items", Key=f"in/{number:04}.json", Body=b"{}")
    listing = json.loads(reader_map("JSON", "unused"))
    listing["States"]["Fan"]["ItemReader"] = {
        "Resource": "arn:aws:states:::s3:listObjectsV2",
        "Parameters": {"Bucket": "items", "Prefix.$": "$.prefix"},
    }
    listing["States"]["Fan"]["ItemSelector"] = {"key.$": "$$.Map.Item.Value.Key"}
    # When it runs over each, then every object (past the first page of 1,000) was an item
    full = run(local_cloud, json.dumps(listing), {"prefix": "in/"})
    assert full.status == "SUCCEEDED"
    assert [item["key"] for item in full.output] == [f"in/{number:04}.json" for number in range(1005)]
    # And a prefix with no object is a Map over no item (moto failed on the answer's missing Contents)
    empty = run(local_cloud, json.dumps(listing), {"prefix": "none/"})
    assert (empty.status, empty.output) == ("SUCCEEDED", [])


def test_a_batch_task_speaks_pascal_case_and_fails_with_batch_s_named_error(local_cloud: LocalCloud):
    # Given a submitJob.sync Task as Step Functions' docs write it (PascalCase), for a job
    # definition that does not exist (a public app's, stood in for); moto passed "JobName" on to
    # Batch's camelCase API and failed with a KeyError's text (fix 95)
    definition = json.dumps(
        {
            "StartAt": "Submit",
            "States": {
                "Submit": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::batch:submitJob.sync",
                    "Parameters": {
                        "JobName": "nightly-report",
                        "JobQueue": "arn:aws:batch:us-east-1:123456789012:job-queue/reports",
                        "JobDefinition": "arn:aws:batch:us-east-1:123456789012:job-definition/report:1",
                        "ContainerOverrides": {"Environment": [{"Name": "DAY", "Value": "monday"}]},
                    },
                    "End": True,
                }
            },
        }
    )
    # When it runs
    result = run(local_cloud, definition, {})
    # Then Batch itself answered, and the Task failed with Batch's error and AWS's cause wording
    assert (result.status, result.error) == ("FAILED", "Batch.ClientException")
    assert result.cause.startswith(
        "Error executing request, Exception : Job definition "
        "arn:aws:batch:us-east-1:123456789012:job-definition/report:1 does not exist, RequestId: "
    )


def test_an_athena_sync_task_waits_for_its_query_and_an_unrun_pattern_fails_by_name(local_cloud: LocalCloud):
    # Given a startQueryExecution.sync Task (8 public apps use it) and a codebuild .sync the engine
    # does not run; moto answered both with a RuntimeError's text (fix 96)
    def task(resource: str, parameters: dict[str, Any]) -> str:
        return json.dumps(
            {
                "StartAt": "Job",
                "States": {
                    "Job": {"Type": "Task", "Resource": resource, "Parameters": parameters, "End": True}
                },
            }
        )

    query = task(
        "arn:aws:states:::athena:startQueryExecution.sync",
        {
            "QueryString": "SELECT 1",
            "WorkGroup": "primary",
            "ResultConfiguration": {"OutputLocation": "s3://results/"},
        },
    )
    build = task("arn:aws:states:::codebuild:startBuild.sync", {"ProjectName": "site"})
    # When each runs
    queried = run(local_cloud, query, {})
    built = local_cloud.run(
        local_cloud.sfn.create_state_machine(name="build", definition=build, roleArn=ROLE)["stateMachineArn"],
        {},
    )
    # Then the query's Task ended with GetQueryExecution's answer, once its query had succeeded
    assert queried.status == "SUCCEEDED", queried.cause
    assert queried.output["QueryExecution"]["Status"]["State"] == "SUCCEEDED"
    assert queried.output["QueryExecution"]["Query"] == "SELECT 1"
    task_events = [e["type"] for e in queried.history if e["type"] in ("TaskSubmitted", "TaskSucceeded")]
    assert task_events == ["TaskSubmitted", "TaskSucceeded"]
    # And the build failed as the state's own runtime error, in words, not Python's
    assert (built.status, built.error) == ("FAILED", "States.Runtime")
    assert built.cause.endswith(
        "The local engine does not run the .sync pattern of arn:aws:states:::codebuild:startBuild.sync"
    )


def test_an_athena_sync_task_waits_while_its_query_runs_and_fails_with_a_failed_query(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    from moto.athena.models import Execution
    from moto.moto_api import state_manager

    # Given a query that is still running at its first two looks, then a query that fails
    definition = json.dumps(
        {
            "StartAt": "Query",
            "States": {
                "Query": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::athena:startQueryExecution.sync",
                    "Parameters": {"QueryString": "SELECT 1", "WorkGroup": "primary"},
                    "End": True,
                }
            },
        }
    )
    state_manager.set_transition(
        model_name="athena::execution", transition={"progression": "manual", "times": 2}
    )
    try:
        waited = run(local_cloud, definition, {})
    finally:
        state_manager.unset_transition("athena::execution")
    monkeypatch.setattr(Execution, "status", property(lambda _self: "FAILED"))
    failed = local_cloud.run(
        local_cloud.sfn.create_state_machine(name="failing", definition=definition, roleArn=ROLE)[
            "stateMachineArn"
        ],
        {},
    )
    # Then the first ended when its query had succeeded, and the second failed as the job's failure
    assert waited.status == "SUCCEEDED", waited.cause
    assert waited.output["QueryExecution"]["Status"]["State"] == "SUCCEEDED"
    assert (failed.status, failed.error) == ("FAILED", "States.TaskFailed")
    assert json.loads(failed.cause)["QueryExecution"]["Status"]["State"] == "FAILED"


def test_a_bedrock_invoke_model_task_calls_bedrock_runtime_and_reads_its_body_as_json(
    local_cloud: LocalCloud,
):
    # Given an InvokeModel Task as the integration's docs write it (fix 108: moto called the
    # Bedrock control plane's client, which has no InvokeModel, and failed with Python's words)
    task = {
        "Type": "Task",
        "Resource": "arn:aws:states:::bedrock:invokeModel",
        "Parameters": {"ModelId": "anthropic.claude-v2", "Body": {"prompt.$": "$.prompt"}},
        "End": True,
    }
    definition = json.dumps({"StartAt": "Invoke", "States": {"Invoke": task}})
    # When it runs, then its result is Bedrock Runtime's answer (moto's model answers {}), its body JSON
    result = run(local_cloud, definition, {"prompt": "Human: hi Assistant:"})
    assert (result.status, result.output) == ("SUCCEEDED", {"Body": {}, "ContentType": "application/json"})
    # And an action the service's SDK does not have fails as States.Runtime, naming it
    task["Resource"] = "arn:aws:states:::bedrock:inventedAction"
    invented = json.dumps({"StartAt": "Invoke", "States": {"Invoke": task}})
    failed = local_cloud.run(local_cloud.create_state_machine("invented", invented, {}), {"prompt": "x"})
    assert (failed.status, failed.error) == ("FAILED", "States.Runtime")
    assert "bedrock has no action invented_action" in (failed.cause or "")
    assert "AttributeError" not in (failed.cause or "")
