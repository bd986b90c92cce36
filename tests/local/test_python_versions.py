"""A Python function runs on the Python its runtime names when that Python is installed and the
engine serves (issue 75): its own process, the SDK its runtime carries, Lambda's answers. In
process, or with no such Python, it runs on the engine's own.

CI has one Python (the engine's): there the other-Python path runs on the engine's Python, told
that it is the declared one (``python_process._installed``); a machine with other Pythons also
runs them for real (skipped where none is installed)."""

from __future__ import annotations

import base64
import io
import json
import os
import stat
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sfn_idempotency.console import ConsoleSettings
from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.engine.backends import ServerBackend
from sfn_idempotency.local.engine.cloud import DEFAULT_REGION
from sfn_idempotency.local.runtimes import python_process
from sfn_idempotency.local.runtimes.python import PythonVersionWarning
from tests.servers import free_port

ENGINE_MINOR = sys.version_info.minor
OTHER_RUNTIME = f"python3.{ENGINE_MINOR + 1}"  # a Python that is not the engine's
REPORT = """
import json, os, sys
import boto3

def handler(event, context):
    print("hello from", context.function_name)
    return {
        "pid": os.getpid(),
        "python": "python%d.%d" % sys.version_info[:2],
        "boto3": boto3.__file__,
        "queues": boto3.client("sqs").list_queues().get("QueueUrls", []),
        "remaining_ms": context.get_remaining_time_in_millis(),
        "request_id": context.aws_request_id,
        "event": event,
    }
"""


@pytest.fixture
def served() -> Iterator[LocalCloud]:
    backend = ServerBackend("127.0.0.1", free_port(), ConsoleSettings(DEFAULT_REGION, actions=True))
    with LocalCloud(backend=backend) as cloud:
        cloud.client("iam").create_role(RoleName="fn-role", AssumeRolePolicyDocument="{}")
        yield cloud


@pytest.fixture
def other_python_is_the_engines(monkeypatch: pytest.MonkeyPatch) -> None:
    """The declared Python is 'installed': the engine's own Python stands in for it."""
    monkeypatch.setattr(python_process, "_installed", lambda minor: sys.executable)


