"""``sfn-idempotency wrap``: one Task of the user's state machine made idempotent, inline."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sfn_idempotency.cli.options import read_text, replay_hook, whole_seconds
from sfn_idempotency.wrap import wrap_state


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "wrap",
        help="make one Task of your own state machine idempotent, inline",
        description="Rewrites the Task STATE of the ASL definition into the idempotency flow (compute "
        "the key, claim, your Task unchanged, complete, replay, release on failure) inside a one-branch "
        "Parallel, and prints the new definition. It needs the placeholders ${IdempotencyKeyFunctionArn} "
        "and ${IdempotencyTableName}: one key Lambda and one table serve every wrapped step.",
    )
    command.add_argument("definition", metavar="DEFINITION", help="ASL file, or - for standard input")
    command.add_argument("--state", required=True, metavar="NAME", help="the Task state to wrap")
    command.add_argument("--key-prefix", required=True, help="the records' key prefix for this step")
    command.add_argument("--event-key-jmespath", default="", metavar="EXPRESSION")
    command.add_argument("--payload-validation-jmespath", default="", metavar="EXPRESSION")
    command.add_argument("--expires-after", type=whole_seconds, default=3600, metavar="SECONDS")
    command.add_argument("--hash-function", default="md5", metavar="NAME")
    command.add_argument("--raise-on-no-key", action="store_true")
    command.add_argument(
        "--disabled",
        action="store_true",
        help="the step runs without records (Powertools' POWERTOOLS_IDEMPOTENCY_DISABLED, written in)",
    )
    command.add_argument(
        "--express",
        action="store_true",
        help="the machine is an Express workflow (a synchronous execution has no RedriveCount to read)",
    )
    command.add_argument(
        "--timeout", type=whole_seconds, metavar="SECONDS", help="default: the Task's TimeoutSeconds, else 60"
    )
    command.add_argument(
        "--result-variable",
        metavar="NAME",
        help="the step's one workflow variable (default: idempotent_<STATE>)",
    )
    command.add_argument(
        "--replay-marker",
        metavar="PATH",
        help="where a replay says so in the state's output (for example $.chargeReplay): true on a "
        "replay, false on a first run",
    )
    command.add_argument(
        "--replay-hook",
        type=replay_hook,
        metavar="TEMPLATE",
        help="what a replay answers instead of the stored result: a JSON payload template (JSONPath "
        "step, reading $.output and $.record) or a '{%% ... %%}' JSONata expression (JSONata step)",
    )
    command.add_argument(
        "--wait-for-in-progress",
        action="store_true",
        help="a duplicate of a run in progress waits for its result instead of failing as "
        "IdempotencyAlreadyInProgressError",
    )
    command.add_argument(
        "--max-wait-seconds",
        type=whole_seconds,
        metavar="SECONDS",
        help="with --wait-for-in-progress: how long a duplicate waits at most",
    )


def run(arguments: argparse.Namespace) -> int:
    source = arguments.definition
    definition = sys.stdin.read() if source == "-" else read_text(source, "a definition")
    print(
        wrap_state(
            definition,
            arguments.state,
            key_prefix=arguments.key_prefix,
            event_key_jmespath=arguments.event_key_jmespath,
            payload_validation_jmespath=arguments.payload_validation_jmespath,
            expires_after_seconds=arguments.expires_after,
            hash_function=arguments.hash_function,
            raise_on_no_key=arguments.raise_on_no_key,
            disabled=arguments.disabled,
            timeout_seconds=arguments.timeout,
            result_variable=arguments.result_variable,
            express=arguments.express,
            replay_marker=arguments.replay_marker,
            replay_hook=arguments.replay_hook,
            wait_for_in_progress=arguments.wait_for_in_progress,
            max_wait_seconds=arguments.max_wait_seconds,
        )
    )
    return 0
