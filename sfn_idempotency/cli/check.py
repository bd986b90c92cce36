"""``sfn-idempotency check``: the exactly-once explorer on a definition, an app or the example."""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from pathlib import Path
from typing import Any

from sfn_idempotency.cli.options import (
    EXIT_FAILED_EXECUTION,
    CliError,
    name_value,
    one_line_warning,
    positive_int,
    seconds,
)
from sfn_idempotency.extras import require_extra


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "check",
        help="prove a workflow exactly-once: explore duplicates, faults, stops and redrives",
        description="Runs a state machine on the embedded engine under many schedules (duplicates "
        "before, during and after a run; Lambda and DynamoDB faults at any Task attempt; stops, "
        "time-outs and redrives at any state; the clock past a lease; a late release workflow) and "
        "checks that each watched side effect happens at most once per request. Without DEFINITION: "
        "the example app. Exits 0 if every schedule passed, 1 with the shortest counterexample found.",
    )
    command.add_argument("definition", nargs="?", type=Path, help="an ASL file (default: the example app)")
    command.add_argument(
        "--function",
        action="append",
        default=[],
        type=name_value,
        metavar="NAME=MODULE.HANDLER",
        help="a Lambda function of the definition (Python, under --code-dir); its ARN fills ${NAME}, "
        "${NAMEArn} and ${NAMEFunctionArn}; repeatable",
    )
    command.add_argument("--code-dir", type=Path, default=Path(), help="where the handlers' modules are")
    command.add_argument(
        "--sub",
        action="append",
        default=[],
        type=name_value,
        metavar="NAME=VALUE",
        help="a ${NAME} placeholder",
    )
    command.add_argument(
        "--table",
        action="append",
        default=[],
        type=name_value,
        metavar="NAME=KEY",
        help="a table the workflow writes to (a lock table, say), made for the check with the partition "
        "key KEY; its name fills ${NAME}; repeatable",
    )
    command.add_argument(
        "--watch",
        action="append",
        default=[],
        metavar="NAME",
        help="a side effect: a --function, or a Task state whose AWS call is the effect (default: every --function)",
    )
    command.add_argument("--request", metavar="JSON", help="the input of one request")
    command.add_argument(
        "--key", metavar="JMESPATH", help="what makes two requests the same (default: equal input)"
    )
    command.add_argument(
        "--safe-error",
        action="append",
        default=[],
        metavar="ERROR",
        help="an error a client may retry (an execution failing with it is no violation), beyond the "
        "flow's own and those the explorer injects; repeatable",
    )
    command.add_argument(
        "--records-table",
        action="append",
        metavar="NAME",
        help="a table of idempotency records (default: every table in Powertools' schema, keyed by id "
        "with a TTL on expiration); repeatable",
    )
    command.add_argument(
        "--answer",
        metavar="PATH",
        help="what of an output duplicates must agree on: a JSONPath ($.charge) or a JMESPath "
        "(charge); default: the whole output (a replay marker in it then differs)",
    )
    command.add_argument(
        "--invariant",
        action="append",
        default=[],
        metavar="MODULE.FUNCTION",
        help="an invariant of your own, under --code-dir: called with each schedule's outcome, it raises "
        "AssertionError (its message is the violation); repeatable",
    )
    helpers = command.add_mutually_exclusive_group()
    helpers.add_argument(
        "--helper",
        action="append",
        metavar="LOGICAL_ID",
        help="of an app: a state machine that reacts to the checked one's executions, which the explorer "
        "may delay (default: every other state machine, such as a release workflow); repeatable",
    )
    helpers.add_argument(
        "--no-helpers", action="store_const", const=[], dest="helper", help="no state machine is a helper"
    )
    command.add_argument(
        "--via-eventbridge",
        nargs=2,
        metavar=("SOURCE", "DETAIL_TYPE"),
        help="requests reach the machine as events on the default bus (each request is an event's detail; "
        "a duplicate is a redelivery); with a definition, a rule that starts it is made",
    )
    command.add_argument(
        "--large-results",
        action="store_true",
        help="the watched functions may answer results near Step Functions' 256 KiB quota (250 KB and "
        "300 KB), for a flow that must keep its promise at the limit",
    )
    command.add_argument("--express", action="store_true", help="deploy the definition as Express")
    app = command.add_argument_group(
        "your app, instead of DEFINITION: its state machine explored as deployed, its functions in "
        "any runtime the engine runs (--watch then names a function's logical id or construct path)"
    )
    app.add_argument(
        "--template", type=Path, metavar="FILE|DIR", help="an AWS SAM or CloudFormation template"
    )
    app.add_argument("--cdk-out", type=Path, metavar="DIR", help="the cloud assembly cdk synth left in DIR")
    app.add_argument(
        "--stack", action="append", default=[], metavar="NAME", help="of --cdk-out: only this stack"
    )
    app.add_argument("--stack-name", help="the stack of --template (default: its folder's name)")
    app.add_argument(
        "--parameter-overrides", nargs="+", default=[], metavar="KEY=VALUE", help="the template's parameters"
    )
    app.add_argument(
        "--state-machine",
        metavar="NAME",
        help="which state machine, by construct path, logical id, name or ARN (default: the app's only one)",
    )
    group = command.add_argument_group("exploration")
    group.add_argument("--schedules", type=positive_int, default=None, help="how many (default: 200)")
    group.add_argument("--budget", type=seconds, metavar="SECONDS", help="as many schedules as fit instead")
    group.add_argument("--seed", type=int, default=0, help="where the random schedules start (default: 0)")
    group.add_argument("--max-steps", type=positive_int, default=None, help="steps per schedule (default: 6)")
    group.add_argument("--replay", metavar="TOKEN", help="run exactly the schedule a counterexample printed")
    group.add_argument("--json", action="store_true", help="answer as JSON")
    group.add_argument(
        "--svg", type=Path, metavar="FILE", help="write the counterexample's timeline as an image"
    )


