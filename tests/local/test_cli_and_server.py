"""`sfn-idempotency serve` as a subprocess on a loopback port, driven by boto3, our CLI and the AWS CLI."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from botocore.config import Config

from sfn_idempotency.cli.serve import report_failures
from sfn_idempotency.deployed.executions import wait_for_execution
from sfn_idempotency.flow.graph import mermaid
from sfn_idempotency.flow.resources import IDEMPOTENCY_ASL
from sfn_idempotency.lambdas.compute_key.computation import key_of
from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.engine.backends import ServerBackend
from sfn_idempotency.settings import example_settings
from tests import REPOSITORY_ROOT
from tests.servers import CLI, clean_environment, free_port, read_ready_line, start_server

BIN = Path(sys.executable).parent

COMMAND_DEADLINE_SECONDS = 60


@dataclass
class Server:
    process: subprocess.Popen[str]
    ready: dict[str, Any]

    @property
    def endpoint(self) -> str:
        return str(self.ready["endpoint"])

    def client(self, service: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=self.ready["region"],
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    process = start_server()
    try:
        yield Server(process, read_ready_line(process))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(COMMAND_DEADLINE_SECONDS)


def run_command(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env=clean_environment(),
        timeout=COMMAND_DEADLINE_SECONDS,
        check=False,
    )


def cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    return run_command(CLI, *arguments)


def poll(condition: Callable[[], Any], what: str) -> Any:
    """The first truthy value of ``condition``, polled until a deadline."""
    deadline = time.monotonic() + COMMAND_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"not within {COMMAND_DEADLINE_SECONDS} s: {what}")


def test_ready_line_names_endpoint_state_machine_and_table(server: Server):
    assert server.endpoint.startswith("http://127.0.0.1:")
    assert server.ready["region"] == "us-east-1"
    assert server.ready["stateMachineArns"] == [
        "arn:aws:states:us-east-1:123456789012:stateMachine:idempotency",
        "arn:aws:states:us-east-1:123456789012:stateMachine:order-events",
        "arn:aws:states:us-east-1:123456789012:stateMachine:order-pipeline",
    ]
    assert server.ready["claimReleaseStateMachineArns"] == [
        "arn:aws:states:us-east-1:123456789012:stateMachine:idempotency-release",
        "arn:aws:states:us-east-1:123456789012:stateMachine:order-events-release",
    ]
    assert server.ready["expressStateMachineArns"] == [
        "arn:aws:states:us-east-1:123456789012:stateMachine:order-pipeline-inline",
        "arn:aws:states:us-east-1:123456789012:stateMachine:sqs-batch",
        "arn:aws:states:us-east-1:123456789012:stateMachine:http-orders",
    ]
    assert server.ready["apiEndpoint"].startswith("http://127.0.0.1:")
    assert server.ready["tableName"] == "idempotency-table"
    assert server.ready["console"] == f"{server.endpoint}/"


def test_the_console_is_served_read_only_beside_the_apis(server: Server):
    # When a browser loads the endpoint's root, and an SDK signs a GET / (S3 ListBuckets)
    page = httpx.get(server.ready["console"])
    graph_library = httpx.get(f"{server.endpoint}/console/vendor/dagre.min.js")
    outside = httpx.get(f"{server.endpoint}/console/%2e%2e/__init__.py")
    buckets = server.client("s3").list_buckets()

    # Then the page comes with its settings (actions off), a policy against injected script, and
    # the graph library; nothing outside the console's files is served; the SDK still reaches S3
    assert page.status_code == 200
    assert '<meta name="sfn-console-actions" content="off">' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert graph_library.status_code == 200
    assert graph_library.headers["content-type"].startswith("text/javascript")
    assert outside.status_code == 404
    assert buckets["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_serving_beyond_loopback_warns_that_there_is_no_authentication():
    # When serve listens on every address, with the console's actions asked for
    process = subprocess.Popen(
        [CLI, "serve", "--host", "0.0.0.0", "--port", str(free_port()), "--console-actions"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_environment(),
    )
    try:
        ready = read_ready_line(process)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=COMMAND_DEADLINE_SECONDS)

    # Then it said so before it was ready, actions included
    assert ready["console"].startswith("http://0.0.0.0:")
    assert "not loopback, with no authentication" in stderr
    assert "console's actions" in stderr


def test_boto3_over_http_runs_first_and_duplicate(server: Server):
    # Given boto3 clients pointed at the endpoint
    sfn, dynamodb = server.client("stepfunctions"), server.client("dynamodb")
    machine = server.ready["stateMachineArns"][0]
    order = json.dumps({"orderId": "http-1", "amount": 12})

    # When an order and its duplicate are started and waited for
    outputs = []
    for _ in range(2):
        arn = sfn.start_execution(stateMachineArn=machine, input=order)["executionArn"]
        description = wait_for_execution(sfn, arn, COMMAND_DEADLINE_SECONDS)
        assert description["status"] == "SUCCEEDED"
        outputs.append((description["output"], sfn.get_execution_history(executionArn=arn)["events"]))

    # Then the duplicate replayed the first output, as the history shows
    (first_output, first_history), (second_output, second_history) = outputs
    assert second_output == first_output
    entered = [
        e["stateEnteredEventDetails"]["name"] for e in second_history if "stateEnteredEventDetails" in e
    ]
    assert entered[-1] == "Replay"
    assert "Execute" in [
        e["stateEnteredEventDetails"]["name"] for e in first_history if "stateEnteredEventDetails" in e
    ]
    # And the table holds one COMPLETED record for it
    items = dynamodb.scan(TableName=server.ready["tableName"])["Items"]
    completed = [
        i
        for i in items
        if json.loads(i.get("data", {}).get("S", "null") or "null") == json.loads(first_output)
    ]
    assert len(completed) == 1
    key = completed[0]["id"]
    assert dynamodb.get_item(TableName=server.ready["tableName"], Key={"id": key})["Item"]["status"] == {
        "S": "COMPLETED"
    }


def test_a_stopped_execution_has_its_claim_released_through_serve(server: Server):
    # Given an execution holding its claim while the business step runs (the demo's delay hook)
    sfn, dynamodb = server.client("stepfunctions"), server.client("dynamodb")
    order = {"orderId": "http-stopped", "amount": 3, "simulate": {"delaySeconds": 2}}
    key = {"id": {"S": key_of(order, example_settings({}))}}
    table = server.ready["tableName"]
    arn = sfn.start_execution(stateMachineArn=server.ready["stateMachineArns"][0], input=json.dumps(order))
    poll(lambda: "Item" in dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True), "the claim")

    # When it is stopped, as AWS's StopExecution stops it (no Catch sees that)
    sfn.stop_execution(executionArn=arn["executionArn"])

    # Then the release workflow that serve deployed deletes the claim (the lease alone would leave
    # it INPROGRESS for minutes; nothing else deletes it)
    poll(
        lambda: "Item" not in dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True), "the release"
    )


def test_an_unknown_operation_answers_json_over_http(server: Server):
    # Given an operation the engine does not know, sent as any SDK sends it
    request = httpx.post(
        server.endpoint,
        headers={
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": "AWSStepFunctions.RewindExecution",
            "Authorization": "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/states/aws4_request, "
            "SignedHeaders=host, Signature=0",
        },
        content=b'{"executionArn": "arn:aws:states:us-east-1:123456789012:execution:m:e"}',
    )
    # Then the answer is AWS's JSON error for an unknown operation, never an HTML page
    assert request.status_code == 400
    assert request.json()["__type"].endswith("#UnknownOperationException")


def test_cli_start_prints_output_and_replays(server: Server):
    order = json.dumps({"orderId": "cli-1", "amount": 3})
    first = cli("start", "--endpoint-url", server.endpoint, "--input", order)
    second = cli("start", "--endpoint-url", server.endpoint, "--input", order)
    assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
    assert json.loads(first.stdout)["orderId"] == "cli-1"
    assert second.stdout == first.stdout


def test_cli_start_reads_input_from_a_file(server: Server, tmp_path: Path):
    event = tmp_path / "order.json"
    event.write_text(json.dumps({"orderId": "cli-file", "amount": 1}))
    result = cli("start", "--endpoint-url", server.endpoint, "--input", f"@{event}")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["orderId"] == "cli-file"


def test_cli_start_failure_prints_error_and_cause_and_exits_1(server: Server):
    result = cli(
        "start", "--endpoint-url", server.endpoint, "--input", '{"orderId": "cli-bad", "amount": -1}'
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("FAILED: InvalidOrderError\n")
    assert "amount must be a positive number" in result.stderr


def test_cli_start_no_wait_prints_the_execution_arn(server: Server):
    result = cli(
        "start",
        "--endpoint-url",
        server.endpoint,
        "--no-wait",
        "--name",
        "named-1",
        "--input",
        '{"orderId": "nw"}',
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["executionArn"].endswith(":execution:idempotency:named-1")


def test_cli_record_and_forget(server: Server):
    # Given a completed order
    order = '{"orderId": "cli-rec", "amount": 8}'
    placed = json.loads(cli("start", "--endpoint-url", server.endpoint, "--input", order).stdout)

    # When its record is shown, Then it reads as a human would want it
    shown = cli("record", "--endpoint-url", server.endpoint, "--input", order)
    assert shown.returncode == 0, shown.stderr
    assert "status      COMPLETED" in shown.stdout
    assert "owner       arn:aws:states:us-east-1:123456789012:execution:idempotency:" in shown.stdout
    assert "(in 1 h)" in shown.stdout
    assert placed["placedOrderId"] in shown.stdout

    # And forget refuses without --yes, then deletes, and the next run places the order again
    assert cli("forget", "--endpoint-url", server.endpoint, "--input", order).returncode == 2
    forgot = cli("forget", "--endpoint-url", server.endpoint, "--input", order, "--yes")
    assert forgot.returncode == 0, forgot.stderr
    assert forgot.stdout.startswith("forgot orders#")
    assert cli("record", "--endpoint-url", server.endpoint, "--input", order).returncode == 1
    again = json.loads(cli("start", "--endpoint-url", server.endpoint, "--input", order).stdout)
    assert again["placedOrderId"] != placed["placedOrderId"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["start", "--input", "{not json"], "input is not valid JSON"),
        (["start", "--input", "@/no/such/order.json"], "cannot read /no/such/order.json"),
        (
            [
                "start",
                "--input",
                "{}",
                "--state-machine",
                "arn:aws:states:us-east-1:123456789012:stateMachine:nope",
            ],
            "StateMachineDoesNotExist",
        ),
        (["record", "--key", "orders#x", "--table", "no-such-table"], "ResourceNotFoundException"),
        (["record", "--input", '{"amount": 1}'], "the event has no idempotency key"),
        (["record", "--input", "{}", "--hash-function", "md6"], "IDEMPOTENCY_HASH_FUNCTION: 'md6'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(server: Server, arguments: list[str], message: str):
    result = cli(*arguments, "--endpoint-url", server.endpoint)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("sfn-idempotency: error: ")
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_unreachable_endpoint_and_taken_port_are_bad_input(server: Server):
    unreachable = cli("start", "--endpoint-url", f"http://127.0.0.1:{free_port()}", "--input", "{}")
    taken = cli("serve", "--port", server.endpoint.rsplit(":", 1)[1])
    for result, message in (
        (unreachable, "Could not connect to the endpoint URL"),
        (taken, "Address already in use"),
    ):
        assert result.returncode == 2
        assert message in result.stderr
        assert "Traceback" not in result.stderr


def test_aws_cli_starts_and_describes_an_execution(server: Server):
    aws = str(BIN / "aws")
    common = ["--endpoint-url", server.endpoint, "--output", "json"]
    machine = server.ready["stateMachineArns"][0]
    order = '{"orderId": "awscli-1", "amount": 2}'
    started = run_command(
        aws, "stepfunctions", "start-execution", "--state-machine-arn", machine, "--input", order, *common
    )
    assert started.returncode == 0, started.stderr
    arn = json.loads(started.stdout)["executionArn"]
    wait_for_execution(server.client("stepfunctions"), arn, COMMAND_DEADLINE_SECONDS)
    described = run_command(aws, "stepfunctions", "describe-execution", "--execution-arn", arn, *common)
    assert described.returncode == 0, described.stderr
    description = json.loads(described.stdout)
    assert description["status"] == "SUCCEEDED"
    assert json.loads(description["output"])["orderId"] == "awscli-1"


def test_put_events_on_the_endpoint_starts_the_event_workflow(server: Server):
    # Given an order already placed directly
    order = {"orderId": "evt-http", "amount": 4}
    direct = cli("start", "--endpoint-url", server.endpoint, "--input", json.dumps(order))
    assert direct.returncode == 0, direct.stderr

    # When the same order arrives as an EventBridge event on the endpoint
    events, sfn = server.client("events"), server.client("stepfunctions")
    events.put_events(
        Entries=[{"Source": "orders", "DetailType": "OrderPlaced", "Detail": json.dumps(order)}]
    )
    event_machine = server.ready["stateMachineArns"][1]
    done = poll(
        lambda: [
            e
            for e in sfn.list_executions(stateMachineArn=event_machine)["executions"]
            if e["status"] != "RUNNING"
        ],
        "the event workflow's execution",
    )

    # Then the event workflow replayed the direct run: same key (same prefix, same order id)
    (execution,) = done
    description = sfn.describe_execution(executionArn=execution["executionArn"])
    assert description["status"] == "SUCCEEDED"
    assert json.loads(description["output"]) == json.loads(direct.stdout)


def test_server_stops_cleanly_on_sigterm():
    # Given a second server of its own
    process = start_server()
    read_ready_line(process)

    # When it receives SIGTERM
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=COMMAND_DEADLINE_SECONDS)

    # Then it exits 0 after closing
    assert process.returncode == 0
    assert "stopped" in stderr
    assert "Traceback" not in stderr


def test_graph_is_the_asl_and_the_readme_embeds_it():
    result = cli("graph")
    assert result.returncode == 0
    assert result.stdout == mermaid(IDEMPOTENCY_ASL)
    states = json.loads(IDEMPOTENCY_ASL.read_text())["States"]
    assert all(name in result.stdout for name in states)
    assert (
        f"```mermaid\n{result.stdout}```" in (REPOSITORY_ROOT / "docs" / "concepts" / "flow.md").read_text()
    )


def test_serve_sends_status_change_events_also_for_a_stop(server: Server):
    # Given a queue subscribed to Step Functions' status change events, and a long-running machine
    sqs, events, sfn = server.client("sqs"), server.client("events"), server.client("stepfunctions")
    queue_url = sqs.create_queue(QueueName="status-changes")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    pattern = {"source": ["aws.states"], "detail-type": ["Step Functions Execution Status Change"]}
    events.put_rule(Name="status-changes", EventPattern=json.dumps(pattern))
    events.put_targets(Rule="status-changes", Targets=[{"Id": "queue", "Arn": queue_arn}])
    definition = {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 1, "End": True}}}
    machine = sfn.create_state_machine(
        name="waits", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/r"
    )["stateMachineArn"]

    # When an execution is stopped through the endpoint
    execution = sfn.start_execution(stateMachineArn=machine)["executionArn"]
    poll(
        lambda: sfn.get_execution_history(executionArn=execution)["events"][-1]["type"] == "WaitStateEntered",
        "the Wait state",
    )
    sfn.stop_execution(executionArn=execution)
    assert wait_for_execution(sfn, execution, COMMAND_DEADLINE_SECONDS)["status"] == "ABORTED"

    # Then the bus got RUNNING and ABORTED for it, as Step Functions sends them
    def statuses() -> list[str]:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        details = [json.loads(m["Body"])["detail"] for m in messages]
        return [d["status"] for d in details if d["executionArn"] == execution]

    seen: list[str] = []

    def aborted_seen() -> bool:
        seen.extend(statuses())
        return "ABORTED" in seen

    poll(aborted_seen, "the ABORTED event")
    assert seen == ["RUNNING", "ABORTED"]


def test_serve_runs_the_inline_pipeline_through_start_sync_execution(server: Server):
    # Given the Express order pipeline, its PlaceOrder wrapped inline, and two synchronous callers
    # (SDKs send StartSyncExecution to a "sync-" host prefix; a local endpoint needs that switched off)
    pipeline = server.ready["expressStateMachineArns"][0]
    sync_client = boto3.client(
        "stepfunctions",
        endpoint_url=server.endpoint,
        region_name=server.ready["region"],
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(inject_host_prefix=False),
    )

    def aws_cli(order: dict[str, Any]) -> dict[str, Any]:
        return aws_stepfunctions(
            server, "start-sync-execution", "--state-machine-arn", pipeline, "--input", json.dumps(order)
        )

    # When boto3 places an order and the AWS CLI sends the same order again
    order = {"orderId": "o-sync", "amount": 3}
    first = sync_client.start_sync_execution(stateMachineArn=pipeline, input=json.dumps(order))
    again = aws_cli(order)

    # Then both answers carry the same output: the CLI's run replayed the first
    assert first["status"] == again["status"] == "SUCCEEDED"
    assert json.loads(again["output"]) == json.loads(first["output"])
    assert json.loads(first["output"])["order"]["status"] == "PLACED"

    # And a business failure comes back as the business error, its claim released
    failed = aws_cli({"orderId": "o-sync-fail", "amount": 3, "simulate": {"error": "PaymentGatewayTimeout"}})
    assert (failed["status"], failed["error"]) == ("FAILED", "PaymentGatewayTimeout")
    dynamodb = server.client("dynamodb")
    ids = {item["id"]["S"] for item in dynamodb.scan(TableName=server.ready["tableName"])["Items"]}
    settings = example_settings({})
    assert key_of(order, settings) in ids
    assert key_of({"orderId": "o-sync-fail"}, settings) not in ids


def test_the_aws_cli_tests_and_validates_a_state_against_serve(server: Server):
    # Given the flow's claim after ComputeKey, and what ComputeKey would hand it
    claim_input = {
        "event": {"orderId": "o-cli"},
        "idempotency": {
            "key": "orders#abc",
            "validation": "",
            "claimToken": "t",
            "now": 1,
            "nowMs": 1000,
            "expiration": 3601,
            "inProgressExpiration": 61000,
        },
    }
    definition = IDEMPOTENCY_ASL.read_text(encoding="utf-8")

    # When the AWS CLI tests it with a refused claim as the mock, and validates the definition
    tested = aws_stepfunctions(
        server,
        "test-state", "--definition", definition, "--state-name", "ClaimComputedKey", "--input", json.dumps(claim_input),
        "--context", json.dumps({"Execution": {"Id": "arn:aws:states:us-east-1:123456789012:execution:orders:e-1", "RedriveCount": 0}}),
        "--mock", json.dumps({"errorOutput": {"error": "DynamoDB.ConditionalCheckFailedException", "cause": "taken"}}),
        "--inspection-level", "DEBUG",
    )  # fmt: skip
    validated = aws_stepfunctions(server, "validate-state-machine-definition", "--definition", definition)

    # Then serve answers as AWS does: the Catch to Read, and a valid definition
    assert (tested["status"], tested["nextState"]) == ("CAUGHT_ERROR", "Read")
    assert tested["inspectionData"]["errorDetails"] == {"catchIndex": 0}
    assert (validated["result"], validated["diagnostics"]) == ("OK", [])


def aws_stepfunctions(server: Server, *arguments: str) -> dict[str, Any]:
    """``aws stepfunctions ARGUMENTS`` against serve (no "sync-" host prefix on a loopback address)."""
    run = subprocess.run(
        [str(BIN / "aws"), "stepfunctions", *arguments, "--endpoint-url", server.endpoint, "--output", "json"],
        capture_output=True, text=True, timeout=COMMAND_DEADLINE_SECONDS, check=False,
        env={**clean_environment(), "AWS_DISABLE_HOST_PREFIX_INJECTION": "true"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    answer: dict[str, Any] = json.loads(run.stdout)
    return answer


# -- serve's edges (issue 39) ------------------------------------------------------------------------
WITHOUT_CONSOLE_FILES = (
    "import sys; import sfn_idempotency.console as console; "
    "console.asset = lambda name: None; "  # an editable install where make console-assets never ran
    "from sfn_idempotency.cli import main; sys.exit(main(sys.argv[1:]))"
)


def test_serve_without_the_console_s_files_serves_the_apis_and_says_how_to_build_them():
    # Given serve where the console's graph library was never copied in
    process = subprocess.Popen(
        [sys.executable, "-c", WITHOUT_CONSOLE_FILES, "serve", "--port", str(free_port())],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_environment(),
    )
    try:
        # When it starts, then it serves the APIs (a call answers) and names no console
        ready = read_ready_line(process)
        assert "console" not in ready
        sfn = Server(process, ready).client("stepfunctions")
        assert ready["stateMachineArns"][0] in {
            m["stateMachineArn"] for m in sfn.list_state_machines()["stateMachines"]
        }
    finally:
        process.kill()
        _, errors = process.communicate(timeout=COMMAND_DEADLINE_SECONDS)
    # And one line said why, and how to build the files
    (line,) = [line for line in errors.splitlines() if "console" in line]
    assert line.startswith("sfn-idempotency: serving without the console: ")
    assert "make console-assets" in line


def test_no_console_and_a_fixed_api_port():
    # Given serve with --no-console and the front door's port fixed
    api_port = free_port()
    process = start_server("--no-console", "--api-port", str(api_port))
    try:
        ready = read_ready_line(process)
        # Then the front door listens there, and the endpoint's root is no console page
        assert ready["apiEndpoint"] == f"http://127.0.0.1:{api_port}"
        assert "console" not in ready
        root = httpx.get(f"{ready['endpoint']}/", timeout=COMMAND_DEADLINE_SECONDS)
        assert 'name="sfn-region"' not in root.text  # the console's page carries its region
    finally:
        process.kill()
        process.wait(COMMAND_DEADLINE_SECONDS)


def test_serve_keeps_the_executions_it_is_told_to_and_refuses_a_negative_count():
    # Given serve told to keep 3 ended executions, When it starts, Then it is ready
    process = start_server("--no-console", "--retain-executions", "3")
    try:
        ready = read_ready_line(process)
        assert ready["stateMachineArns"]
    finally:
        process.kill()
        process.wait(COMMAND_DEADLINE_SECONDS)
    # And a negative count is refused before anything starts, in one line
    refused = subprocess.run(
        [CLI, "serve", "--retain-executions", "-1"],
        capture_output=True,
        text=True,
        env=clean_environment(),
        timeout=COMMAND_DEADLINE_SECONDS,
        check=False,
    )
    assert refused.returncode == 2
    assert "argument --retain-executions: the executions to keep are 0 or more, got -1" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_a_port_whose_last_connection_is_in_time_wait_is_free_to_serve():
    # Given a port whose server side closed its connection first: the port is in TIME-WAIT, which
    # a server that reuses its address (as serve's does) may bind, and a plain bind may not
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.accept()
    accepted.close()
    listener.close()
    client.recv(1)
    client.close()
    with (
        socket.socket(socket.AF_INET, socket.SOCK_STREAM) as plain,
        pytest.raises(OSError, match="Address already in use"),
    ):
        plain.bind(("127.0.0.1", port))
    # When the engine serves on it, then it starts
    backend = ServerBackend("127.0.0.1", port)
    backend.start()
    try:
        assert httpx.get(f"{backend.endpoint_url}/", timeout=COMMAND_DEADLINE_SECONDS).status_code < 500
    finally:
        backend.stop()


def test_serve_shows_each_e_mail_and_sms_it_does_not_send(
    local_cloud: LocalCloud, capsys: pytest.CaptureFixture[str]
):
    # Given serve's report, and a topic with an e-mail subscription that filters, and a phone
    report_failures(local_cloud)
    sns = local_cloud.client("sns")
    topic = sns.create_topic(Name="alerts")["TopicArn"]
    sns.subscribe(
        TopicArn=topic,
        Protocol="email",
        Endpoint="ops@example.com",
        Attributes={"FilterPolicy": json.dumps({"severity": ["high"]})},
    )
    sns.subscribe(TopicArn=topic, Protocol="sms", Endpoint="+15555550100")

    # When a high and a low alert are published
    for severity in ("high", "low"):
        sns.publish(
            TopicArn=topic,
            Subject="Disk",
            Message=f"disk {severity}\n  on host-1",
            MessageAttributes={"severity": {"DataType": "String", "StringValue": severity}},
        )

    # Then each message SNS would send is one line, as its filter policy let it through
    lines = [line for line in capsys.readouterr().err.splitlines() if "not sent:" in line]
    assert lines == [
        "sfn-idempotency: not sent: SNS alerts to email ops@example.com [Disk]: disk high on host-1",
        "sfn-idempotency: not sent: SNS alerts to sms +15555550100 [Disk]: disk high on host-1",
        "sfn-idempotency: not sent: SNS alerts to sms +15555550100 [Disk]: disk low on host-1",
    ]


def test_serve_reports_failed_tasks_but_not_the_flow_s_own_answers(
    make_service: Any, capsys: pytest.CaptureFixture[str]
):
    # Given serve's report of failed Task attempts, and a business step that declines one order
    def business(event: Any, context: Any) -> Any:
        if event["orderId"] == "o-declined":
            raise type("PaymentDeclined", (Exception,), {})("card expired")
        return {"placed": event["orderId"]}

    service = make_service(business)
    report_failures(service.cloud)

    # When an order is placed, placed again (its claim's condition fails: a replay) and one is declined
    outcomes = [
        service.run(order) for order in ({"orderId": "o-1"}, {"orderId": "o-1"}, {"orderId": "o-declined"})
    ]

    # Then the replay was the flow's own answer, not a failure, and the declined payment is one line
    assert [outcome.status for outcome in outcomes] == ["SUCCEEDED", "SUCCEEDED", "FAILED"]
    assert service.flow_states(outcomes[1])[-1] == "Replay"
    lines = capsys.readouterr().err.splitlines()
    reported = [line for line in lines if line.startswith("sfn-idempotency: task failed:")]
    assert len(reported) == 1, lines
    assert " Execute: PaymentDeclined: " in reported[0]
    assert "ConditionalCheckFailed" not in "\n".join(lines)
