"""A served engine answers its own console and the user's clients, not a web page (issue 27): a
foreign Origin (or Referer) and a foreign Host are refused before any service sees the request."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import urllib.error
import urllib.request
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sfn_idempotency.console import ConsoleSettings
from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.local.engine.backends import ServerBackend
from sfn_idempotency.local.engine.cloud import DEFAULT_REGION
from sfn_idempotency.local.http.request_guard import ALLOW_ORIGINS_VARIABLE
from tests.servers import CLI, clean_environment, free_port, read_ready_line, start_server

FOREIGN_ORIGIN = "http://127.0.0.1:1"  # another loopback port is already another origin
FOREIGN_HOST = "evil.example"
ROLE = "arn:aws:iam::123456789012:role/fn-role"
# What a rebinding page would run on the user's machine: it leaves a file behind when imported.
PAYLOAD = """
import os, pathlib
pathlib.Path(os.environ["MARKER"]).write_text("ran")
def handler(event, context):
    return "ran"
"""
HOSTILE = {
    "foreign origin": {"Origin": FOREIGN_ORIGIN},
    "foreign host": {"Host": FOREIGN_HOST},
    "foreign origin and host": {"Origin": FOREIGN_ORIGIN, "Host": FOREIGN_HOST},
    "foreign referer": {"Referer": f"{FOREIGN_ORIGIN}/attack.html"},
    "a page hiding its origin": {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"},
}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LocalCloud, IdempotentService]]:
    port = free_port()
    backend = ServerBackend("127.0.0.1", port, ConsoleSettings(DEFAULT_REGION, actions=True))
    with LocalCloud(backend=backend) as cloud:
        cloud.client("iam").create_role(RoleName="fn-role", AssumeRolePolicyDocument="{}")
        service = IdempotentService(cloud)
        yield cloud, service


def client_sending(cloud: LocalCloud, service: str, headers: dict[str, str]) -> Any:
    """A boto3 client whose requests carry ``headers`` (a Host of ours keeps the port)."""
    client = cloud.client(service, inject_host_prefix=False)
    port = str(cloud.endpoint_url).rsplit(":", 1)[1]

    def add_headers(request: Any, **_: Any) -> None:
        for name, value in headers.items():
            request.headers[name] = f"{value}:{port}" if name == "Host" else value

    client.meta.events.register_first("before-send.*.*", add_headers)
    return client


def assert_refused(error: pytest.ExceptionInfo[ClientError]) -> None:
    assert error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert error.value.response["Error"]["Code"] == "AccessDeniedException"


def zipped(source: str) -> bytes:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as package:
        package.writestr("app.py", source)
    return archive.getvalue()


@pytest.mark.parametrize("headers", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_web_page_cannot_create_or_invoke_a_lambda(
    served: tuple[LocalCloud, IdempotentService], headers: dict[str, str], tmp_path: Path
):
    # Given a page's requests, and a zip whose code leaves a marker when it runs
    cloud, _ = served
    marker = tmp_path / "ran"
    name = f"rebound-{uuid.uuid4().hex[:8]}"
    hostile = client_sending(cloud, "lambda", headers)

    # When the page creates the function and invokes it
    with pytest.raises(ClientError) as created:
        hostile.create_function(
            FunctionName=name,
            Runtime="python3.12",
            Role=ROLE,
            Handler="app.handler",
            Code={"ZipFile": zipped(PAYLOAD)},
            Environment={"Variables": {"MARKER": str(marker)}},
        )
    with pytest.raises(ClientError) as invoked:
        hostile.invoke(FunctionName=name, Payload=b"{}")

    # Then both are refused, no function exists and its code never ran
    assert_refused(created)
    assert_refused(invoked)
    names = [f["FunctionName"] for f in cloud.client("lambda").list_functions()["Functions"]]
    assert name not in names
    assert not marker.exists()


@pytest.mark.parametrize("headers", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_web_page_cannot_start_an_execution(
    served: tuple[LocalCloud, IdempotentService], headers: dict[str, str]
):
    # Given the served idempotency workflow
    cloud, service = served
    before = cloud.executions(service.state_machine_arn)

    # When a page starts an execution of it
    with pytest.raises(ClientError) as started:
        client_sending(cloud, "stepfunctions", headers).start_execution(
            stateMachineArn=service.state_machine_arn, input=json.dumps({"orderId": "o-page"})
        )

    # Then it is refused and no execution exists
    assert_refused(started)
    assert cloud.executions(service.state_machine_arn) == before


@pytest.mark.parametrize("headers", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_web_page_cannot_read_the_table(
    served: tuple[LocalCloud, IdempotentService], headers: dict[str, str]
):
    # Given a stored result
    cloud, service = served
    service.run({"orderId": "o-scan", "amount": 1})

    # When a page scans the table
    with pytest.raises(ClientError) as scanned:
        client_sending(cloud, "dynamodb", headers).scan(TableName=service.table_name)

    # Then it is refused with no items, while the user's own client reads the record
    assert_refused(scanned)
    assert "Items" not in scanned.value.response
    assert service.record_for({"orderId": "o-scan"}) is not None


@pytest.mark.parametrize("headers", HOSTILE.values(), ids=HOSTILE.keys())
def test_the_console_page_is_refused_to_a_web_page(
    served: tuple[LocalCloud, IdempotentService], headers: dict[str, str]
):
    # When the console's page is asked for with the page's headers
    cloud, _ = served
    status, answer = http_get(str(cloud.endpoint_url), headers)

    # Then it answers 403 with the JSON error, not the page
    assert status == 403
    assert answer["__type"] == "AccessDeniedException"
    assert "<html" not in json.dumps(answer)


def test_the_refusal_names_what_was_refused_and_the_flag_that_allows_it(
    served: tuple[LocalCloud, IdempotentService],
):
    cloud, _ = served
    _, by_origin = http_get(str(cloud.endpoint_url), {"Origin": FOREIGN_ORIGIN})
    _, by_host = http_get(str(cloud.endpoint_url), {"Host": f"{FOREIGN_HOST}:8083"})
    assert f"'{FOREIGN_ORIGIN}'" in by_origin["message"]
    assert f"--allow-origin {FOREIGN_ORIGIN}" in by_origin["message"]
    assert f"'{FOREIGN_HOST}:8083'" in by_host["message"]
    assert f"--allow-host {FOREIGN_HOST}" in by_host["message"]


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost"])
def test_the_console_on_its_own_origins_is_served_and_may_call_the_apis(
    served: tuple[LocalCloud, IdempotentService], name: str
):
    # Given the console loaded from one of its own origins
    cloud, service = served
    port = str(cloud.endpoint_url).rsplit(":", 1)[1]
    own = {"Host": f"{name}:{port}", "Origin": f"http://{name}:{port}"}

    # When it loads the page and calls the API as the page does
    status, _ = http_get(str(cloud.endpoint_url), {"Host": own["Host"]}, parse=False)
    machines = client_sending(cloud, "stepfunctions", {"Origin": own["Origin"]}).list_state_machines()

    # Then both are answered
    assert status == 200
    assert service.state_machine_arn in [m["stateMachineArn"] for m in machines["stateMachines"]]


def test_a_preflight_gets_the_cors_answer_only_from_an_allowed_origin(
    served: tuple[LocalCloud, IdempotentService],
):
    cloud, _ = served
    port = str(cloud.endpoint_url).rsplit(":", 1)[1]
    preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-amz-target"}

    own = http_request(
        "OPTIONS", str(cloud.endpoint_url), {**preflight, "Origin": f"http://localhost:{port}"}
    )
    foreign = http_request("OPTIONS", str(cloud.endpoint_url), {**preflight, "Origin": FOREIGN_ORIGIN})

    assert own[0] == 200
    assert own[1]["access-control-allow-origin"] == f"http://localhost:{port}"
    assert foreign[0] == 403
    assert not [name for name in foreign[1] if name.startswith("access-control-")]


def test_the_http_front_door_refuses_a_web_page(served: tuple[LocalCloud, IdempotentService]):
    # Given the front door on its own loopback port
    cloud, service = served
    api = service.deploy_http_api(name="guarded-orders")
    endpoint = api.start()
    try:
        order = json.dumps({"orderId": "o-door", "amount": 3}).encode()
        key = {"Idempotency-Key": "door-1", "Content-Type": "application/json"}

        # When a page posts an order, by origin and by a rebound host name
        by_origin = http_request("POST", f"{endpoint}/orders", {**key, "Origin": FOREIGN_ORIGIN}, order)
        by_host = http_request("POST", f"{endpoint}/orders", {**key, "Host": FOREIGN_HOST}, order)

        # Then both are refused and the front door's workflow never ran; the user's own request runs
        assert (by_origin[0], by_host[0]) == (403, 403)
        assert cloud.executions(api.state_machine_arn) == []
        assert http_request("POST", f"{endpoint}/orders", key, order)[0] == 201
    finally:
        api.stop()


# -- plain HTTP, as a browser sends it -------------------------------------------------------------
def http_request(
    method: str, url: str, headers: dict[str, str], body: bytes | None = None
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def http_get(url: str, headers: dict[str, str], *, parse: bool = True) -> tuple[int, Any]:
    status, _, body = http_request("GET", f"{url}/", headers)
    return status, json.loads(body) if parse else body


# -- serve's flags widen the policy by exactly what they name -------------------------------------
ALLOWED_ORIGIN = "http://127.0.0.1:3000"
ENV_ORIGIN = "https://app.localhost:8443"
ALLOWED_HOST = "devbox"
CONSOLE_AUTHORIZATION = (
    "AWS4-HMAC-SHA256 Credential=local/20261201/us-east-1/states/aws4_request, "
    "SignedHeaders=host, Signature=unsigned"
)


@pytest.fixture(scope="module")
def widened() -> Iterator[dict[str, Any]]:
    process = start_server(
        "--allow-origin",
        ALLOWED_ORIGIN,
        "--allow-host",
        ALLOWED_HOST,
        environment={ALLOW_ORIGINS_VARIABLE: f"{ENV_ORIGIN}, "},
    )
    try:
        yield read_ready_line(process)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Origin": ALLOWED_ORIGIN}, 200),
        ({"Origin": ENV_ORIGIN}, 200),
        ({"Referer": f"{ALLOWED_ORIGIN}/orders?page=2"}, 200),
        ({"Host": f"{ALLOWED_HOST}:8083"}, 200),
        ({"Origin": "http://127.0.0.1:3001"}, 403),  # another port
        ({"Origin": "https://127.0.0.1:3000"}, 403),  # another scheme
        ({"Origin": "http://app.localhost:8443"}, 403),
        ({"Origin": "null"}, 403),
        ({"Host": f"{ALLOWED_HOST}.evil.example:8083"}, 403),
        ({"Host": f"not-{ALLOWED_HOST}:8083"}, 403),
    ],
)
def test_allow_origin_and_allow_host_admit_exactly_what_they_name(
    widened: dict[str, Any], headers: dict[str, str], status: int
):
    # When a request with those headers lists the state machines
    answer = http_request(
        "POST",
        widened["endpoint"],
        {
            "X-Amz-Target": "AWSStepFunctions.ListStateMachines",
            "Content-Type": "application/x-amz-json-1.0",
            # As the console sends it: unsigned, the credential scope naming the service
            "Authorization": CONSOLE_AUTHORIZATION,
            **headers,
        },
        b"{}",
    )

    # Then only what the flags and the variable named is answered
    assert answer[0] == status
    if status == 200:
        assert widened["stateMachineArns"][0] in answer[2].decode()


def test_allowing_every_origin_takes_its_own_flag_and_warns():
    process = start_server("--allow-any-origin")
    try:
        ready = read_ready_line(process)
        answer = http_request("GET", f"{ready['endpoint']}/", {"Origin": FOREIGN_ORIGIN})
        foreign_host = http_request("GET", f"{ready['endpoint']}/", {"Host": FOREIGN_HOST})
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    assert answer[0] == 200
    assert foreign_host[0] == 403  # the Host check stands
    assert "--allow-any-origin: every web page you open can call this endpoint" in stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--allow-origin", "*"], "say --allow-any-origin"),
        (["--allow-origin", "http://localhost:3000/app"], "no path"),
        (["--allow-origin", "localhost:3000"], "expected http(s)://host[:port]"),
        (["--allow-host", "evil example"], "a host is a name or an IP address"),
    ],
)
def test_a_bad_allowance_is_one_line_and_exit_2(arguments: list[str], message: str):
    result = subprocess.run(
        [CLI, "serve", "--port", str(free_port()), *arguments],
        capture_output=True,
        text=True,
        env=clean_environment(),
        timeout=60,
    )
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
