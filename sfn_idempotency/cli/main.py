"""The ``sfn-idempotency`` command: its parser, one subcommand per module of this package, and the
one place where bad input becomes one line on stderr and exit code 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from botocore.exceptions import BotoCoreError, ClientError

from sfn_idempotency import __version__
from sfn_idempotency.cli import check, demo, env, forget, graph, record, serve, start, wrap
from sfn_idempotency.cli.options import EXIT_BAD_INPUT, CliError, OneLineParser, one_line
from sfn_idempotency.deployed.remote import NotExactlyOneError
from sfn_idempotency.extras import MissingExtraError
from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError, IdempotencyKeyError
from sfn_idempotency.wrap import WrapError

# Each command's module, in the order ``--help`` lists them: its parser, and what it runs.
COMMANDS: dict[str, ModuleType] = {
    "demo": demo,
    "serve": serve,
    "env": env,
    "start": start,
    "record": record,
    "forget": forget,
    "wrap": wrap,
    "check": check,
    "graph": graph,
}


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="sfn-idempotency",
        description="Exactly-once business steps on AWS Step Functions, and a local engine that runs "
        "the same state machine on moto's interpreter with the real Lambda handlers.",
        epilog="Exit codes: 0 success, 1 the execution failed or no record exists, 2 bad input.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for command in COMMANDS.values():
        command.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    try:
        return int(COMMANDS[arguments.command].run(arguments))
    except (
        CliError,
        ConfigurationError,
        IdempotencyKeyError,
        MissingExtraError,
        NotExactlyOneError,
        WrapError,
    ) as error:
        return _bad_input(str(error))

    except ClientError as error:
        return _bad_input(f"{error.response['Error']['Code']}: {error.response['Error'].get('Message', '')}")
    except BotoCoreError as error:
        return _bad_input(str(error))


def _bad_input(message: str) -> int:
    print(f"sfn-idempotency: error: {one_line(message)}", file=sys.stderr)
    return EXIT_BAD_INPUT


def run() -> NoReturn:
    sys.exit(main())
