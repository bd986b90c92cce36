"""``serve``'s HTTP server (fixes 112 to 115, 123, 125, 131 and 134, speed: no answer changes):
connections kept as AWS's endpoints keep them, header blocks parsed without the email package, each
host routed once, a StartExecution answered before its execution runs, access-log lines written
only when taken, Flask's debug class for a request's files built only for a request with form
fields, an SDK's request answered without Flask's request machinery, and header names kept only
for a request that sends an underscored one."""

from __future__ import annotations

import email.parser
import http.client
import io
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from moto.moto_server import werkzeug_app
from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.compat import moto_server
from sfn_idempotency.local.engine.backends import ServerBackend
from tests.local.conftest import counted_patterns
from tests.servers import free_port

ROLE = "arn:aws:iam::123456789012:role/connections"
DEADLINE_SECONDS = 10  # for the test's own sockets and waits, not a measurement
LIST_MACHINES = "AWSStepFunctions.ListStateMachines"
STOPS_WITHIN_SECONDS = 0.25  # socketserver's default poll alone took up to 0.5 s


@pytest.fixture
def served() -> Iterator[LocalCloud]:
    with LocalCloud(backend=ServerBackend("127.0.0.1", free_port())) as cloud:
        yield cloud


def _request(cloud: LocalCloud, target: str, body: dict[str, Any], extra: str = "") -> bytes:
    port = str(cloud.endpoint_url).rsplit(":", 1)[1]
    payload = json.dumps(body).encode()
    head = (
        f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Amz-Target: {target}\r\n"
        "Content-Type: application/x-amz-json-1.0\r\n"
        "Authorization: AWS4-HMAC-SHA256 Credential=local/20261204/us-east-1/states/aws4_request, "
        f"SignedHeaders=host, Signature=0\r\n{extra}"
    )
    if "chunked" in extra:
        return f"{head}\r\n{len(payload):x}\r\n".encode() + payload + b"\r\n0\r\n\r\n"
    return f"{head}Content-Length: {len(payload)}\r\n\r\n".encode() + payload


def _connect(cloud: LocalCloud) -> socket.socket:
    host, port = str(cloud.endpoint_url).removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=DEADLINE_SECONDS)


def _read_answer(stream: io.BufferedReader) -> tuple[int, dict[str, str], bytes]:
    status = int(stream.readline().split()[1])
    headers: dict[str, str] = {}
    while (line := stream.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, stream.read(int(headers["content-length"]))


def test_one_connection_answers_requests_sent_back_to_back(served: LocalCloud):
    # Given a machine, and two requests written at once on one connection (each with its body)
    served.client("stepfunctions").create_state_machine(
        name="kept",
        definition=json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}),
        roleArn=ROLE,
    )
    with _connect(served) as connection:
        connection.sendall(
            _request(served, LIST_MACHINES, {}) + _request(served, LIST_MACHINES, {"maxResults": 1})
        )
        # When both answers are read from it
        stream = connection.makefile("rb")
        answers = [_read_answer(stream), _read_answer(stream)]
    # Then each request got its own answer, and neither closed the connection
    assert [status for status, _, _ in answers] == [200, 200]
    assert [headers.get("connection") for _, headers, _ in answers] == [None, None]
    assert [len(json.loads(body)["stateMachines"]) for _, _, body in answers] == [1, 1]
    assert "nextToken" not in json.loads(answers[1][2])


def test_a_chunked_request_is_answered_and_its_connection_closed(served: LocalCloud):
    # Given a request whose body is chunked: its end is only found by reading what follows it
    with _connect(served) as connection:
        connection.sendall(_request(served, LIST_MACHINES, {}, extra="Transfer-Encoding: chunked\r\n"))
        # When its answer is read
        stream = connection.makefile("rb")
        status, headers, _ = _read_answer(stream)
        # Then it is answered, and the connection is closed as werkzeug closes it
        assert (status, headers.get("connection")) == (200, "close")
        assert stream.read() == b""


