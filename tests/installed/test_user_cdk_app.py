"""A user's own CDK app, run locally from the wheel (issue 29): `python app.py` (what `cdk synth`
runs), then `sfn-idempotency serve --cdk-out cdk.out`, used over boto3 as their clients would."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config

from sfn_idempotency.deployed.executions import history, lambda_invocations
from tests.installed.conftest import COMMAND_DEADLINE_SECONDS, UserEnvironment
from tests.servers import free_port, read_ready_line

STACK = "MyPayments"
REDEPLOY_DEADLINE_SECONDS = 60
EXECUTION_DEADLINE_SECONDS = 30


@dataclass
class Served:
    process: subprocess.Popen[str]
    ready: dict[str, Any]
    stderr: list[str] = field(default_factory=list)

    @property
    def resources(self) -> dict[str, Any]:
        return dict(self.ready["stacks"][STACK]["resources"])

    def arn(self, construct_path: str) -> str:
        (found,) = [
            r["arn"]
            for r in self.resources.values()
            if r.get("path") in {f"{STACK}/{construct_path}", f"{STACK}/{construct_path}/Resource"}
        ]
        return str(found)

    def physical_id(self, construct_path: str) -> str:
        (found,) = [
            r["physicalId"]
            for r in self.resources.values()
            if r.get("path") == f"{STACK}/{construct_path}/Resource"
        ]
        return str(found)

    def client(self, service: str) -> Any:
        environment = self.ready["environment"]
        return boto3.client(
            service,
            endpoint_url=environment["AWS_ENDPOINT_URL"],
            region_name=environment["AWS_REGION"],
            aws_access_key_id=environment["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=environment["AWS_SECRET_ACCESS_KEY"],
            config=Config(inject_host_prefix=False),
        )

    def wait_for_stderr(self, text: str, after: int) -> None:
        deadline = time.monotonic() + REDEPLOY_DEADLINE_SECONDS
        while not any(text in line for line in self.stderr[after:]):
            assert time.monotonic() < deadline, f"serve never said {text!r}: {''.join(self.stderr)}"
            time.sleep(0.05)


@pytest.fixture(scope="module")
def served(user_env: UserEnvironment, cdk_out: Path) -> Iterator[Served]:
    # Given the user's app, synthesized, and served from the installed script
    outdir = cdk_out
    process = subprocess.Popen(
        [
            str(user_env.bin / "sfn-idempotency"),
            "serve",
            "--port",
            str(free_port()),
            "--cdk-out",
            str(outdir),
        ],
        cwd=user_env.project,
        env=user_env.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    ready = read_ready_line(process, deadline=COMMAND_DEADLINE_SECONDS)
    served = Served(process, ready)
    assert process.stderr is not None
    stderr = process.stderr
    drain = threading.Thread(target=lambda: served.stderr.extend(iter(stderr.readline, "")), daemon=True)
    drain.start()
    yield served
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=COMMAND_DEADLINE_SECONDS)
    drain.join(timeout=COMMAND_DEADLINE_SECONDS)
    assert process.returncode == 0, "".join(served.stderr)


def run(served: Served, machine: str, execution_input: Any) -> tuple[dict[str, Any], int]:
    """An execution's description, and how many times it invoked the user's Charge Lambda."""
    sfn = served.client("stepfunctions")
    arn = sfn.start_execution(stateMachineArn=machine, input=json.dumps(execution_input))["executionArn"]
    deadline = time.monotonic() + EXECUTION_DEADLINE_SECONDS
    while (described := sfn.describe_execution(executionArn=arn))["status"] == "RUNNING":
        assert time.monotonic() < deadline, f"{arn} still running"
        time.sleep(0.05)
    return described, lambda_invocations(history(sfn, arn), served.arn("Charge"))


def test_the_ready_line_reports_the_stacks_resources_and_the_shell_environment(served: Served):
    # Then every resource is named by logical id, with its physical name, ARN and construct path
    charge = [r for r in served.resources.values() if r.get("path") == f"{STACK}/Charge/Resource"]
    assert [r["type"] for r in charge] == ["AWS::Lambda::Function"]
    assert charge[0]["arn"].startswith("arn:aws:lambda:us-east-1:123456789012:function:MyPayments-Charge")
    assert served.ready["environment"]["AWS_DISABLE_HOST_PREFIX_INJECTION"] == "true"
    # And nothing was skipped: the user's own alarm and the workflow's metrics are CloudWatch's
    assert served.ready["stacks"][STACK]["skipped"] == []
    alarms = [r for r in served.resources.values() if r["type"] == "AWS::CloudWatch::Alarm"]
    assert any(r.get("path", "").startswith(f"{STACK}/PaymentsFailing") for r in alarms)
    described = served.client("cloudwatch").describe_alarms()["MetricAlarms"]
    assert len(described) == len(alarms)
    # (stderr is read by a thread of the fixture: wait, with a deadline, for the deploy's last line)
    deadline = time.monotonic() + COMMAND_DEADLINE_SECONDS
    while not any("deployed stack" in line for line in served.stderr):
        assert time.monotonic() < deadline, "".join(served.stderr)
        time.sleep(0.05)
    assert [line for line in served.stderr if "skipped" in line] == []


def test_the_stacks_state_machines_are_listed_and_described(served: Served):
    sfn = served.client("stepfunctions")
    machines = {
        r["arn"] for r in served.resources.values() if r["type"] == "AWS::StepFunctions::StateMachine"
    }
    listed = {m["stateMachineArn"] for m in sfn.list_state_machines()["stateMachines"]}
    assert len(machines) == 4
    assert listed == machines
    described = sfn.describe_state_machine(stateMachineArn=served.arn("Checkout"))
    assert described["type"] == "EXPRESS"
    assert (
        "Charge.ComputeKey"
        in json.loads(described["definition"])["States"]["Charge"]["Branches"][0]["States"]
    )


def test_a_duplicate_replays_and_a_new_key_runs_the_business_lambda_again(served: Served):
    # Given the stack's idempotent payments workflow
    payments = served.arn("Payments/StateMachine")
    payment = {"paymentId": f"p-{uuid.uuid4()}", "amount": 12}
    # When the same payment comes twice, then a new one
    (first, first_calls), (again, again_calls) = (
        run(served, payments, payment),
        run(served, payments, payment),
    )
    other, other_calls = run(served, payments, {**payment, "paymentId": f"p-{uuid.uuid4()}"})
    # Then the duplicate replayed the first's output; only new keys reached the Lambda
    assert [first["status"], again["status"], other["status"]] == ["SUCCEEDED"] * 3
    assert again["output"] == first["output"]
    assert [first_calls, again_calls, other_calls] == [1, 0, 1]
    # And both records are COMPLETED in the stack's own table
    table = served.physical_id("Payments/Table/Table")
    items = served.client("dynamodb").scan(TableName=table, ConsistentRead=True)["Items"]
    mine = [
        item
        for item in items
        if item["owner"]["S"].startswith((first["executionArn"], other["executionArn"]))
    ]
    assert sorted(item["status"]["S"] for item in mine) == ["COMPLETED", "COMPLETED"]


def test_the_users_map_with_an_idempotent_step_charges_each_payment_once(served: Served):
    settlement = served.arn("Settlement")
    shared = {"paymentId": f"p-{uuid.uuid4()}", "amount": 2}
    first, first_calls = run(
        served, settlement, {"payments": [{"paymentId": f"p-{uuid.uuid4()}", "amount": 1}, shared]}
    )
    second, second_calls = run(
        served, settlement, {"payments": [shared, {"paymentId": f"p-{uuid.uuid4()}", "amount": 3}]}
    )
    assert (first["status"], second["status"]) == ("SUCCEEDED", "SUCCEEDED")
    assert (first_calls, second_calls) == (2, 1)
    assert json.loads(second["output"])[0] == json.loads(first["output"])[1]


def test_the_printed_environment_lets_an_sdk_start_a_sync_execution(
    served: Served, user_env: UserEnvironment
):
    # Given the user's shell with `eval "$(sfn-idempotency env ...)"`, and their SDK's defaults
    script = (
        f'eval "$({user_env.bin / "sfn-idempotency"} env --endpoint-url {served.ready["endpoint"]})" && '
        f'{user_env.python} -c "import boto3, json; '
        f"answer = boto3.client('stepfunctions').start_sync_execution(stateMachineArn='{served.arn('Checkout')}', "
        f"input=json.dumps({{'paymentId': 'sync-1', 'amount': 4}})); print(answer['status'])\""
    )
    environment = {name: value for name, value in user_env.env().items() if not name.startswith("AWS_")}
    # When it starts the Express checkout synchronously (the SDK's "sync-" host prefix is off)
    result = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        env=environment,
        timeout=COMMAND_DEADLINE_SECONDS,
        check=False,
    )
    # Then it answers at once
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "SUCCEEDED"


def test_a_redeploy_after_an_edit_runs_the_new_code_and_keeps_the_records(
    served: Served, user_env: UserEnvironment, cdk_out: Path, tmp_path: Path
):
    # Given a completed payment and its record
    payments = served.arn("Payments/StateMachine")
    before, _ = run(served, payments, {"paymentId": f"p-{uuid.uuid4()}", "amount": 1})
    table = served.physical_id("Payments/Table/Table")
    dynamodb = served.client("dynamodb")
    records_before = dynamodb.scan(TableName=table, ConsistentRead=True)["Count"]
    # When the user edits their Lambda, synthesizes again and asks serve to deploy again (SIGHUP)
    handler = user_env.project / "functions" / "charge" / "handler.py"
    original = handler.read_text()
    shutil.copytree(cdk_out, tmp_path / "synthesized")
    handler.write_text(
        original.replace('"amount": event["amount"]}', '"amount": event["amount"], "settledBy": "v2"}')
    )
    try:
        user_env.synthesize()
        mark = len(served.stderr)
        served.process.send_signal(signal.SIGHUP)
        served.wait_for_stderr(f"updated stack {STACK}", after=mark)
    finally:
        handler.write_text(original)
        shutil.rmtree(cdk_out)  # the project as it was, for the tests after this one
        shutil.copytree(tmp_path / "synthesized", cdk_out)
    # Then the table kept its records, the machine is the same, and the new code runs
    assert dynamodb.scan(TableName=table, ConsistentRead=True)["Count"] == records_before
    after, calls = run(served, payments, {"paymentId": f"p-{uuid.uuid4()}", "amount": 2})
    assert calls == 1
    assert json.loads(after["output"])["settledBy"] == "v2"
    # And the replay of the earlier payment is still the earlier answer
    assert json.loads(before["output"]).get("settledBy") is None


def test_deploying_the_app_needs_no_cdk_library(served: Served, user_env: UserEnvironment):
    # Given the synthesized app (the served fixture synthesized it into the project's cdk.out)
    script = (
        "import sys, warnings\n"
        "from sfn_idempotency.testing import LocalCloud, SkippedResourceWarning\n"
        "warnings.simplefilter('ignore', SkippedResourceWarning)\n"
        "with LocalCloud() as cloud:\n"
        "    stack = cloud.deploy_cdk_out('cdk.out').stack()\n"
        "print(len(stack.resources), sorted({m.split('.')[0] for m in sys.modules} & {'aws_cdk', 'jsii', 'constructs'}))\n"
    )
    # When it is deployed in process
    result = user_env.run([user_env.python, "-c", script])
    # Then it deployed without importing aws-cdk-lib, jsii or constructs: the [local] extra suffices
    count, imported = result.stdout.strip().split(" ", 1)
    assert int(count) == len(served.resources)
    assert imported == "[]"


def test_the_apps_payments_machine_checks_clean_as_the_guide_runs_check(
    cdk_out: Path, user_env: UserEnvironment
):
    # Given the app synthesized (its key Lambda deployed from the app's own asset, as on AWS)
    # When the guide's check runs on its payments machine, named as the refusal lists it, with no --watch
    result = user_env.run(
        [
            str(user_env.bin / "sfn-idempotency"),
            "check",
            "--cdk-out",
            str(cdk_out),
            "--state-machine",
            f"{STACK}/Payments/StateMachine",
            "--request",
            '{"paymentId": "p-1", "amount": 10}',
            "--schedules",
            "20",
        ],
        check=False,
    )
    # Then every schedule passed, Charge watched and the key Lambda not (before, schedule 7 found
    # "two runs took effect" on Charge: a redriven claim made on the asset's clock, taken over by a
    # Claim on the engine's clock after the explorer moved it past a lease)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "PASSED, 20 schedules" in result.stdout
    assert "ChargeEC431097" in result.stdout
    assert "ComputeKey" not in result.stdout
