"""`serve --cdk-out` (issue 29): the user's assembly instead of the example's workflows, re-deployed
when `cdk synth` writes it again (--watch); `env` prints what a shell exports to use serve; a
wrong handler name says which handler and which file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.runtimes.python_interface import HandlerNotFoundError
from tests.local.test_cdk_out import STACK, firehose_app, write_app
from tests.servers import CLI, read_ready_line, start_server

REDEPLOY_DEADLINE_SECONDS = 30
STOP_DEADLINE_SECONDS = 30


class StderrLines:
    """serve's standard error, read as it comes (a full pipe would block serve)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stderr is not None
        self.lines: list[str] = []
        stream = process.stderr
        self._reader = threading.Thread(
            target=lambda: self.lines.extend(iter(stream.readline, "")), daemon=True
        )
        self._reader.start()

    def wait_for(self, text: str, after: int = 0) -> None:
        deadline = time.monotonic() + REDEPLOY_DEADLINE_SECONDS
        while not any(text in line for line in self.lines[after:]):
            assert time.monotonic() < deadline, f"serve never said {text!r}: {''.join(self.lines)}"
            time.sleep(0.05)


@pytest.fixture(scope="module")
def watched(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[subprocess.Popen[str], dict[str, Any], StderrLines, Path]]:
    app = write_app(tmp_path_factory.mktemp("watched") / "cdk.out")
    process = start_server("--cdk-out", str(app), "--watch")
    ready = read_ready_line(process)
    stderr = StderrLines(process)
    yield process, ready, stderr, app
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=STOP_DEADLINE_SECONDS)


def stepfunctions(ready: dict[str, Any]) -> Any:
    environment = ready["environment"]
    return boto3.client(
        "stepfunctions",
        endpoint_url=environment["AWS_ENDPOINT_URL"],
        region_name=environment["AWS_REGION"],
        aws_access_key_id=environment["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=environment["AWS_SECRET_ACCESS_KEY"],
        config=Config(inject_host_prefix=False),
    )


def run(client: Any, machine: str, payload: dict[str, Any]) -> dict[str, Any]:
    arn = client.start_execution(stateMachineArn=machine, input=json.dumps(payload))["executionArn"]
    deadline = time.monotonic() + REDEPLOY_DEADLINE_SECONDS
    while (described := client.describe_execution(executionArn=arn))["status"] == "RUNNING":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return dict(described)


def test_serve_deploys_the_assembly_instead_of_the_example_and_redeploys_on_change(watched):
    _, ready, stderr, app = watched
    # Then the ready line names the stack's resources and no example workflow
    machine = ready["stacks"][STACK]["resources"]["Checkout"]["arn"]
    assert "stateMachineArns" not in ready
    assert "tableName" not in ready
    client = stepfunctions(ready)
    assert [m["stateMachineArn"] for m in client.list_state_machines()["stateMachines"]] == [machine]
    version = json.loads(run(client, machine, {"amount": 1})["output"])["version"]
    # When `cdk synth` writes the assembly again with new code
    mark = len(stderr.lines)
    write_app(app, version=version + 1)
    # Then serve deploys it again, in place, and the new code runs
    stderr.wait_for(f"updated stack {STACK}", after=mark)
    assert json.loads(run(client, machine, {"amount": 2})["output"])["version"] == version + 1


def test_a_failed_redeploy_is_reported_and_the_stack_stays(watched):
    process, ready, stderr, app = watched
    machine = ready["stacks"][STACK]["resources"]["Checkout"]["arn"]
    version = json.loads(run(stepfunctions(ready), machine, {"amount": 1})["output"])["version"]
    # When the new synth has a state machine whose definition CreateStateMachine refuses
    mark = len(stderr.lines)
    extra = {
        "Broken": {
            "Type": "AWS::StepFunctions::StateMachine",
            "Properties": {
                "RoleArn": "arn:aws:iam::123456789012:role/r",
                "DefinitionString": '{"StartAt": "Nowhere", "States": {}}',
            },
        },
    }
    write_app(app, version=version + 1, extra_resources=extra)
    # Then the failure is one line, and the deployed stack still answers with the old code
    stderr.wait_for("re-deploy of", after=mark)
    assert any(
        line.startswith("sfn-idempotency: re-deploy of") and "the update failed" in line
        for line in stderr.lines[mark:]
    )
    assert json.loads(run(stepfunctions(ready), machine, {"amount": 1})["output"])["version"] == version
    assert process.poll() is None


def test_a_folder_that_is_not_an_assembly_stops_serve_with_one_line(tmp_path: Path):
    process = start_server("--cdk-out", str(tmp_path))
    _, stderr = process.communicate(timeout=STOP_DEADLINE_SECONDS)
    assert process.returncode == 2
    assert (
        stderr.strip()
        == f"sfn-idempotency: error: {tmp_path} is not a cloud assembly: it has no manifest.json (run cdk synth)"
    )


def test_stand_in_lets_serve_deploy_an_app_that_needs_what_the_engine_cannot_run(tmp_path: Path):
    # Given an app whose machine needs a Firehose stream (refused without a stand-in)
    app = firehose_app(tmp_path / "cdk.out")

    # When serve deploys it with the stream's type stood in for
    process = start_server("--cdk-out", str(app), "--stand-in", "AWS::KinesisFirehose::*")
    try:
        ready = read_ready_line(process)
        stderr = StderrLines(process)
        # Then the app is served, and one line named the stand-in
        stderr.wait_for("stood in for Stream (AWS::KinesisFirehose::DeliveryStream)")
        stack = ready["stacks"][STACK]
        assert "Audit" in stack["resources"]
        assert "Stream" not in stack["resources"]
        assert stack["stoodIn"] == [
            {
                "logicalId": "Stream",
                "type": "AWS::KinesisFirehose::DeliveryStream",
                "arn": "arn:aws:firehose:us-east-1:123456789012:deliverystream/Shop-Stream-STANDIN",
            }
        ]
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=STOP_DEADLINE_SECONDS)