def create(cloud: LocalCloud, name: str, source: str, run_time: str, **extra: Any) -> Any:
    """A function whose ``app.py`` is ``source``; the Lambda client."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as package:
        package.writestr("app.py", source)
    client = cloud.client("lambda")
    client.create_function(
        FunctionName=name,
        Runtime=run_time,
        Role="arn:aws:iam::123456789012:role/fn-role",
        Handler="app.handler",
        Code={"ZipFile": archive.getvalue()},
        **extra,
    )
    return client


def invoke(client: Any, name: str, event: Any = None, **extra: Any) -> tuple[dict[str, Any], Any]:
    answer = client.invoke(FunctionName=name, Payload=json.dumps(event or {}), **extra)
    return answer, json.loads(answer["Payload"].read())


@pytest.mark.usefixtures("other_python_is_the_engines")
def test_a_function_of_another_python_runs_in_its_own_warm_process_with_the_runtimes_sdk(served: LocalCloud):
    # Given a queue, and a function declared for another Python that lists queues with boto3
    served.client("sqs").create_queue(QueueName="orders")
    client = create(served, "report", REPORT, OTHER_RUNTIME, Timeout=30)

    # When it is invoked twice, with its log
    first, reported = invoke(client, "report", {"n": 1}, LogType="Tail")
    _, again = invoke(client, "report", {"n": 2})

    # Then it ran outside the engine's process, in one warm environment, its SDK call answered by
    # the engine; the SDK is the runtime's (the engine's boto3, linked into the cache, not the code)
    assert "FunctionError" not in first
    assert reported["pid"] != os.getpid()
    assert again["pid"] == reported["pid"]
    assert reported["event"] == {"n": 1}
    assert again["event"] == {"n": 2}
    assert any(url.endswith("/orders") for url in reported["queues"])
    assert Path(reported["boto3"]).parent.resolve() == Path(__import__("boto3").__file__).parent.resolve()
    assert 0 < reported["remaining_ms"] <= 30_000
    # and what it printed is its log, between the runtime's lines
    log = base64.b64decode(first["LogResult"]).decode()
    assert log.startswith(f"START RequestId: {reported['request_id']}")
    assert "hello from report\n" in log
    assert f"END RequestId: {reported['request_id']}" in log
    # and in its log group, where Lambda writes it
    events = served.client("logs").filter_log_events(logGroupName="/aws/lambda/report")["events"]
    assert "hello from report" in [event["message"] for event in events]


@pytest.mark.usefixtures("other_python_is_the_engines")
def test_its_layers_and_environment_are_the_runtimes(served: LocalCloud):
    # Given a layer with a module under python/, and a function of another Python that uses it
    layer_zip = io.BytesIO()
    with zipfile.ZipFile(layer_zip, "w") as package:
        package.writestr("python/shared_words.py", "GREETING = 'hello from the layer'\n")
    lambdas = served.client("lambda")
    layer = lambdas.publish_layer_version(LayerName="words", Content={"ZipFile": layer_zip.getvalue()})
    source = (
        "import os, shared_words\n"
        "def handler(event, context):\n"
        "    return [shared_words.GREETING, os.environ['COLOUR'], os.environ['AWS_EXECUTION_ENV'],\n"
        "            os.environ['AWS_LAMBDA_FUNCTION_NAME']]\n"
    )
    create(
        served,
        "layered",
        source,
        OTHER_RUNTIME,
        Layers=[layer["LayerVersionArn"]],
        Environment={"Variables": {"COLOUR": "blue"}},
    )

    # When it is invoked
    _, answer = invoke(lambdas, "layered")

    # Then it imported the layer's module, and read its own variables and the runtime's
    assert answer == ["hello from the layer", "blue", f"AWS_Lambda_{OTHER_RUNTIME}", "layered"]


@pytest.mark.usefixtures("other_python_is_the_engines")
def test_its_errors_and_load_failures_answer_as_lambdas_python_runtime(served: LocalCloud):
    # Given functions of another Python: one raises, one has a syntax error, one lacks its handler,
    # one sleeps past its timeout, one returns what JSON cannot hold
    client = create(
        served, "raises", "def handler(event, context):\n    raise KeyError('customerId')\n", OTHER_RUNTIME
    )
    create(served, "broken", "def handler(event, context) return 1\n", OTHER_RUNTIME)
    create(served, "unnamed", "def other(event, context):\n    return 1\n", OTHER_RUNTIME)
    create(
        served,
        "slow",
        "import time\ndef handler(event, context):\n    time.sleep(30)\n",
        OTHER_RUNTIME,
        Timeout=1,
    )
    create(served, "unmarshallable", "def handler(event, context):\n    return {1, 2}\n", OTHER_RUNTIME)

    # When each is invoked
    answers = {
        name: invoke(client, name) for name in ("raises", "broken", "unnamed", "slow", "unmarshallable")
    }

    # Then each is an Unhandled function error in the runtime's words, its frames under /var/task
    assert all(answer["FunctionError"] == "Unhandled" for answer, _ in answers.values())
    raised = answers["raises"][1]
    assert (raised["errorType"], raised["errorMessage"]) == ("KeyError", "'customerId'")
    assert raised["stackTrace"] == [
        "  File \"/var/task/app.py\", line 2, in handler\n    raise KeyError('customerId')\n"
    ]
    assert answers["broken"][1]["errorType"] == "Runtime.UserCodeSyntaxError"
    assert answers["broken"][1]["errorMessage"].startswith("Syntax error in module 'app': ")
    assert answers["unnamed"][1] == {
        "errorType": "Runtime.HandlerNotFound",
        "errorMessage": "Handler 'handler' missing on module 'app'",
        "requestId": answers["unnamed"][1]["requestId"],
        "stackTrace": [],
    }
    assert answers["slow"][1]["errorType"] == "Sandbox.Timedout"
    assert answers["slow"][1]["errorMessage"].endswith("Task timed out after 1.00 seconds")
    assert answers["unmarshallable"][1]["errorType"] == "Runtime.MarshalError"
    # and a function that timed out runs again in a new environment
    assert invoke(client, "raises")[1]["errorType"] == "KeyError"


@pytest.mark.usefixtures("other_python_is_the_engines")
def test_a_function_of_the_engines_own_python_runs_in_process(served: LocalCloud):
    # Given a served function declared for the engine's own Python
    client = create(served, "own-python", REPORT, f"python3.{ENGINE_MINOR}")

    # When it is invoked
    _, own = invoke(client, "own-python")

    # Then it ran in the engine's process
    assert own["pid"] == os.getpid()


@pytest.mark.usefixtures("other_python_is_the_engines")
def test_in_process_a_function_of_another_python_runs_on_the_engines():
    # Given a cloud without an endpoint (moto intercepts only this process's SDK calls), and a
    # function of another Python, installed
    with LocalCloud() as cloud:
        cloud.client("iam").create_role(RoleName="fn-role", AssumeRolePolicyDocument="{}")
        client = create(cloud, "other-python", REPORT, OTHER_RUNTIME)

        # When it is invoked
        _, answer = invoke(client, "other-python")

    # Then it ran in the engine's process, its SDK call answered there
    assert answer["pid"] == os.getpid()
    assert answer["queues"] == []


def fake_python(folder: Path, name: str, minor: int | None) -> Path:
    """An executable that answers the version probe as Python 3.<minor> would (None: as a pyenv shim
    of a version that is not selected, failing)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + (f"echo {minor}\n" if minor is not None else "exit 127\n"))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.fixture