def run(arguments: argparse.Namespace) -> int:
    require_extra("local", "sfn-idempotency check")
    from sfn_idempotency.local.explorer import DEFAULT_MAX_STEPS, DEFAULT_SCHEDULES
    from sfn_idempotency.local.explorer.command import CheckError, CheckRequest, parse_request
    from sfn_idempotency.local.explorer.command import check as run_check
    from sfn_idempotency.local.explorer.report import dumps

    warnings.showwarning = one_line_warning
    # stdout is the report alone (text or JSON): what the handlers print goes to stderr (their log).
    try:
        with contextlib.redirect_stdout(sys.stderr):
            report = run_check(
                CheckRequest(
                    app=_app_to_check(arguments),
                    definition=arguments.definition,
                    functions=dict(arguments.function),
                    code_dir=arguments.code_dir,
                    substitutions=dict(arguments.sub),
                    tables=dict(arguments.table),
                    watch=arguments.watch,
                    request=None if arguments.request is None else parse_request(arguments.request),
                    key=arguments.key,
                    answer=arguments.answer,
                    safe_errors=arguments.safe_error,
                    record_tables=arguments.records_table,
                    invariants=arguments.invariant,
                    helpers=arguments.helper,
                    via_eventbridge=None
                    if arguments.via_eventbridge is None
                    else tuple(arguments.via_eventbridge),
                    express=arguments.express,
                    large_results=arguments.large_results,
                    schedules=arguments.schedules or DEFAULT_SCHEDULES,
                    seed=arguments.seed,
                    budget_seconds=arguments.budget,
                    max_steps=arguments.max_steps or DEFAULT_MAX_STEPS,
                    replay=arguments.replay,
                )
            )
    except CheckError as error:
        raise CliError(str(error)) from None
    print(dumps(report) if arguments.json else report.text())
    if arguments.svg is not None and report.counterexample is not None:
        try:
            arguments.svg.write_text(report.counterexample.svg(), encoding="utf-8")
        except OSError as error:
            raise CliError(f"cannot write {arguments.svg}: {error}") from None
    return 0 if report.passed else EXIT_FAILED_EXECUTION


def _app_to_check(arguments: argparse.Namespace) -> Any:
    """``check``'s app (--template or --cdk-out), or None for a definition or the example."""
    from sfn_idempotency.local.apps import sam_templates
    from sfn_idempotency.local.explorer.command import AppSource

    given = [
        flag
        for flag, value in (("--template", arguments.template), ("--cdk-out", arguments.cdk_out))
        if value
    ]
    if not given:
        return None
    if len(given) > 1 or arguments.definition is not None:
        raise CliError("check one of: a DEFINITION, --template or --cdk-out")
    try:
        parameters = sam_templates.parameter_overrides(arguments.parameter_overrides)
    except sam_templates.TemplateError as error:
        raise CliError(str(error)) from None
    return AppSource(
        template=arguments.template,
        cdk_out=arguments.cdk_out,
        stacks=arguments.stack,
        stack_name=arguments.stack_name,
        parameters=parameters,
        state_machine=arguments.state_machine,
    )