def test_env_prints_exports_a_shell_can_eval():
    # Given a shell with no AWS settings of its own
    shell = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    # When it evaluates what `env` prints
    result = subprocess.run(
        ["bash", "-c", f'eval "$({CLI} env --endpoint-url http://127.0.0.1:9999)" && env'],
        capture_output=True,
        text=True,
        check=True,
        timeout=STOP_DEADLINE_SECONDS,
        env=shell,
    )
    # Then it has exactly what an SDK needs to use serve
    exported = dict(line.split("=", 1) for line in result.stdout.splitlines() if line.startswith("AWS_"))
    assert exported == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9999",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_DISABLE_HOST_PREFIX_INJECTION": "true",
    }


def test_env_gives_the_aws_cli_its_endpoint_on_the_command_line(tmp_path: Path):
    # Given an `aws` on the PATH that says how it was called (AWS CLI v1 sends SQS to
    # queue.amazonaws.com unless --endpoint-url is on its command line, whatever AWS_ENDPOINT_URL says)
    (tmp_path / "aws").write_text('#!/bin/sh\necho "$@"\n')
    (tmp_path / "aws").chmod(0o755)
    shell = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    shell["PATH"] = f"{tmp_path}{os.pathsep}{shell['PATH']}"
    # When a POSIX shell evaluates what `env` prints, then calls aws
    result = subprocess.run(
        [
            "sh",
            "-c",
            f'eval "$({CLI} env --endpoint-url http://127.0.0.1:9999)" && aws sqs get-queue-url --queue-name q',
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=STOP_DEADLINE_SECONDS,
        env=shell,
    )
    # Then the CLI got the endpoint as its flag, before the command
    assert result.stdout.strip() == "--endpoint-url http://127.0.0.1:9999 sqs get-queue-url --queue-name q"


def test_a_wrong_handler_name_names_the_handler_and_the_file(local_cloud: LocalCloud, tmp_path: Path):
    # Given code whose module has no function of the name the handler string gives
    (tmp_path / "billing").mkdir()
    (tmp_path / "billing" / "__init__.py").write_text("")
    (tmp_path / "billing" / "charge.py").write_text("def handler(event, context):\n    return 1\n")
    # When it is added, then the error names the handler string and the file, not a module alias
    with pytest.raises(HandlerNotFoundError) as refused:
        local_cloud.add_function("charge", "billing.charge.handle", code_dir=tmp_path)
    assert str(refused.value) == (
        "Handler 'handle' missing on module 'billing.charge': handler 'billing.charge.handle' "
        "names a function that billing/charge.py does not define"
    )


def test_a_wrong_handler_name_through_the_lambda_api_is_runtime_handler_not_found(
    local_cloud: LocalCloud, tmp_path: Path
):
    import io
    import zipfile

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as code:
        code.writestr("charge.py", "def handler(event, context):\n    return 1\n")
    trust = {
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ]
    }
    role = local_cloud.client("iam").create_role(
        RoleName="charge", AssumeRolePolicyDocument=json.dumps(trust)
    )
    functions = local_cloud.client("lambda")
    functions.create_function(
        FunctionName="charge",
        Runtime="python3.12",
        Role=role["Role"]["Arn"],
        Handler="charge.handle",
        Code={"ZipFile": archive.getvalue()},
    )
    answer = functions.invoke(FunctionName="charge", Payload=b"{}")
    payload = json.loads(answer["Payload"].read())
    assert answer["FunctionError"] == "Unhandled"
    assert payload["errorType"] == "Runtime.HandlerNotFound"
    assert payload["errorMessage"] == "Handler 'handle' missing on module 'charge'"


