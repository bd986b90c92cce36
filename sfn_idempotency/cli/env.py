"""``sfn-idempotency env``: the exports that point the AWS CLI and SDKs at serve."""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from sfn_idempotency.cli.options import DEFAULT_HOST, DEFAULT_PORT, endpoint_url
from sfn_idempotency.deployed.remote import LOCAL_REGION, shell_environment


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "env",
        help="print the exports that point the AWS CLI and SDKs at serve, for eval",
        description='Prints export lines for a POSIX shell: eval "$(sfn-idempotency env)". They set '
        "the endpoint, the region, placeholder credentials and AWS_DISABLE_HOST_PREFIX_INJECTION (without "
        "it, start-sync-execution and test-state go to a sync- host that does not exist); and an aws "
        "function that gives the AWS CLI --endpoint-url, which AWS CLI v1 needs for SQS (it sends SQS "
        "to queue.amazonaws.com whatever AWS_ENDPOINT_URL says).",
    )
    command.add_argument(
        "--endpoint-url",
        type=endpoint_url,
        default=f"http://{DEFAULT_HOST}:{DEFAULT_PORT}",
        help=f"serve's endpoint (default http://{DEFAULT_HOST}:{DEFAULT_PORT})",
    )
    command.add_argument("--region", default=LOCAL_REGION, help=f"default {LOCAL_REGION}")


def run(arguments: argparse.Namespace) -> int:
    for name, value in shell_environment(arguments.endpoint_url, arguments.region).items():
        print(f"export {name}={shlex.quote(value)}")
    # AWS CLI v1 pins some services' endpoints (SQS's among them) unless --endpoint-url is on its
    # command line; v2 takes the flag as it takes the variable.
    print(f'aws() {{ command aws --endpoint-url {shlex.quote(arguments.endpoint_url)} "$@"; }}')
    return 0
