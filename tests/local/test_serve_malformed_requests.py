"""Bad requests get AWS's answers (issue 73): whatever body, header or path a client sends `serve`, it
reads an error in the service's protocol (JSON, or XML for an XML service), never an HTML page,
and the terminal never gets a traceback. A JSON body that is not the operation's members is
refused 400 as AWS's request framework refuses it (compat fixes 149 and 150)."""

from __future__ import annotations

import http.client
import io
import json
import logging
import re
import socket
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from typing import Any

import botocore.session
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.engine.backends import ServerBackend
from tests.properties import examples
from tests.servers import free_port

AUTHORIZATION = (
    "AWS4-HMAC-SHA256 Credential=test/20261207/us-east-1/{service}/aws4_request, "
    "SignedHeaders=host;x-amz-date, Signature=0"
)
# The services the engine's users reach through serve: the flow's, and those public apps deploy.
SERVICES = (
    "stepfunctions",
    "dynamodb",
    "events",
    "sqs",
    "logs",
    "kms",
    "ssm",
    "secretsmanager",
    "kinesis",
    "firehose",
    "scheduler",
    "lambda",
    "apigateway",
    "sns",
    "iam",
    "sts",
    "cloudformation",
    "cloudwatch",
    "s3",
)
JSON_PROTOCOLS = ("json", "rest-json")
EXAMPLES_PER_SERVICE = 12  # requests drawn per service in the suite (make fuzz: ten times as many)
_SESSION = botocore.session.get_session()


def _model(service: str) -> Any:
    return _SESSION.get_service_model(service)


def _operations(service: str) -> list[str]:
    return sorted(_model(service).operation_names)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[int]:
    port = free_port()
    with LocalCloud(backend=ServerBackend("127.0.0.1", port)):
        yield port


def _request(port: int, service: str, operation: str, body: bytes) -> tuple[int, str, bytes]:
    """``operation`` called with ``body`` as its service's protocol carries a request."""
    model = _model(service)
    operation_model = model.operation_model(operation)
    signing_name = model.signing_name or model.endpoint_prefix
    headers = {"Authorization": AUTHORIZATION.format(service=signing_name), "X-Amz-Date": "20261207T000000Z"}
    method, path = "POST", "/"
    if model.protocol == "json":
        headers["X-Amz-Target"] = f"{model.metadata['targetPrefix']}.{operation}"
        headers["Content-Type"] = f"application/x-amz-json-{model.metadata.get('jsonVersion', '1.0')}"
    elif model.protocol in ("rest-json", "rest-xml"):
        method = operation_model.http["method"]
        path = re.sub(r"\{[^}]+\}", "x", operation_model.http["requestUri"])
        headers["Content-Type"] = "application/json" if model.protocol == "rest-json" else "application/xml"
    else:  # query: the action in the form, the body's bytes after it
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        body = f"Action={operation}&Version={model.api_version}&".encode() + body
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.getheader("Content-Type") or "", answer.read()
    finally:
        connection.close()


def _json_values() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    )


@st.composite
def malformed_bodies(draw: st.DrawFn, service: str, operation: str) -> tuple[bytes, bool]:
    """A body, and whether it is certainly not the operation's members (not UTF-8, not JSON, not
    an object, or a member of another kind)."""
    shape = _model(service).operation_model(operation).input_shape
    members = list(shape.members) if shape is not None else []
    kind = draw(
        st.sampled_from(["bytes", "text", "value", "wrong member"] if members else ["bytes", "text", "value"])
    )
    if kind == "bytes":
        return draw(st.binary(min_size=1, max_size=16).filter(lambda b: not _is_utf8(b))), True
    if kind == "text":
        text = draw(st.sampled_from(["{not json", "{", '{"a":', "[1,", "nul", "{'a': 1}", "NaN"]))
        return text.encode(), True
    if kind == "value":
        value = draw(_json_values().filter(lambda v: not isinstance(v, dict) and v is not None))
        return json.dumps(value).encode(), True
    name = draw(st.sampled_from(members))
    wrong = _wrong_kind(shape.members[name].type_name)
    return json.dumps({name: draw(wrong)}).encode(), not shape.members[name].serialization.get("location")


def _wrong_kind(kind: str) -> st.SearchStrategy[Any]:
    if kind in ("structure", "map"):
        return st.sampled_from([True, 5, [1]])
    if kind == "list":
        return st.sampled_from([True, 5, {"a": 1}])
    if kind in ("string", "blob"):
        return st.sampled_from([True, 5, {"a": 1}, [1]])
    return st.sampled_from([{"a": 1}, [1]])  # numbers, booleans, timestamps: a container


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, bytes, bool]:
    service = draw(st.sampled_from(SERVICES))
    operations = _operations(service)
    operation = draw(st.sampled_from(operations))
    body, malformed = draw(malformed_bodies(service, operation))
    return service, operation, body, malformed


