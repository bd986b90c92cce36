"""``sfn-idempotency forget``: delete the record of an event or key, so that it runs again."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sfn_idempotency.cli.options import (
    EXIT_FAILED_EXECUTION,
    CliError,
    add_record_parser,
    aws_client,
    record_key,
    records_table,
)


def add_parser(commands: Any) -> None:
    command = add_record_parser(
        commands,
        "forget",
        "delete the record of an event or key (needs --yes)",
        "Deletes the record so the next execution runs the business step again: the operator's escape "
        "hatch after a bad deploy.",
    )
    command.add_argument("--yes", action="store_true", help="really delete")


def run(arguments: argparse.Namespace) -> int:
    if not arguments.yes:
        raise CliError("forget deletes a record and lets its event run again: add --yes to confirm")
    key = record_key(arguments)
    dynamodb = aws_client("dynamodb", arguments)
    deleted = dynamodb.delete_item(
        TableName=records_table(arguments, dynamodb), Key={"id": {"S": key}}, ReturnValues="ALL_OLD"
    )
    if "Attributes" not in deleted:
        print(f"no record for {key}", file=sys.stderr)
        return EXIT_FAILED_EXECUTION
    print(f"forgot {key} (was {deleted['Attributes']['status']['S']})")
    return 0
