"""HTTP Tasks (arn:aws:states:::http:invoke, compat fix 33) against an endpoint on loopback: the call
as AWS makes it (the connection's authorization, query, JSON body), the answer's shape, a status
outside 2xx as States.Http.StatusCode.<code>, and TestState's raw request and response at TRACE."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from sfn_idempotency.local import LocalCloud

ROLE = "arn:aws:iam::123456789012:role/http-task"
API_KEY = {"ApiKeyName": "x-api-key", "ApiKeyValue": "s3cr3t"}


@dataclass
class Endpoint:
    """An HTTP endpoint on loopback that records what it was sent; /missing answers 404."""

    url: str = ""
    received: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    recorded = Endpoint()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            headers = {name.lower(): value for name, value in self.headers.items()}
            recorded.received.append((self.command, self.path, headers, body))
            status = 404 if self.path.startswith("/missing") else 201
            answer = json.dumps({"placed": status == 201}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    recorded.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield recorded
    finally:
        server.shutdown()
        thread.join()


def connection(cloud: LocalCloud) -> str:
    answer = cloud.client("events").create_connection(
        Name="orders-api", AuthorizationType="API_KEY", AuthParameters={"ApiKeyAuthParameters": API_KEY}
    )
    return str(answer["ConnectionArn"])


def http_task(url: str, connection_arn: str, **rest: Any) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::http:invoke",
        "Parameters": {
            "ApiEndpoint": url,
            "Method": "POST",
            "Authentication": {"ConnectionArn": connection_arn},
            "QueryParameters": {"source": "sfn"},
            "RequestBody.$": "$",
        },
        **rest,
    }


def deploy(cloud: LocalCloud, states: dict[str, Any]) -> str:
    definition = json.dumps({"StartAt": "Call", "States": states})
    return str(
        cloud.sfn.create_state_machine(name="caller", definition=definition, roleArn=ROLE)["stateMachineArn"]
    )


def test_an_http_task_calls_with_the_connections_key_and_answers_as_aws(
    local_cloud: LocalCloud, endpoint: Endpoint
):
    # Given a machine whose Task posts the input to an endpoint through an API-key connection
    machine = deploy(
        local_cloud, {"Call": http_task(f"{endpoint.url}/orders", connection(local_cloud), End=True)}
    )

    # When it runs
    result = local_cloud.run(machine, {"orderId": "o-1"})

    # Then the endpoint got the key, the query and the JSON body, and the Task answered its response
    ((method, path, headers, body),) = endpoint.received
    assert (method, path) == ("POST", "/orders?source=sfn")
    assert headers["x-api-key"] == "s3cr3t"
    assert json.loads(body) == {"orderId": "o-1"}
    assert result.status == "SUCCEEDED"
    assert result.output["StatusCode"] == 201
    assert result.output["ResponseBody"] == {"placed": True}
    assert result.output["Headers"]["Content-Type"] == ["application/json"]


def test_a_status_outside_2xx_is_an_error_a_catch_can_name(local_cloud: LocalCloud, endpoint: Endpoint):
    # Given a Task whose Catch names the endpoint's 404 (a States.* name moto's parser refused)
    caught = [{"ErrorEquals": ["States.Http.StatusCode.404"], "ResultPath": "$.error", "Next": "NotThere"}]
    states = {
        "Call": http_task(f"{endpoint.url}/missing", connection(local_cloud), Catch=caught, End=True),
        "NotThere": {"Type": "Pass", "End": True},
    }
    assert (
        local_cloud.sfn.validate_state_machine_definition(
            definition=json.dumps({"StartAt": "Call", "States": states})
        )["result"]
        == "OK"
    )

    # When it runs
    result = local_cloud.run(deploy(local_cloud, states), {"orderId": "o-2"})

    # Then the 404 was caught by its name, with the response in the cause
    assert result.states == ["Call", "NotThere"]
    assert result.output["error"]["Error"] == "States.Http.StatusCode.404"
    assert json.loads(result.output["error"]["Cause"])["ResponseBody"] == {"placed": False}


def test_a_connection_that_does_not_exist_fails_the_task(local_cloud: LocalCloud, endpoint: Endpoint):
    gone = "arn:aws:events:us-east-1:123456789012:connection/gone/00000000-0000-0000-0000-000000000000"
    result = local_cloud.run(deploy(local_cloud, {"Call": http_task(endpoint.url, gone, End=True)}), {})
    assert (result.status, result.error) == ("FAILED", "States.Runtime")
    assert result.cause is not None
    assert "does not exist" in result.cause
    assert endpoint.received == []


def test_test_state_at_trace_shows_the_raw_call_and_hides_the_key_unless_revealed(
    local_cloud: LocalCloud, endpoint: Endpoint
):
    # Given the HTTP Task alone
    state = json.dumps(http_task(f"{endpoint.url}/orders", connection(local_cloud), End=True))

    def traced(**reveal: bool) -> dict[str, Any]:
        answer = local_cloud.test_state(
            definition=state, input='{"orderId": "o-3"}', roleArn=ROLE, inspectionLevel="TRACE", **reveal
        )
        assert answer["status"] == "SUCCEEDED"
        return dict(answer["inspectionData"])

    # When it is tested at TRACE, without and with revealSecrets
    hidden, revealed = traced(), traced(revealSecrets=True)

    # Then the raw request and response are there, and the connection's key only when revealed
    assert hidden["request"]["method"] == "POST"
    assert hidden["request"]["url"] == f"{endpoint.url}/orders?source=sfn"
    assert json.loads(hidden["request"]["body"]) == {"orderId": "o-3"}
    assert hidden["response"]["statusCode"] == "201"
    assert json.loads(hidden["response"]["body"]) == {"placed": True}
    assert "s3cr3t" not in json.dumps(hidden)
    assert json.loads(revealed["request"]["headers"])["X-api-key"] == "s3cr3t"