@pytest.mark.property
@given(request=requests())
@settings(
    max_examples=examples(EXAMPLES_PER_SERVICE * len(SERVICES)),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_a_malformed_request_gets_an_error_in_its_service_s_protocol(
    endpoint: int, request: tuple[str, str, bytes, bool], caplog: pytest.LogCaptureFixture
):
    service, operation, body, malformed = request
    caplog.clear()
    # When the operation is called with the body
    with caplog.at_level(logging.WARNING):
        status, content_type, answer = _request(endpoint, service, operation, body)

    # Then the answer is the service's protocol's, never an HTML page, and nothing was logged with
    # a traceback (moto labels some of its answers text/html, Flask's default: the body decides)
    assert not answer.lstrip().lower().startswith((b"<!doctype", b"<html"))
    assert not [record for record in caplog.records if record.exc_info], caplog.text
    if status >= 400 and answer:
        if _model(service).protocol in JSON_PROTOCOLS or "json" in content_type:
            assert "__type" in json.loads(answer) or "message" in json.loads(answer).get("Error", {}), answer
        else:
            ElementTree.fromstring(answer)
    # And a JSON body that is certainly not the operation's members is refused 400, as AWS refuses it
    if malformed and _model(service).protocol == "json":
        assert status == 400, (status, answer)
        assert json.loads(answer)["__type"] == "SerializationException", answer


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"HELLO /x/y HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", None),
        (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", 431),
        (b"GET / HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n", 505),
        (b"GET /\r\nthis is not a request line\r\n\r\n", 400),
    ],
    ids=["unknown method", "a 70 KB header", "an unknown version", "not a request line"],
)
def test_a_request_the_server_cannot_take_gets_a_json_error(endpoint: int, raw: bytes, status: int | None):
    # When bytes that are not a request the server can take are sent
    with socket.create_connection(("127.0.0.1", endpoint), timeout=10) as connection:
        connection.sendall(raw)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    # Then the answer is a JSON error (of the HTTP status it is refused with), never Python's or a
    # web framework's HTML page; a request line without a version is answered as HTTP/0.9, a body alone
    if answer.startswith(b"HTTP/"):
        parsed = http.client.HTTPResponse(_Received(answer))
        parsed.begin()
        assert parsed.status == status if status else parsed.status >= 400
        assert "json" in (parsed.getheader("Content-Type") or "")
        answer = parsed.read()
    assert json.loads(answer)["__type"].endswith("Exception"), answer


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_a_request_that_names_no_service_is_refused_as_one_without_credentials(endpoint: int, method: str):
    # When a request to / is sent unsigned, with no target and no action (curl -X POST)
    connection = http.client.HTTPConnection("127.0.0.1", endpoint, timeout=10)
    connection.request(method, "/", body=b"{}", headers={"Content-Type": "application/json"})
    answer = connection.getresponse()

    # Then it gets AWS's common error for a request without credentials, in JSON (moto gave it to
    # S3's bucket listing, which failed: 500 InternalFailure)
    assert answer.status == 403
    assert json.loads(answer.read())["__type"] == "MissingAuthenticationToken"


class _Received:
    """What ``http.client`` reads an answer from: bytes already received."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(io.BytesIO(self._data))


MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:orders"
CORAL_NUMBER = (
    "class com.amazon.coral.value.json.numbers.TruncatingBigNumber can not be converted to an String"
)


@pytest.mark.parametrize(
    ("service", "operation", "body", "code", "message"),
    [
        (
            "stepfunctions",
            "StartExecution",
            b"{not json",
            "SerializationException",
            "Unexpected character ('n' (code 110)): was expecting double-quote to start field name",
        ),
        (
            "stepfunctions",
            "StartExecution",
            b"[1,2]",
            "SerializationException",
            "Start of list found where not expected",
        ),
        (
            "stepfunctions",
            "StartExecution",
            b"\xff\xfe",
            "SerializationException",
            "Invalid UTF-8 start byte 0xff",
        ),
        (
            "stepfunctions",
            "DescribeExecution",
            b'{"executionArn": 5}',
            "SerializationException",
            CORAL_NUMBER,
        ),
        (
            "stepfunctions",
            "StartExecution",
            json.dumps({"stateMachineArn": MACHINE, "input": {"a": 1}}).encode(),
            "SerializationException",
            "Start of structure or map found where not expected.",
        ),
        (
            "stepfunctions",
            "StartExecution",
            b"",
            "ValidationException",
            "1 validation error detected: Value null at 'stateMachineArn' failed to satisfy constraint: "
            "Member must not be null",
        ),
        (
            "stepfunctions",
            "StartExecution",
            b"null",
            "ValidationException",
            "1 validation error detected: Value null at 'stateMachineArn' failed to satisfy constraint: "
            "Member must not be null",
        ),
        (
            "dynamodb",
            "GetItem",
            b'{"TableName": "orders", "Key": "o-1"}',
            "SerializationException",
            "class java.lang.String can not be converted to an Map",
        ),
        (
            "dynamodb",
            "GetItem",
            b"{}",
            "ValidationException",
            "2 validation errors detected: Value null at 'tableName' failed to satisfy constraint: Member must "
            "not be null; Value null at 'key' failed to satisfy constraint: Member must not be null",
        ),
    ],
    ids=[
        "not json",
        "an array",
        "not utf-8",
        "an arn as a number",
        "an input as an object",
        "empty",
        "null",
        "a key as a string",
        "no members",
    ],
)
def test_each_bad_body_of_the_issue_is_refused_in_aws_s_words(
    endpoint: int, service: str, operation: str, body: bytes, code: str, message: str
):
    # When the operation is called with the body, Then it is refused 400 with the error AWS's request
    # framework gives (before any moto code read it: no 500, no traceback)
    status, content_type, answer = _request(endpoint, service, operation, body)
    assert (status, content_type) == (400, "application/x-amz-json-1.0")
    assert json.loads(answer) == {"__type": code, "message": message}