def test_a_stopped_server_ends_the_connections_it_kept():
    # Given a connection that a served engine kept after answering it
    cloud = LocalCloud(backend=ServerBackend("127.0.0.1", free_port())).start()
    try:
        connection = _connect(cloud)
        connection.sendall(_request(cloud, LIST_MACHINES, {}))
        stream = connection.makefile("rb")
        assert _read_answer(stream)[0] == 200
    finally:
        # When the engine stops
        cloud.close()
    # Then the connection ends: no later request on it reaches the stopped engine
    with connection:
        assert stream.read() == b""


def test_an_execution_whose_call_fails_as_the_served_engine_stops_leaves_moto_quiet(
    caplog: pytest.LogCaptureFixture,
):
    # Given a served engine whose stop sees an execution's call fail (its endpoint is going), which
    # moto's interpreter logs with the whole text of its state
    cloud = LocalCloud(backend=ServerBackend("127.0.0.1", free_port())).start()
    stop = cloud.backend.stop

    def stopping() -> None:
        logging.getLogger("moto.stepfunctions.parser.asl.component.eval_component").error(
            "Exception=FailureEventException, Error=States.Runtime at '(StateTaskServiceAwsSdk| …)'"
        )
        stop()

    cloud.backend.stop = stopping  # type: ignore[method-assign]

    # When the engine stops
    with caplog.at_level(logging.DEBUG):
        cloud.close()

    # Then nothing of moto's reached the log (the terminal, on serve), and moto's loggers are as
    # they were before the engine started
    assert [record.getMessage() for record in caplog.records if record.name.startswith("moto")] == []
    assert logging.getLogger("moto.stepfunctions.parser").level == logging.NOTSET


def test_a_server_that_just_answered_stops_at_once():
    # Given a served engine that has just answered a request (its loop has begun a new wait)
    cloud = LocalCloud(backend=ServerBackend("127.0.0.1", free_port())).start()
    try:
        cloud.sfn.list_state_machines()
    finally:
        # When it stops
        started = time.monotonic()
        cloud.close()

    # Then it did not wait out the standard library's half-second poll for the shutdown
    assert time.monotonic() - started < STOPS_WITHIN_SECONDS


