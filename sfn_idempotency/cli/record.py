"""``sfn-idempotency record``: the record of an event or key, in human time."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import Any

from sfn_idempotency.cli.options import (
    EXIT_FAILED_EXECUTION,
    add_record_parser,
    aws_client,
    record_key,
    records_table,
)
from sfn_idempotency.deployed.records import describe, plain


def add_parser(commands: Any) -> None:
    add_record_parser(
        commands,
        "record",
        "show the record of an event or key",
        "Prints status, owner, expiry and lease in human time, and the stored result. Exits 1 when there "
        "is no record.",
    )


def run(arguments: argparse.Namespace) -> int:
    key = record_key(arguments)
    dynamodb = aws_client("dynamodb", arguments)
    item = dynamodb.get_item(
        TableName=records_table(arguments, dynamodb), Key={"id": {"S": key}}, ConsistentRead=True
    )
    if "Item" not in item:
        print(f"no record for {key}", file=sys.stderr)
        return EXIT_FAILED_EXECUTION
    print(describe(plain(item["Item"]), dt.datetime.now(dt.UTC)))
    return 0