def no_pythons_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    python_process._installed.cache_clear()
    yield tmp_path
    python_process._installed.cache_clear()


def test_the_declared_python_is_found_on_path_then_in_pyenv(no_pythons_found: Path):
    tmp = no_pythons_found
    # Given nothing: no Python 3.12 is found, nor an other than the engine's for the engine's runtime
    assert python_process.interpreter("python3.12") is None
    # Given pyenv's 3.12.7 and 3.12.10, and a python3.13 on PATH that is a failing shim
    fake_python(tmp / "pyenv" / "versions" / "3.12.7" / "bin", "python3.12", 12)
    newest = fake_python(tmp / "pyenv" / "versions" / "3.12.10" / "bin", "python3.12", 12)
    fake_python(tmp / "bin", "python3.13", None)
    fake_python(tmp / "bin", f"python3.{ENGINE_MINOR}", ENGINE_MINOR)
    python_process._installed.cache_clear()
    # Then 3.12 is pyenv's newest, 3.13 none (its shim fails), the engine's own runtime never
    # another process, and runtimes older than the SDK supports (3.10 for boto3 1.44), even
    # installed, or not Python's, none
    assert python_process.interpreter("python3.12") == str(newest)
    assert python_process.interpreter("python3.13") is None
    assert python_process.interpreter(f"python3.{ENGINE_MINOR}") is None
    fake_python(tmp / "bin", "python3.9", 9)
    python_process._installed.cache_clear()
    assert python_process.interpreter("python3.9") is None
    assert python_process.interpreter("nodejs20.x") is None
    # And a python3.12 on PATH comes before pyenv's
    on_path = fake_python(tmp / "bin", "python3.12", 12)
    python_process._installed.cache_clear()
    assert python_process.interpreter("python3.12") == str(on_path)


@pytest.mark.usefixtures("no_pythons_found")
def test_with_no_such_python_a_function_runs_on_the_engines_and_says_what_would_run_it(served: LocalCloud):
    # Given no other Python installed, a served function of another Python whose code the engine's
    # Python cannot load
    client = create(served, "newer", "def handler(event, context) -> int return 1\n", OTHER_RUNTIME)

    # When it is invoked
    with pytest.warns(PythonVersionWarning) as warned:
        _, payload = invoke(client, "newer")

    # Then it failed to load on the engine's Python, and the one line says what would run it
    assert payload["errorType"] == "Runtime.UserCodeSyntaxError"
    version = OTHER_RUNTIME.removeprefix("python")
    assert f"install Python {version} (python{version} on PATH, or with pyenv) to run it there" in str(
        warned[0].message
    )


@pytest.mark.usefixtures("no_pythons_found")
def test_with_no_such_python_a_function_that_loads_runs_on_the_engines_with_one_line(served: LocalCloud):
    # Given no other Python installed, a served function of another Python that the engine's loads
    client = create(served, "portable", "def handler(event, context):\n    return 'ran'\n", OTHER_RUNTIME)

    # When it is invoked twice
    with pytest.warns(PythonVersionWarning) as warned:
        answers = [invoke(client, "portable")[1] for _ in range(2)]

    # Then it ran on the engine's Python, and one line said so and what would run it on its own
    assert answers == ["ran", "ran"]
    (line,) = [str(warning.message) for warning in warned if warning.category is PythonVersionWarning]
    version = OTHER_RUNTIME.removeprefix("python")
    assert line.startswith(
        f"portable declares {OTHER_RUNTIME}; it runs on the engine's Python {sys.version.split()[0]}"
    )
    assert f"install Python {version}" in line