def test_a_plain_header_block_is_read_without_the_email_parser(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    # Given the email parser, counted
    parsed: list[str] = []
    parser = email.parser.Parser

    class Counted(parser):  # type: ignore[misc,valid-type]
        def parsestr(self, text: str, headersonly: bool = False) -> Any:
            parsed.append(text)
            return super().parsestr(text, headersonly)

    monkeypatch.setattr(email.parser, "Parser", Counted)
    parse_headers = http.client.parse_headers
    plain = b"Host: a\r\nX-Amz-Meta-Key_Name:  v\r\nX: \xe9\r\nX: two\r\n\r\n"
    # When serve's handler reads a plain block, and a folded one
    message = parse_headers(io.BytesIO(plain), _class=moto_server._PlainHeaders)
    folded = parse_headers(io.BytesIO(b"Host: a\r\nX: one\r\n two\r\n\r\n"), _class=moto_server._PlainHeaders)
    # Then the plain block never reached the email parser, and reads as the email parser reads it
    assert len(parsed) == 1
    assert "two" in parsed[0]
    reference = parser(_class=http.client.HTTPMessage).parsestr(plain.decode("iso-8859-1"))
    assert (
        message.items()
        == reference.items()
        == [
            ("Host", "a"),
            ("X-Amz-Meta-Key_Name", "v"),
            ("X", "\xe9"),
            ("X", "two"),
        ]
    )
    assert (message.get_payload(), message.defects) == (reference.get_payload(), reference.defects)
    assert folded.get_all("X") == ["one\r\n two"]


@pytest.mark.parametrize(
    "block",
    [
        b"Host: a\r\n\r\n",
        b"Host:a\r\nX:\t spaced \r\n\r\n",
        b"A: b\nC: d\n\n",
        b"From someone\r\nHost: a\r\n\r\n",
        b": no name\r\nA: b\r\n\r\n",
        b"no colon\r\nA: b\r\n\r\n",
        b"Content-Type: multipart/form-data; boundary=x\r\n\r\n",
        b"A: b\x85c\r\n\r\n",
        b"A: b\rC: d\r\n\r\n",
        b"A: b\r\n",
    ],
    ids=repr,
)
def test_every_header_block_reads_as_the_email_parser_reads_it(local_cloud: LocalCloud, block: bytes):
    # When a block is read by serve's handler, and by the email parser into the standard message
    ours = http.client.parse_headers(io.BytesIO(block), _class=moto_server._PlainHeaders)
    reference = email.parser.Parser(_class=http.client.HTTPMessage).parsestr(block.decode("iso-8859-1"))
    # Then the two are the same message, read through every accessor werkzeug and moto use
    assert ours.items() == reference.items()
    assert ours.keys() == reference.keys()
    assert [ours.get(name) for name in ("a", "HOST", "x", "missing")] == [
        reference.get(name) for name in ("a", "HOST", "x", "missing")
    ]
    assert (ours["a"], ours.get("missing", "none")) == (reference["a"], reference.get("missing", "none"))
    assert (ours.get_unixfrom(), str(ours.get_payload()), [type(d) for d in ours.defects]) == (
        reference.get_unixfrom(),
        str(reference.get_payload()),
        [type(d) for d in reference.defects],
    )


def test_each_host_is_routed_once_and_as_moto_routes_it(local_cloud: LocalCloud):
    # Given moto's dispatcher, whose URL patterns count their matches
    dispatcher = werkzeug_app.DomainDispatcherApplication(werkzeug_app.create_backend_app)
    matches: list[str] = []
    dispatcher.backend_url_patterns = counted_patterns(dispatcher.backend_url_patterns, matches)
    # When a host is routed three times, and a host no service has twice
    host = "states.us-east-1.amazonaws.com"
    routed = [dispatcher.get_backend_for_host(host)]
    first = len(matches)
    routed += [dispatcher.get_backend_for_host(host) for _ in range(2)]
    again = len(matches)
    unknown = [dispatcher.get_backend_for_host("nothing.example") for _ in range(2)]
    # Then only the first routing matched patterns; the unknown host is matched each time
    assert routed == ["stepfunctions"] * 3
    assert (first > 0, again) == (True, first)
    assert unknown == [None, None]
    assert len(matches) > again


def test_a_start_execution_is_answered_before_its_execution_runs(
    served: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    # Given a record of when serve has answered a StartExecution, and what an execution saw
    handler = werkzeug_app.MotoRequestHandler
    answer, answered, seen = handler._answer, threading.Event(), []

    def answer_and_note(self: Any) -> None:
        answer(self)
        if self.headers.get("X-Amz-Target", "").endswith(".StartExecution"):
            answered.set()

    logic = ExecutionWorker._execution_logic

    def noting_logic(self: Any) -> None:
        seen.append(answered.is_set())
        logic(self)

    monkeypatch.setattr(handler, "_answer", answer_and_note)
    monkeypatch.setattr(ExecutionWorker, "_execution_logic", noting_logic)
    sfn = served.client("stepfunctions")
    arn = sfn.create_state_machine(
        name="answered-first",
        definition=json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}),
        roleArn=ROLE,
    )["stateMachineArn"]
    # When an execution is started through the server, and waited for
    execution = sfn.start_execution(stateMachineArn=arn, input='{"n": 1}')["executionArn"]
    deadline = time.monotonic() + DEADLINE_SECONDS
    while (described := sfn.describe_execution(executionArn=execution))["status"] == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    # Then it ran once, after its StartExecution was answered, and ended as before
    assert seen == [True]
    assert (described["status"], json.loads(described["output"])) == ("SUCCEEDED", {"n": 1})


