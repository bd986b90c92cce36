"""``sfn-idempotency start``: start an execution, wait for it, print its output."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sfn_idempotency.cli.options import (
    DEFAULT_WAIT_SECONDS,
    EXIT_FAILED_EXECUTION,
    add_endpoint_flags,
    aws_client,
    read_json,
    seconds,
)
from sfn_idempotency.deployed.executions import wait_for_execution
from sfn_idempotency.deployed.remote import default_state_machine


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "start",
        help="start an execution, wait for it, print its output",
        description="Starts an execution and waits for it. On success prints the output JSON on stdout "
        "and exits 0; on failure prints the error and cause on stderr and exits 1. Without "
        "--endpoint-url it talks to AWS through the standard credential and region chain.",
    )
    command.add_argument(
        "--input", required=True, metavar="JSON|@FILE", help="execution input, inline or @path"
    )
    command.add_argument("--name", help="execution name (AWS: starting the same name twice is idempotent)")
    command.add_argument(
        "--state-machine",
        metavar="ARN",
        help="default: the one named 'idempotency' (as serve creates), else the only one",
    )
    command.add_argument("--no-wait", action="store_true", help="print the execution ARN and return at once")
    command.add_argument(
        "--timeout", type=seconds, default=DEFAULT_WAIT_SECONDS, help="seconds to wait (default 300)"
    )
    add_endpoint_flags(command)


def run(arguments: argparse.Namespace) -> int:
    execution_input = read_json(arguments.input)
    sfn = aws_client("stepfunctions", arguments)
    state_machine = arguments.state_machine or default_state_machine(sfn)
    kwargs = {"name": arguments.name} if arguments.name else {}
    execution_arn = sfn.start_execution(
        stateMachineArn=state_machine, input=json.dumps(execution_input), **kwargs
    )["executionArn"]
    if arguments.no_wait:
        print(json.dumps({"executionArn": execution_arn}))
        return 0
    try:
        description = wait_for_execution(sfn, execution_arn, arguments.timeout)
    except TimeoutError as error:
        print(f"sfn-idempotency: {error}", file=sys.stderr)
        return EXIT_FAILED_EXECUTION
    if description["status"] == "SUCCEEDED":
        print(description["output"])
        return 0
    print(f"{description['status']}: {description.get('error', '')}", file=sys.stderr)
    if description.get("cause"):
        print(description["cause"], file=sys.stderr)
    return EXIT_FAILED_EXECUTION