def test_a_function_of_a_python_older_than_the_sdk_runs_on_the_engines_and_says_so(served: LocalCloud):
    # Given a served function declared for Python 3.9 (older than the SDK the engine carries needs),
    # whose code the engine's Python cannot load
    client = create(served, "older", "def handler(event, context) -> int return 1\n", "python3.9")

    # When it is invoked
    with pytest.warns(PythonVersionWarning) as warned:
        _, payload = invoke(client, "older")

    # Then it failed to load on the engine's Python, and the line says which Pythons run on their own
    assert payload["errorType"] == "Runtime.UserCodeSyntaxError"
    oldest = python_process.oldest_minor()
    assert oldest >= 10
    assert f"serve runs a function on its own Python from python3.{oldest} on" in str(warned[0].message)


def installed_pythons() -> list[str]:
    """The runtimes of the other Pythons this machine has (none in CI)."""
    found = []
    for minor in range(9, 14):
        run_time = f"python3.{minor}"
        if python_process.interpreter(run_time) is not None:
            found.append(run_time)
    return found


# Code that loads on some Pythons only: a match statement (3.10), a type alias statement (3.12).
# (The SDK the engine carries needs 3.10: an older Python's function runs on the engine's.)
ONLY_ON = {
    "python3.10": "def handler(event, context):\n    match event:\n        case _:\n            return 'loaded'\n",
    "python3.12": "type Order = dict\ndef handler(event, context):\n    return 'loaded'\n",
}


@pytest.mark.parametrize(
    "run_time", installed_pythons() or [pytest.param("none", marks=pytest.mark.skip("no other Python"))]
)
def test_a_function_runs_on_the_real_python_its_runtime_names(served: LocalCloud, run_time: str):
    # Given a function declared for an installed Python, whose code needs that Python's syntax
    minor = int(run_time.split(".")[1])
    newest_syntax = max(
        (r for r in ONLY_ON if int(r.split(".")[1]) <= minor), key=lambda r: int(r.split(".")[1])
    )
    client = create(served, f"on-{minor}", ONLY_ON[newest_syntax], run_time)
    reporter = create(served, f"report-{minor}", REPORT, run_time)

    # When they are invoked
    _, loaded = invoke(client, f"on-{minor}")
    _, reported = invoke(reporter, f"report-{minor}")

    # Then they ran on that Python, its SDK calls answered by the engine
    assert loaded == "loaded"
    assert reported.get("python") == run_time, reported
    assert isinstance(reported["queues"], list)


def test_what_a_function_in_process_prints_is_its_log(capsys: pytest.CaptureFixture[str]):
    # Given a function that runs in the engine's process and prints to stdout and stderr
    source = (
        "import sys\n"
        "def handler(event, context):\n"
        "    print('charging', event['order'])\n"
        "    print('declined', file=sys.stderr)\n"
        "    return 'done'\n"
    )
    with LocalCloud() as cloud:
        cloud.client("iam").create_role(RoleName="fn-role", AssumeRolePolicyDocument="{}")
        client = create(cloud, "prints", source, f"python3.{ENGINE_MINOR}")

        # When it is invoked with its log's tail, while this thread prints too
        print("the test's own line")
        answer, result = invoke(client, "prints", {"order": "o-1"}, LogType="Tail")
        events = cloud.client("logs").filter_log_events(logGroupName="/aws/lambda/prints")["events"]

    # Then what it printed is its log, between START and END, and in its log group
    tail = base64.b64decode(answer["LogResult"]).decode().splitlines()
    assert result == "done"
    assert tail[1:3] == ["charging o-1", "declined"]
    assert [event["message"] for event in events][1:3] == ["charging o-1", "declined"]
    # and went to stderr, as a function's log does; this thread's own line stayed on stdout
    captured = capsys.readouterr()
    assert captured.out == "the test's own line\n"
    assert "charging o-1\ndeclined\n" in captured.err