def test_an_access_log_line_is_written_only_for_a_logger_that_takes_it(
    served: LocalCloud, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    # Given werkzeug's decoding of each logged path, counted, and serve's werkzeug logger (WARNING)
    from werkzeug import serving

    decoded: list[str] = []
    decode = serving.uri_to_iri  # type: ignore[attr-defined]

    def counted(path: str) -> str:
        decoded.append(path)
        return decode(path)

    monkeypatch.setattr(serving, "uri_to_iri", counted)
    sfn = served.client("stepfunctions")

    # When a request is answered at WARNING (fix 123), then one at INFO
    sfn.list_state_machines()
    at_warning = len(decoded)
    caplog.set_level(logging.INFO, logger="werkzeug")
    sfn.list_state_machines()

    # Then no line was written at WARNING, and at INFO the line is werkzeug's own
    assert at_warning == 0
    assert decoded == ["/"]
    lines = [record.getMessage() for record in caplog.records if record.name == "werkzeug"]
    assert any('"POST / HTTP/1.1" 200' in line for line in lines)


def test_a_request_without_form_fields_keeps_its_files_class_and_a_form_gets_flasks_error(
    local_cloud: LocalCloud,
):
    # Given the engine's fixes, and a Flask app in debug mode, as moto's apps run
    import flask
    from flask.debughelpers import DebugFilesKeyError
    from werkzeug.datastructures import ImmutableMultiDict

    del local_cloud  # only for its fixes, installed
    app = flask.Flask("debugged")
    app.debug = True

    # When a JSON request and a form request read a file neither sent (fix 125)
    with app.test_request_context("/", method="POST", json={"order": 1}):
        json_files = type(flask.request.files)
        with pytest.raises(KeyError) as json_error:
            flask.request.files["upload"]
    form = app.test_request_context("/", method="POST", data={"upload": "a name, not a file"})
    with form, pytest.raises(KeyError) as form_error:
        flask.request.files["upload"]

    # Then the JSON request's files kept their class and its error is the plain KeyError; the form's
    # error is Flask's, naming the enctype
    assert json_files is ImmutableMultiDict
    assert not isinstance(json_error.value, DebugFilesKeyError)
    assert isinstance(form_error.value, DebugFilesKeyError)


class _OneApp(werkzeug_app.DomainDispatcherApplication):  # type: ignore[misc]
    """moto's dispatcher with one Flask app for every host."""

    def __init__(self, app: Any) -> None:
        super().__init__(werkzeug_app.create_backend_app)
        self.app = app

    def get_application(self, environ: dict[str, Any]) -> Any:
        return self.app


def _moto_like_app(answers: dict[str, Any]) -> Any:
    """A Flask app made as moto makes its apps (debug, moto's request class, CORS), whose one view
    (moto's wrapper around a dispatch) answers each X-Amz-Target from ``answers``: a result, or an
    exception to raise."""
    import flask
    from flask_cors import CORS
    from moto.core.utils import convert_to_flask_response

    app = flask.Flask("moto-like")
    app.debug = True
    app.request_class = werkzeug_app.BackendRequest
    CORS(app)

    def dispatch(request: Any, url: str, headers: dict[str, str]) -> Any:
        answer = answers[headers["X-Amz-Target"]]
        if isinstance(answer, Exception):
            raise answer
        return answer

    app.add_url_rule("/", "dispatch", convert_to_flask_response(dispatch), methods=["POST"])
    return app


def _counted_request_contexts(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The request contexts Flask pushes from now on, counted into the list returned."""
    import flask

    contexts: list[Any] = []
    request_context = flask.Flask.request_context

    def counted(self: Any, environ: dict[str, Any]) -> Any:
        contexts.append(request_context(self, environ))
        return contexts[-1]

    monkeypatch.setattr(flask.Flask, "request_context", counted)
    return contexts


def _post(app: Any, target: str, extra: dict[str, str] | None = None) -> tuple[int, list[Any], bytes]:
    from werkzeug.test import Client

    answer = Client(app).post("/", headers={"X-Amz-Target": target, **(extra or {})}, data=b"{}")
    return answer.status_code, sorted(answer.headers.items()), answer.get_data()


def test_an_sdk_request_is_answered_without_flask_and_as_flask_answers_it(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    # Given a moto-like app whose view answers, refuses with moto's error, fails with botocore's
    from botocore.exceptions import ClientError
    from moto.core.exceptions import JsonRESTError

    del local_cloud  # only for its fixes, installed
    answers = {
        "Svc.Answer": (200, {"Content-Type": "application/x-amz-json-1.0"}, '{"n": 1}'),
        "Svc.Refuse": JsonRESTError("ResourceNotFoundException", "no such thing"),
        "Svc.Fail": ClientError({"Error": {"Code": "Throttling", "Message": "slow down"}}, "Op"),
    }
    app = _moto_like_app(answers)
    contexts = _counted_request_contexts(monkeypatch)
    # When each is asked twice through moto's dispatcher (fix 131), and once of the Flask app itself
    dispatcher = _OneApp(app)
    dispatched = {target: _post(dispatcher, target) for target in answers}
    again = {target: _post(dispatcher, target) for target in answers}
    through_flask_by_fix = len(contexts)
    flasks = {target: _post(app, target) for target in answers}
    # Then one test context learnt the path's CORS headers and no request went through Flask's
    # machinery; every answer is Flask's (moto's CORS header too), each time
    assert through_flask_by_fix == 1
    assert dispatched == again
    assert dispatched == flasks
    assert [flasks[target][0] for target in answers] == [200, 400, 400]
    assert ("Access-Control-Allow-Origin", "*") in flasks["Svc.Answer"][1]


def test_a_browsers_request_and_an_app_with_other_hooks_still_go_through_flask(
    local_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    # Given a moto-like app, and one that also has a before-request hook
    del local_cloud  # only for its fixes, installed
    answer: tuple[int, dict[str, str], str] = (200, {}, "{}")
    plain, hooked = _moto_like_app({"Svc.Answer": answer}), _moto_like_app({"Svc.Answer": answer})
    hooked.before_request(lambda: None)
    contexts = _counted_request_contexts(monkeypatch)
    # When a web page's request (an Origin) reaches the first, and an SDK's reaches the second
    from_a_page = _post(_OneApp(plain), "Svc.Answer", {"Origin": "http://localhost:8083"})
    _post(_OneApp(hooked), "Svc.Answer")
    # Then both went through Flask, and the page got CORS's answer for its origin
    assert len(contexts) == 2
    assert ("Access-Control-Allow-Origin", "http://localhost:8083") in from_a_page[1]


def test_header_names_are_kept_only_for_a_request_that_sends_an_underscored_one(
    served: LocalCloud, monkeypatch: pytest.MonkeyPatch
):
    # Given moto's WSGI names of header names counted, and a bucket
    from moto.core.request import environ_key_for_header

    named: list[str] = []

    def counted(name: str) -> str:
        named.append(name)
        return str(environ_key_for_header(name))

    monkeypatch.setattr(werkzeug_app, "environ_key_for_header", counted)
    s3 = served.client("s3")
    s3.create_bucket(Bucket="kept-names")
    # When an SDK's request without an underscored header name is answered (fix 134), then an
    # object with an underscored metadata name is written and read back
    machines = served.sfn.list_state_machines()["stateMachines"]
    for_the_sdk_request = list(named)
    s3.put_object(Bucket="kept-names", Key="k", Body=b"x", Metadata={"my_key": "v"})
    metadata = s3.head_object(Bucket="kept-names", Key="k")["Metadata"]
    # Then the first named no header; the metadata kept its spelling, as moto keeps it
    assert (machines, for_the_sdk_request) == ([], [])
    assert metadata == {"my_key": "v"}
    assert any("_" in name for name in named)
