"""`make aws-check`: the demo's scenarios on AWS, side by side with the embedded engine.

Deploys the example stack under a unique name (its table destroyed with it), runs the demo's
scenarios against the deployed state machine with the demo's own assertions (outputs, error names,
business runs, records), prints both tables, and destroys the stack even when a scenario fails.
With ``--endpoint-url`` it runs against that endpoint instead (``sfn-idempotency serve``), without
deploying: that is how the tests run this script.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import boto3

from scripts import aws_probes
from sfn_idempotency import demo
from sfn_idempotency.deployed.remote import RemoteTarget, client, default_state_machine, only_table
from sfn_idempotency.local.engine.targets import EMBEDDED_HOLD_SECONDS
from sfn_idempotency.settings import example_settings

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
STACK_PREFIX = "SfnIdempotencyCheck"
CDK_DEADLINE_SECONDS = 1800
EXIT_BAD_INPUT = 2


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="aws-check", description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint-url", help="run against this endpoint instead of deploying to AWS")
    parser.add_argument("--region", help="AWS region (default: the standard chain)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    arguments = parse(argv)
    session = boto3.Session(region_name=arguments.region)
    if arguments.endpoint_url:
        sfn = client("stepfunctions", arguments.endpoint_url, arguments.region)
        dynamodb = client("dynamodb", arguments.endpoint_url, arguments.region)
        remote = RemoteTarget(
            sfn,
            dynamodb,
            default_state_machine(sfn),
            only_table(dynamodb),
            example_settings(),
            concurrent_hold_seconds=EMBEDDED_HOLD_SECONDS,  # an engine at an endpoint runs as fast
        )
        return compare(remote, f"endpoint {arguments.endpoint_url}", out)
    if session.get_credentials() is None or session.region_name is None:
        print(
            "aws-check: needs AWS credentials and a region from the standard chain (or --endpoint-url)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    stack = f"{STACK_PREFIX}{uuid.uuid4().hex[:8]}"
    try:
        outputs = deploy(stack)
        remote = RemoteTarget(
            session.client("stepfunctions"),
            session.client("dynamodb"),
            outputs["StateMachineArn"],
            outputs["TableName"],
            example_settings(),
        )
        return compare(remote, f"AWS stack {stack} in {session.region_name}", out)
    finally:
        destroy(stack)


def compare(remote: RemoteTarget, where: str, out: TextIO) -> int:
    """Both runs of the scenarios, side by side; 0 when both held every promise and took the same paths."""
    local_rows = run_locally()
    remote_rows = demo.run_scenarios(remote)
    print(f"{'scenario':<32}{'embedded engine':<40}{where}", file=out)
    same_paths = True
    for local, there in zip(local_rows, remote_rows, strict=True):
        same = (
            local.result.states == there.result.states
            and local.result.business_runs == there.result.business_runs
        )
        same_paths &= same
        print(f"{local.scenario:<32}{cell(local):<40}{cell(there)}{'' if same else '  <- differs'}", file=out)
    print(f"\n{where}:\n" + "\n".join(demo.table_lines(remote_rows)), file=out)
    print(f"\n{demo.summary(remote_rows, remote)}", file=out)
    failed = demo.unexpected(remote_rows) + demo.unexpected(local_rows)
    if failed:
        print(f"UNEXPECTED: {', '.join(failed)}", file=out)
    print(f"\nWhat the provable key relies on (ledger L50), {where} beside the engine:", file=out)
    role_arn = remote.sfn.describe_state_machine(stateMachineArn=remote.state_machine_arn)["roleArn"]
    differing = aws_probes.check(remote.sfn, role_arn, out)
    return 0 if same_paths and not failed and not differing else 1


def cell(row: demo.Row) -> str:
    return f"{row.result.status} {row.result.error or ''} ({row.result.business_runs} run)".replace("  ", " ")


def run_locally() -> list[demo.Row]:
    with demo.embedded_target() as target:
        return demo.run_scenarios(target)


def cdk(*arguments: str) -> subprocess.CompletedProcess[str]:
    command = ["npx", "--no-install", "cdk", *arguments, "--app", f"{sys.executable} app.py"]
    return subprocess.run(command, cwd=REPOSITORY_ROOT, check=True, text=True, timeout=CDK_DEADLINE_SECONDS)


def deploy(stack: str) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as folder:
        outputs_file = Path(folder) / "outputs.json"
        cdk(
            "deploy", stack, "--require-approval", "never", "--outputs-file", str(outputs_file),
            "-c", f"stackName={stack}", "-c", "tableRemovalPolicy=destroy",
        )  # fmt: skip
        outputs: dict[str, str] = json.loads(outputs_file.read_text())[stack]
        return outputs


def destroy(stack: str) -> None:
    cdk("destroy", stack, "--force", "-c", f"stackName={stack}", "-c", "tableRemovalPolicy=destroy")


if __name__ == "__main__":
    sys.exit(main())
