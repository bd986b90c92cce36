"""The ``sfn-idempotency`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from sfn_idempotency import demo


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sfn-idempotency",
        description="Exactly-once business steps on AWS Step Functions, and a local engine to run them.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser(
        "demo",
        help="walk the example order workflow through its paths on the embedded engine",
        description="Runs the example order workflow on the embedded engine (moto's Step Functions "
        "interpreter, moto DynamoDB, the real handlers) and prints what each scenario did.",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    if arguments.command == "demo":
        return demo.main()
    raise AssertionError(f"unhandled command {arguments.command}")


if __name__ == "__main__":
    sys.exit(main())
