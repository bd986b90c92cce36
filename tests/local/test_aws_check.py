"""`make aws-check`'s script, run against `sfn-idempotency serve` instead of a deployed stack."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sfn_idempotency.local import LocalCloud
from tests import REPOSITORY_ROOT
from tests.servers import clean_environment, read_ready_line, start_server

CHECK_DEADLINE_SECONDS = 180
SCENARIOS = (
    "first order",
    "duplicate (client resend)",
    "concurrent duplicate",
    "...the first of the two",
    "failing order (released)",
    "retry of the failed order",
    "invalid order (business error)",
)


@pytest.fixture
def endpoint() -> Iterator[str]:
    process = start_server()
    try:
        yield str(read_ready_line(process)["endpoint"])
    finally:
        process.terminate()
        process.wait(CHECK_DEADLINE_SECONDS)


def aws_check(*arguments: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scripts.aws_check", *arguments],
        cwd=REPOSITORY_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=CHECK_DEADLINE_SECONDS,
        check=False,
    )


def test_the_scenarios_hold_on_the_endpoint_as_on_the_embedded_engine(endpoint: str):
    # When the check runs against a served endpoint
    result = aws_check("--endpoint-url", endpoint, env=clean_environment())

    # Then every scenario held its promise on both, along the same states, with the same business runs
    assert result.returncode == 0, result.stdout + result.stderr
    side_by_side = result.stdout.split("\n\n")[0].splitlines()
    assert side_by_side[0].split() == ["scenario", "embedded", "engine", "endpoint", endpoint]
    assert [line[:32].strip() for line in side_by_side[1:]] == list(SCENARIOS)
    assert "differs" not in result.stdout
    assert "UNEXPECTED" not in result.stdout
    # And each probe of what the provable key relies on was answered there as the engine answers it
    assert "DIFFERS" not in result.stdout
    assert result.stdout.count("  same  ") == len(__import__("scripts.aws_probes").aws_probes.PROBES)
    assert "3 records, all ['COMPLETED']; business step ran 5 times for 7 executions." in result.stdout


def test_without_credentials_it_refuses_in_one_line(tmp_path: Path):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    environment |= {
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    result = aws_check(env=environment)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "needs AWS credentials" in result.stderr
    assert result.stdout == ""


ROLE_ARN = "arn:aws:iam::123456789012:role/probe"


def test_each_probe_of_the_provable_key_is_answered_as_the_suite_pins_it():
    # The engine's answer to each probe is its expectation: make aws-check compares AWS's with it
    # (retries wait as long as on AWS, as `serve` waits: $millis() is the time of day)
    from scripts import aws_probes

    with LocalCloud(retry_wait_scale=1.0) as cloud:
        for probe in aws_probes.PROBES:
            assert probe.ask(cloud.sfn, ROLE_ARN) == probe.expected, probe.name
