"""``sfn-idempotency graph``: the state machine as a Mermaid diagram."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sfn_idempotency.cli.options import CliError
from sfn_idempotency.flow import graph
from sfn_idempotency.flow.resources import IDEMPOTENCY_ASL


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "graph",
        help="print the state machine as a Mermaid diagram",
        description="Generates a Mermaid state diagram from the ASL file (the docs page on the flow embeds its output).",
    )
    command.add_argument(
        "--asl", type=Path, default=IDEMPOTENCY_ASL, help="ASL file (default: the project's)"
    )


def run(arguments: argparse.Namespace) -> int:
    try:
        print(graph.mermaid(arguments.asl), end="")
    # JSONDecodeError and UnicodeDecodeError are ValueErrors
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CliError(f"cannot draw {arguments.asl}: {error}") from None
    return 0