def test_an_edit_made_before_the_watch_looked_is_deployed(tmp_path: Path):
    # Given a template fingerprinted before its first deployment, then edited before the watch
    # thread took its first look (serve printed its ready line; the thread had not run yet)
    from sfn_idempotency.local.apps import sam_templates
    from sfn_idempotency.local.apps.cloud_assembly import keep_deploying

    template = tmp_path / "template.yaml"
    template.write_text("Resources: {}\n")
    deployed = sam_templates.fingerprint(template)
    template.write_text("Resources: {}\n# edited\n")
    redeployed, stop = threading.Event(), threading.Event()

    # When the watch runs
    watch = threading.Thread(
        target=keep_deploying,
        args=(redeployed.set, lambda: sam_templates.fingerprint(template), deployed, "t", stop, print),
        daemon=True,
    )
    watch.start()

    # Then it deploys the edit
    try:
        assert redeployed.wait(REDEPLOY_DEADLINE_SECONDS)
    finally:
        stop.set()
        watch.join(REDEPLOY_DEADLINE_SECONDS)


SYNTH_SCRIPT = """\
import json, os, shutil, sys
# What `cdk synth` gives an app: where to write, and the context of cdk.json and cdk.context.json
shutil.copytree(sys.argv[1], os.environ["CDK_OUTDIR"], dirs_exist_ok=True)
context = json.loads(os.environ["CDK_CONTEXT_JSON"])
with open("seen.json", "w") as seen:
    json.dump({"context": context, "region": os.environ["CDK_DEFAULT_REGION"]}, seen)
print("synthesized")
"""


def test_cdk_app_synthesizes_the_app_as_cdk_synth_does_and_serves_its_assembly(tmp_path: Path):
    # Given a project whose cdk.json names its app and context, and a cached context beside it (the
    # app here copies an assembly made ahead into CDK_OUTDIR: what `python app.py` does is CDK's own)
    assembly = write_app(tmp_path / "made-ahead")
    project = tmp_path / "project"
    project.mkdir()
    (project / "synth.py").write_text(SYNTH_SCRIPT)
    app = f"{sys.executable} synth.py {assembly}"
    (project / "cdk.json").write_text(json.dumps({"app": app, "context": {"stage": "local", "size": 1}}))
    (project / "cdk.context.json").write_text(json.dumps({"size": 2}))

    # When serve is started there with --cdk-app and no command (cdk.json's app is run)
    process = start_server("--cdk-app", "--no-console", cwd=project)
    try:
        ready = read_ready_line(process)
        # Then the app ran with CDK_OUTDIR (cdk.out) and the merged context, and its stack is served
        seen = json.loads((project / "seen.json").read_text())
        assert seen == {"context": {"stage": "local", "size": 2}, "region": ready["region"]}
        assert (project / "cdk.out" / "manifest.json").is_file()
        machine = ready["stacks"][STACK]["resources"]["Checkout"]["arn"]
        assert run(stepfunctions(ready), machine, {"amount": 1})["status"] == "SUCCEEDED"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=STOP_DEADLINE_SECONDS)


def test_cdk_app_that_fails_stops_serve_with_one_line(tmp_path: Path):
    # Given a cdk.json whose app fails; When serve synthesizes it
    (tmp_path / "cdk.json").write_text(json.dumps({"app": f"{sys.executable} -c 'raise SystemExit(3)'"}))
    process = start_server("--cdk-app", cwd=tmp_path)
    _, stderr = process.communicate(timeout=STOP_DEADLINE_SECONDS)
    # Then serve stops with one line naming the app and its exit code
    assert process.returncode == 2
    assert stderr.strip().endswith("exited 3 (its output is above)"), stderr
    assert "Traceback" not in stderr
