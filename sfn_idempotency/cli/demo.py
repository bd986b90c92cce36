"""``sfn-idempotency demo``: the example order workflow's paths on the embedded engine."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(commands: Any) -> None:
    commands.add_parser(
        "demo",
        help="walk the example order workflow through its paths on the embedded engine",
        description="Runs the example order workflow on the embedded engine (moto's Step Functions "
        "interpreter, moto DynamoDB, the real handlers) and prints, per scenario, the status, output "
        "or error, how many times the business step ran and the states visited. Exits 1 if any "
        "scenario did not behave as promised.",
    )


def run(arguments: argparse.Namespace) -> int:
    from sfn_idempotency import demo

    return demo.main()
