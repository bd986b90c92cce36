"""The ``sfn-idempotency`` command: run the demo, serve the local engine, start executions,
inspect and forget records, draw the state machine."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import ipaddress
import json
import os
import re
import shlex
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError, ClientError

from sfn_idempotency import __version__, graph, inline_workflows
from sfn_idempotency.executions import wait_for_execution
from sfn_idempotency.extras import MissingExtraError, require_extra
from sfn_idempotency.lambdas.compute_key.computation import key_of
from sfn_idempotency.lambdas.compute_key.errors import ConfigurationError, IdempotencyKeyError
from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings
from sfn_idempotency.records import describe, plain
from sfn_idempotency.remote import (
    LOCAL_REGION,
    NotExactlyOneError,
    client,
    default_state_machine,
    only_table,
    shell_environment,
)
from sfn_idempotency.resources import IDEMPOTENCY_ASL, ORDER_WORKFLOW_ASL
from sfn_idempotency.settings import ORDER_ERROR_STATUSES, ORDER_EVENT_KEY_JMESPATH, example_settings
from sfn_idempotency.wrap import WrapError, wrap_state

if TYPE_CHECKING:
    from sfn_idempotency.console import ConsoleSettings
    from sfn_idempotency.local import LocalCloud
    from sfn_idempotency.local.http.request_guard import AccessPolicy
    from sfn_idempotency.local.http.server import LocalRestApi
    from sfn_idempotency.local.mock_files import MockConfigSource

EXIT_FAILED_EXECUTION = 1
EXIT_BAD_INPUT = 2
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8083
MIN_PORT, MAX_PORT = 1, 65535
# A DNS label (and the underscores of container names), dot-separated.
HOST_NAME = re.compile(
    r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*"
)
DEFAULT_WAIT_SECONDS = 300.0
# flag -> the key Lambda's environment variable it overrides
SETTING_FLAGS = {
    "key_prefix": "IDEMPOTENCY_KEY_PREFIX",
    "event_key_jmespath": "IDEMPOTENCY_EVENT_KEY_JMESPATH",
    "payload_validation_jmespath": "IDEMPOTENCY_PAYLOAD_VALIDATION_JMESPATH",
    "expires_after": "IDEMPOTENCY_EXPIRES_AFTER_SECONDS",
    "timeout_seconds": "IDEMPOTENCY_TIMEOUT_SECONDS",
    "hash_function": "IDEMPOTENCY_HASH_FUNCTION",
}


class CliError(Exception):
    """Bad input: one line on stderr, exit code 2, no traceback."""


# -- argument parsing ----------------------------------------------------------------------------
class OneLineParser(argparse.ArgumentParser):
    """Bad arguments are one line on stderr and exit code 2, like every other bad input here."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {one_line(message)} (see --help)\n")


def port(text: str) -> int:
    number = int(text)  # argparse turns the ValueError into "invalid port value"
    if not MIN_PORT <= number <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"a port is {MIN_PORT}..{MAX_PORT}, got {number}")
    return number


def retained_executions(text: str) -> int:
    number = int(text)  # argparse turns the ValueError into "invalid retained_executions value"
    if number < 0:
        raise argparse.ArgumentTypeError(f"the executions to keep are 0 or more, got {number}")
    return number


def seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"seconds must be a positive number, got {text}")
    return value


def whole_seconds(text: str) -> int:
    value = int(text)  # argparse turns the ValueError into "invalid whole_seconds value"
    if value < 1:
        raise argparse.ArgumentTypeError(f"seconds must be a positive whole number, got {text}")
    return value


def positive_int(text: str) -> int:
    value = int(text)  # argparse turns the ValueError into "invalid positive_int value"
    if value < 1:
        raise argparse.ArgumentTypeError(f"a count is a positive whole number, got {text}")
    return value


def name_value(text: str) -> tuple[str, str]:
    name, separator, value = text.partition("=")
    if not (name and separator and value):
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def replay_hook(text: str) -> Any:
    """A JSON payload template (an object), or the text as given (a '{% ... %}' expression)."""
    stripped = text.strip()
    if not stripped.startswith("{%"):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as error:
            raise argparse.ArgumentTypeError(
                f"a replay hook is a JSON object or '{{% ... %}}': {error}"
            ) from None
    return text


def endpoint_url(text: str) -> str:
    parsed = urlsplit(text)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise argparse.ArgumentTypeError(f"an endpoint is http(s)://host[:port], got {text!r}")
    try:
        _ = parsed.port
    except ValueError:
        raise argparse.ArgumentTypeError(f"an endpoint is http(s)://host[:port], got {text!r}") from None
    return text


def host(text: str) -> str:
    """A host name (letters, digits, ``-`` and ``_``, dot-separated) or an IP address, as an
    endpoint URL carries it (IPv6 in brackets)."""
    bracketed = text.startswith("[") and text.endswith("]")
    try:
        address = ipaddress.ip_address(text[1:-1] if bracketed else text)
        if (address.version == 6) != bracketed:
            raise ValueError(text)
    except ValueError:
        if not HOST_NAME.fullmatch(text):
            raise argparse.ArgumentTypeError(f"a host is a name or an IP address, got {text!r}") from None
    return text


def is_loopback(host_name: str) -> bool:
    """Whether only this machine can reach ``host_name`` (a name other than localhost may not be)."""
    if host_name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host_name.strip("[]")).is_loopback
    except ValueError:
        return False


def idempotency_key(text: str) -> str:
    prefix, separator, digest = text.partition("#")
    if not (prefix.strip() and separator and digest.strip()) or text != text.strip():
        raise argparse.ArgumentTypeError(f"a key is <prefix>#<hash>, got {text!r}")
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="sfn-idempotency",
        description="Exactly-once business steps on AWS Step Functions, and a local engine that runs "
        "the same state machine on moto's interpreter with the real Lambda handlers.",
        epilog="Exit codes: 0 success, 1 the execution failed or no record exists, 2 bad input.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands.add_parser(
        "demo",
        help="walk the example order workflow through its paths on the embedded engine",
        description="Runs the example order workflow on the embedded engine (moto's Step Functions "
        "interpreter, moto DynamoDB, the real handlers) and prints, per scenario, the status, output "
        "or error, how many times the business step ran and the states visited. Exits 1 if any "
        "scenario did not behave as promised.",
    )

    serve = commands.add_parser(
        "serve",
        help="serve Step Functions, DynamoDB and EventBridge on a local HTTP endpoint",
        description="Starts moto's server with the project's table and state machine created and the "
        "Lambdas dispatched in-process to the real handlers. The AWS CLI and any SDK work against it "
        "with --endpoint-url and region us-east-1 (any credentials). When ready it prints one JSON line: "
        "endpoint, region, state machine ARNs and table name. Stops cleanly on SIGINT or SIGTERM.",
    )
    serve.add_argument(
        "--host", type=host, default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})"
    )
    serve.add_argument("--port", type=port, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    serve.add_argument(
        "--console-actions",
        action="store_true",
        help="let the console at the endpoint's root start executions and forget records "
        "(it is read-only without this flag; serve has no authentication)",
    )
    serve.add_argument(
        "--no-console",
        action="store_true",
        help="serve the APIs only, with no console at the endpoint's root",
    )
    serve.add_argument(
        "--api-port",
        type=port,
        default=0,
        help="the port of the HTTP front door, or of your app's first REST API stage (each next "
        "stage takes the port after); default: any free port",
    )
    serve.add_argument(
        "--retain-executions",
        type=retained_executions,
        default=None,
        metavar="N",
        help="keep at most N ended executions, forgetting the oldest first (default: keep every "
        "one, as AWS keeps them for 90 days); for a serve left running for days",
    )
    serve.add_argument(
        "--mock-config",
        metavar="PATH",
        default=os.environ.get("SFN_MOCK_CONFIG"),
        help="Step Functions Local's mock file, for executions started as <stateMachineArn>#<TestCase>; "
        "read again whenever it changes (default: $SFN_MOCK_CONFIG)",
    )
    app = serve.add_argument_group(
        "your app: a CDK app or SAM templates (instead of the example's workflows)"
    )
    app.add_argument(
        "--cdk-out",
        metavar="DIR",
        type=Path,
        help="deploy the cloud assembly cdk synth left in DIR (manifest.json, templates, assets)",
    )
    app.add_argument(
        "--template",
        action="append",
        default=[],
        type=Path,
        metavar="FILE|DIR",
        help="deploy an AWS SAM or CloudFormation template as sam deploy would (local CodeUri and "
        "DefinitionUri packaged, the SAM transform applied by aws-sam-translator); a folder means its "
        "template.yaml; repeatable",
    )
    app.add_argument(
        "--parameter-overrides",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="the templates' parameters, as the SAM CLI takes them (Key=Value, or "
        "ParameterKey=Key,ParameterValue=Value)",
    )
    app.add_argument("--stack-name", help="the stack of the one --template (default: its folder's name)")
    app.add_argument(
        "--state-machine-name",
        action="append",
        default=[],
        metavar="LOGICAL_ID=NAME",
        help="name a template's state machine, as its Name property would: what a mock file's "
        "StateMachines entry names (repeatable)",
    )
    app.add_argument(
        "--stack",
        action="append",
        default=[],
        metavar="NAME",
        help="only this stack and those it depends on (repeatable; globs as cdk deploy takes them)",
    )
    app.add_argument(
        "--stand-in",
        action="append",
        default=[],
        metavar="LOGICAL_ID|TYPE",
        help="do not deploy this resource (one the engine cannot run), and resolve references to it to "
        "the name and ARN it would have: a Task calling it fails as a call to a missing resource "
        "(repeatable; globs allowed, e.g. 'AWS::KinesisFirehose::*')",
    )
    app.add_argument(
        "--watch",
        action="store_true",
        help="deploy again whenever cdk synth rewrites the assembly, or a template or its code changes (stacks are updated in place: "
        "tables keep their items); kill -HUP does it on request",
    )
    _add_access_flags(serve)
    _add_setting_flags(serve)

    environment = commands.add_parser(
        "env",
        help="print the exports that point the AWS CLI and SDKs at serve, for eval",
        description='Prints export lines for a POSIX shell: eval "$(sfn-idempotency env)". They set '
        "the endpoint, the region, placeholder credentials and AWS_DISABLE_HOST_PREFIX_INJECTION (without "
        "it, start-sync-execution and test-state go to a sync- host that does not exist).",
    )
    environment.add_argument(
        "--endpoint-url",
        type=endpoint_url,
        default=f"http://{DEFAULT_HOST}:{DEFAULT_PORT}",
        help=f"serve's endpoint (default http://{DEFAULT_HOST}:{DEFAULT_PORT})",
    )
    environment.add_argument("--region", default=LOCAL_REGION, help=f"default {LOCAL_REGION}")

    start = commands.add_parser(
        "start",
        help="start an execution, wait for it, print its output",
        description="Starts an execution and waits for it. On success prints the output JSON on stdout "
        "and exits 0; on failure prints the error and cause on stderr and exits 1. Without "
        "--endpoint-url it talks to AWS through the standard credential and region chain.",
    )
    start.add_argument(
        "--input", required=True, metavar="JSON|@FILE", help="execution input, inline or @path"
    )
    start.add_argument("--name", help="execution name (AWS: starting the same name twice is idempotent)")
    start.add_argument(
        "--state-machine",
        metavar="ARN",
        help="default: the one named 'idempotency' (as serve creates), else the only one",
    )
    start.add_argument("--no-wait", action="store_true", help="print the execution ARN and return at once")
    start.add_argument(
        "--timeout", type=seconds, default=DEFAULT_WAIT_SECONDS, help="seconds to wait (default 300)"
    )
    _add_endpoint_flags(start)

    for name, summary, detail in (
        (
            "record",
            "show the record of an event or key",
            "Prints status, owner, expiry and lease in human time, and the stored result. Exits 1 when there is no record.",
        ),
        (
            "forget",
            "delete the record of an event or key (needs --yes)",
            "Deletes the record so the next execution runs the business step again: the operator's escape hatch after a bad deploy.",
        ),
    ):
        command = commands.add_parser(
            name,
            help=summary,
            description=f"{detail} With --input the key is computed exactly as the key Lambda computes it, "
            "from the same settings (flags, then IDEMPOTENCY_* variables, then the example configuration).",
        )
        target = command.add_mutually_exclusive_group(required=True)
        target.add_argument("--input", metavar="JSON|@FILE", help="the event whose record to use")
        target.add_argument(
            "--key", type=idempotency_key, help="the idempotency key itself (<prefix>#<hash>)"
        )
        command.add_argument("--table", help="default: the only table there is")
        _add_endpoint_flags(command)
        _add_setting_flags(command)
        if name == "forget":
            command.add_argument("--yes", action="store_true", help="really delete")

    wrap_command = commands.add_parser(
        "wrap",
        help="make one Task of your own state machine idempotent, inline",
        description="Rewrites the Task STATE of the ASL definition into the idempotency flow (compute "
        "the key, claim, your Task unchanged, complete, replay, release on failure) inside a one-branch "
        "Parallel, and prints the new definition. It needs the placeholders ${IdempotencyKeyFunctionArn} "
        "and ${IdempotencyTableName}: one key Lambda and one table serve every wrapped step.",
    )
    wrap_command.add_argument("definition", metavar="DEFINITION", help="ASL file, or - for standard input")
    wrap_command.add_argument("--state", required=True, metavar="NAME", help="the Task state to wrap")
    wrap_command.add_argument("--key-prefix", required=True, help="the records' key prefix for this step")
    wrap_command.add_argument("--event-key-jmespath", default="", metavar="EXPRESSION")
    wrap_command.add_argument("--payload-validation-jmespath", default="", metavar="EXPRESSION")
    wrap_command.add_argument("--expires-after", type=whole_seconds, default=3600, metavar="SECONDS")
    wrap_command.add_argument("--hash-function", default="md5", metavar="NAME")
    wrap_command.add_argument("--raise-on-no-key", action="store_true")
    wrap_command.add_argument(
        "--express",
        action="store_true",
        help="the machine is an Express workflow (a synchronous execution has no RedriveCount to read)",
    )
    wrap_command.add_argument(
        "--timeout", type=whole_seconds, metavar="SECONDS", help="default: the Task's TimeoutSeconds, else 60"
    )
    wrap_command.add_argument(
        "--result-variable",
        metavar="NAME",
        help="the step's one workflow variable (default: idempotent_<STATE>)",
    )
    wrap_command.add_argument(
        "--replay-marker",
        metavar="PATH",
        help="where a replay says so in the state's output (for example $.chargeReplay): true on a "
        "replay, false on a first run",
    )
    wrap_command.add_argument(
        "--replay-hook",
        type=replay_hook,
        metavar="TEMPLATE",
        help="what a replay answers instead of the stored result: a JSON payload template (JSONPath "
        "step, reading $.output and $.record) or a '{%% ... %%}' JSONata expression (JSONata step)",
    )
    wrap_command.add_argument(
        "--wait-for-in-progress",
        action="store_true",
        help="a duplicate of a run in progress waits for its result instead of failing as "
        "IdempotencyAlreadyInProgressError",
    )
    wrap_command.add_argument(
        "--max-wait-seconds",
        type=whole_seconds,
        metavar="SECONDS",
        help="with --wait-for-in-progress: how long a duplicate waits at most",
    )

    _add_check_parser(commands)

    graph_command = commands.add_parser(
        "graph",
        help="print the state machine as a Mermaid diagram",
        description="Generates a Mermaid state diagram from the ASL file (the docs page on the flow embeds its output).",
    )
    graph_command.add_argument(
        "--asl", type=Path, default=IDEMPOTENCY_ASL, help="ASL file (default: the project's)"
    )
    return parser


def _add_check_parser(commands: Any) -> None:
    check_command = commands.add_parser(
        "check",
        help="prove a workflow exactly-once: explore duplicates, faults, stops and redrives",
        description="Runs a state machine on the embedded engine under many schedules (duplicates "
        "before, during and after a run; Lambda and DynamoDB faults at any Task attempt; stops, "
        "time-outs and redrives at any state; the clock past a lease; a late release workflow) and "
        "checks that each watched side effect happens at most once per request. Without DEFINITION: "
        "the example app. Exits 0 if every schedule passed, 1 with the shortest counterexample found.",
    )
    check_command.add_argument(
        "definition", nargs="?", type=Path, help="an ASL file (default: the example app)"
    )
    check_command.add_argument(
        "--function",
        action="append",
        default=[],
        type=name_value,
        metavar="NAME=MODULE.HANDLER",
        help="a Lambda function of the definition (Python, under --code-dir); its ARN fills ${NAME}, "
        "${NAMEArn} and ${NAMEFunctionArn}; repeatable",
    )
    check_command.add_argument(
        "--code-dir", type=Path, default=Path(), help="where the handlers' modules are"
    )
    check_command.add_argument(
        "--sub",
        action="append",
        default=[],
        type=name_value,
        metavar="NAME=VALUE",
        help="a ${NAME} placeholder",
    )
    check_command.add_argument(
        "--table",
        action="append",
        default=[],
        type=name_value,
        metavar="NAME=KEY",
        help="a table the workflow writes to (a lock table, say), made for the check with the partition "
        "key KEY; its name fills ${NAME}; repeatable",
    )
    check_command.add_argument(
        "--watch",
        action="append",
        default=[],
        metavar="NAME",
        help="a side effect: a --function, or a Task state whose AWS call is the effect (default: every --function)",
    )
    check_command.add_argument("--request", metavar="JSON", help="the input of one request")
    check_command.add_argument(
        "--key", metavar="JMESPATH", help="what makes two requests the same (default: equal input)"
    )
    check_command.add_argument(
        "--safe-error",
        action="append",
        default=[],
        metavar="ERROR",
        help="an error a client may retry (an execution failing with it is no violation), beyond the "
        "flow's own and those the explorer injects; repeatable",
    )
    check_command.add_argument(
        "--records-table",
        action="append",
        metavar="NAME",
        help="a table of idempotency records (default: every table in Powertools' schema, keyed by id "
        "with a TTL on expiration); repeatable",
    )
    check_command.add_argument(
        "--answer",
        metavar="PATH",
        help="what of an output duplicates must agree on: a JSONPath ($.charge) or a JMESPath "
        "(charge); default: the whole output (a replay marker in it then differs)",
    )
    check_command.add_argument(
        "--invariant",
        action="append",
        default=[],
        metavar="MODULE.FUNCTION",
        help="an invariant of your own, under --code-dir: called with each schedule's outcome, it raises "
        "AssertionError (its message is the violation); repeatable",
    )
    helpers = check_command.add_mutually_exclusive_group()
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
    check_command.add_argument(
        "--via-eventbridge",
        nargs=2,
        metavar=("SOURCE", "DETAIL_TYPE"),
        help="requests reach the machine as events on the default bus (each request is an event's detail; "
        "a duplicate is a redelivery); with a definition, a rule that starts it is made",
    )
    check_command.add_argument("--express", action="store_true", help="deploy the definition as Express")
    app = check_command.add_argument_group(
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
        "--state-machine", metavar="LOGICAL_ID", help="which state machine (default: the app's only one)"
    )
    group = check_command.add_argument_group("exploration")
    group.add_argument("--schedules", type=positive_int, default=None, help="how many (default: 200)")
    group.add_argument("--budget", type=seconds, metavar="SECONDS", help="as many schedules as fit instead")
    group.add_argument("--seed", type=int, default=0, help="where the random schedules start (default: 0)")
    group.add_argument("--max-steps", type=positive_int, default=None, help="steps per schedule (default: 6)")
    group.add_argument("--replay", metavar="TOKEN", help="run exactly the schedule a counterexample printed")
    group.add_argument("--json", action="store_true", help="answer as JSON")
    group.add_argument(
        "--svg", type=Path, metavar="FILE", help="write the counterexample's timeline as an image"
    )


def _add_endpoint_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--endpoint-url", type=endpoint_url, metavar="URL", help="e.g. the URL `sfn-idempotency serve` prints"
    )
    parser.add_argument(
        "--region", help="AWS region (default: the standard chain; us-east-1 with --endpoint-url)"
    )


def _add_setting_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("configuration (overrides IDEMPOTENCY_* variables)")
    group.add_argument("--key-prefix")
    group.add_argument("--event-key-jmespath", metavar="EXPRESSION")
    group.add_argument("--payload-validation-jmespath", metavar="EXPRESSION")
    group.add_argument("--expires-after", metavar="SECONDS")
    group.add_argument("--timeout-seconds", metavar="SECONDS", help="business step timeout and lease")
    group.add_argument("--hash-function", metavar="NAME")


def _add_access_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "who may call it (serve has no authentication: by default only its own console, and clients "
        "that send no Origin, such as the AWS CLI and SDKs, on a loopback host name)"
    )
    group.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="also answer web pages from ORIGIN (scheme://host[:port]); repeatable; "
        "SFN_IDEMPOTENCY_ALLOW_ORIGINS adds more (separated by commas or spaces)",
    )
    group.add_argument(
        "--allow-any-origin",
        action="store_true",
        help="answer every web page you open (unsafe: it warns at start)",
    )
    group.add_argument(
        "--allow-host",
        action="append",
        default=[],
        type=host,
        metavar="NAME",
        help="also answer requests for host NAME (a container's name, say); repeatable; "
        "SFN_IDEMPOTENCY_ALLOW_HOSTS adds more",
    )


# -- helpers -------------------------------------------------------------------------------------
def _access_policy(arguments: argparse.Namespace) -> AccessPolicy:
    """The origins and hosts serve answers: its own, the flags', then the environment's."""
    from sfn_idempotency.local.http import request_guard as guard

    origins = [*arguments.allow_origin, *guard.split_list(os.environ.get(guard.ALLOW_ORIGINS_VARIABLE))]
    hosts = [*arguments.allow_host, *guard.split_list(os.environ.get(guard.ALLOW_HOSTS_VARIABLE))]
    if "*" in origins:
        raise CliError(f"to allow every origin, say {guard.ALLOW_ANY_ORIGIN_FLAG} (not '*')")
    try:
        return guard.AccessPolicy.build(
            arguments.host,
            [arguments.port],
            origins=origins,
            hosts=hosts,
            any_origin=arguments.allow_any_origin,
        )
    except guard.BadOriginError as error:
        raise CliError(f"{guard.ALLOW_ORIGIN_FLAG}: {error}") from None


def _mock_config(path: str | None, stop: threading.Event) -> MockConfigSource | None:
    """serve's mock file: its state now, and each change after, one line on stderr. A bad or
    missing file does not stop serve: mocked starts are refused with its fault until it is mended."""
    from sfn_idempotency.local.mock_files import MockConfigError, MockConfigSource, keep_reading

    if not path:
        return None

    def report(line: str) -> None:
        print(f"sfn-idempotency: {line}", file=sys.stderr, flush=True)

    source = MockConfigSource(path, on_change=report)
    with contextlib.suppress(MockConfigError):  # a fault is reported as it is read
        report(f"mock configuration {path}: {len(source.current().test_cases)} test case(s)")
    threading.Thread(target=keep_reading, args=(source, stop), name="mock-config", daemon=True).start()
    return source


def _settings(arguments: argparse.Namespace) -> IdempotencySettings:
    overrides = {
        env: str(value)
        for flag, env in SETTING_FLAGS.items()
        if (value := getattr(arguments, flag)) is not None
    }
    return example_settings(**overrides)


def _read_text(path: str, holds: str) -> str:
    """A file's UTF-8 text; a name no file can have (a NUL in it) is as unreadable as a missing one."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise CliError(f"{path} is not UTF-8 text ({holds} is JSON)") from None
    except ValueError as error:  # "embedded null byte": found by hypothesis (wrap '\x00')
        raise CliError(f"cannot read {path!r}: {error}") from None


def _read_json(value: str) -> Any:
    if value.startswith("@"):
        value = _read_text(value[1:], "the input")
    try:
        return json.loads(value)
    except json.JSONDecodeError as error:
        raise CliError(f"input is not valid JSON: {error}") from None


def _client(service: str, arguments: argparse.Namespace) -> Any:
    return client(service, arguments.endpoint_url, arguments.region)


# -- commands ------------------------------------------------------------------------------------
def demo(arguments: argparse.Namespace) -> int:
    from sfn_idempotency import demo

    return demo.main()


def serve(arguments: argparse.Namespace) -> int:
    from sfn_idempotency.local import LocalCloud
    from sfn_idempotency.local.backends import PortInUseError, ServerBackend
    from sfn_idempotency.local.cloud import DEFAULT_REGION

    settings = _settings(arguments)
    stop = threading.Event()
    warnings.showwarning = _one_line_warning
    for signal_number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signal_number, lambda *_: stop.set())
    if not is_loopback(arguments.host):
        print(
            f"sfn-idempotency: warning: serving on {arguments.host}, which is not loopback, with no "
            "authentication: anyone who can reach it can call the APIs"
            + (" and use the console's actions" if arguments.console_actions else ""),
            file=sys.stderr,
            flush=True,
        )
    access = _access_policy(arguments)
    if access.any_origin:
        print(
            "sfn-idempotency: warning: --allow-any-origin: every web page you open can call this "
            "endpoint (run your handlers, read and write the tables)",
            file=sys.stderr,
            flush=True,
        )
    _check_apps(arguments)  # before anything starts
    console = None if arguments.no_console else _console(arguments.console_actions, DEFAULT_REGION)
    mocks = _mock_config(arguments.mock_config, stop)
    cloud = LocalCloud(
        backend=ServerBackend(arguments.host, arguments.port, console, access),
        mock_config=mocks,
        api_port=arguments.api_port,
        retain_executions=arguments.retain_executions,
    )
    try:
        cloud.start()
    except PortInUseError as error:
        raise CliError(str(error)) from None
    try:
        endpoint = str(cloud.endpoint_url)
        ready = {
            "endpoint": endpoint,
            **({"console": f"{endpoint}/"} if console is not None else {}),
            "region": cloud.region,
            "environment": shell_environment(endpoint, cloud.region),
            **({"mockConfig": str(mocks.path)} if mocks is not None else {}),
        }
        if arguments.cdk_out is not None or arguments.template:
            cloud.on_task_failure(
                lambda failure: print(
                    f"sfn-idempotency: task failed: {failure.line()}", file=sys.stderr, flush=True
                )
            )
            _announce(ready | _serve_apps(cloud, arguments, stop))
            stop.wait()
        else:
            api, deployed = _serve_example(cloud, settings, arguments.api_port)
            _announce(ready | deployed)
            stop.wait()
            api.stop()
    finally:
        cloud.close()
    print("sfn-idempotency: stopped", file=sys.stderr, flush=True)
    return 0


def _one_line_warning(message: Warning | str, *_: object, **__: object) -> None:
    """A warning while serving (a function declared for another Node, say), in one line on stderr."""
    print(f"sfn-idempotency: warning: {message}", file=sys.stderr, flush=True)


def _console(actions: bool, region: str) -> ConsoleSettings | None:
    """The console's settings, or None (and one line saying why and how to build it) when its
    files are missing, as in an editable install where `make console-assets` has not run."""
    from sfn_idempotency.console import ConsoleAssetMissingError, ConsoleSettings, check_assets

    try:
        check_assets()
    except ConsoleAssetMissingError as missing:
        print(f"sfn-idempotency: serving without the console: {missing}", file=sys.stderr, flush=True)
        return None
    return ConsoleSettings(region=region, actions=actions)


def _announce(ready: dict[str, Any]) -> None:
    """The ready line, the only line on stdout: what the functions print after it (on AWS, their
    log stream) goes to stderr, so a program reading the line never sees, or waits on, their logs."""
    print(json.dumps(ready), flush=True)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())


def _serve_example(
    cloud: LocalCloud, settings: IdempotencySettings, api_port: int = 0
) -> tuple[LocalRestApi, dict[str, Any]]:
    """The example's workflows, as its stack deploys them; the front door and what the ready line says."""
    from sfn_idempotency.local import IdempotentService

    service = IdempotentService(cloud, settings)
    # Events for the same orders, keyed on detail.orderId, share the table and the key prefix.
    event_settings = settings.model_copy(update={"event_key_jmespath": ORDER_EVENT_KEY_JMESPATH})
    events = IdempotentService(cloud, event_settings, name="order-events", table_name=service.table_name)
    events.deploy_event_trigger()
    # As the stack deploys them: each Standard workflow's claim release (StopExecution and
    # execution timeouts release the claim at once), and the order pipeline nesting the workflow.
    releases = [service.deploy_claim_release(), events.deploy_claim_release()]
    pipeline = service.nest_in(ORDER_WORKFLOW_ASL, "order-pipeline")
    # The Express workflows whose PlaceOrder is wrapped inline (StartSyncExecution), as the stack has.
    express = [
        service.deploy_inline(inline_workflows.order_pipeline(settings), "order-pipeline-inline"),
        service.deploy_inline(inline_workflows.sqs_batch(settings), "sqs-batch"),
    ]
    # The HTTP front door: POST {apiEndpoint}/orders with an Idempotency-Key header.
    api = service.deploy_http_api(error_statuses=ORDER_ERROR_STATUSES, port=api_port)
    return api, {
        "stateMachineArns": [service.state_machine_arn, events.state_machine_arn, pipeline],
        "expressStateMachineArns": [*express, api.state_machine_arn],
        "claimReleaseStateMachineArns": releases,
        "apiEndpoint": api.start(),
        "tableName": service.table_name,
    }


def _check_apps(arguments: argparse.Namespace) -> None:
    """What serve is to deploy can be read, and its options make sense, before anything starts."""
    from sfn_idempotency.local.apps import sam_templates
    from sfn_idempotency.local.apps.cloud_assembly import CloudAssemblyError, read_assembly, select

    try:
        if arguments.cdk_out is not None:
            select(read_assembly(arguments.cdk_out), arguments.stack)
        for template in arguments.template:
            sam_templates.load_template(template)
        sam_templates.parameter_overrides(arguments.parameter_overrides)
        sam_templates.parse_names(arguments.state_machine_name)
    except (CloudAssemblyError, sam_templates.TemplateError) as error:
        raise CliError(str(error)) from None
    if arguments.stack_name and len(arguments.template) != 1:
        raise CliError("--stack-name names the stack of one --template")


def _serve_apps(cloud: LocalCloud, arguments: argparse.Namespace, stop: threading.Event) -> dict[str, Any]:
    """The user's cloud assembly and templates deployed, one line per skipped resource; deployed
    again on SIGHUP and, with --watch, whenever one changes. What the ready line says of them."""
    from sfn_idempotency.local.apps import sam_templates
    from sfn_idempotency.local.apps.cloud_assembly import (
        CloudAssemblyError,
        DeployedAssembly,
        DeployedStack,
        DeploymentError,
        SkippedResourceWarning,
        fingerprint,
        keep_deploying,
        redeploy,
    )

    directory: Path | None = arguments.cdk_out
    templates = [sam_templates.template_file(path) for path in arguments.template]
    parameters = sam_templates.parameter_overrides(arguments.parameter_overrides)
    names = sam_templates.parse_names(arguments.state_machine_name)
    lock = threading.Lock()

    def report(line: str) -> None:
        print(f"sfn-idempotency: {line}", file=sys.stderr, flush=True)

    def deploy() -> DeployedAssembly:
        stacks: list[DeployedStack] = []
        with lock, warnings.catch_warnings(record=True, category=SkippedResourceWarning) as skipped:
            warnings.simplefilter("always", SkippedResourceWarning)
            if directory is not None:
                stacks += cloud.deploy_cdk_out(directory, arguments.stack, stand_in=arguments.stand_in).stacks
            for template in templates:
                stacks.append(
                    cloud.deploy_template(
                        template,
                        stack_name=arguments.stack_name,
                        parameters=parameters,
                        stand_in=arguments.stand_in,
                        state_machine_names=names,
                    )
                )
        for warning in skipped:
            report(f"warning: {warning.message}")
        for stack in stacks:
            report(
                f"{'updated' if stack.updated else 'deployed'} stack {stack.name}: {len(stack.resources)} resources"
            )
        return DeployedAssembly(tuple(stacks))

    def changes() -> object:
        assembly = fingerprint(directory) if directory is not None else ()
        return assembly, [sam_templates.fingerprint(template) for template in templates]

    before = changes()  # what the first deployment reads; --watch deploys again when it changes
    try:
        deployed = deploy()
    except (CloudAssemblyError, DeploymentError, sam_templates.TemplateError) as error:
        raise CliError(str(error)) from None

    what = ", ".join(str(source) for source in [*([directory] if directory else []), *templates])
    signal.signal(
        signal.SIGHUP,
        lambda *_: threading.Thread(target=redeploy, args=(deploy, what, report), name="redeploy").start(),
    )
    if arguments.watch:
        threading.Thread(
            target=keep_deploying,
            args=(deploy, changes, before, what, stop, report),
            name="watch",
            daemon=True,
        ).start()
    return {
        **({"cdkOut": str(directory)} if directory is not None else {}),
        **({"templates": [str(template) for template in templates]} if templates else {}),
        "stacks": deployed.as_json(),
    }


def start(arguments: argparse.Namespace) -> int:
    execution_input = _read_json(arguments.input)
    sfn = _client("stepfunctions", arguments)
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


def _record_key(arguments: argparse.Namespace) -> str:
    if arguments.key:
        return str(arguments.key)
    settings = _settings(arguments)
    key: str | None = key_of(_read_json(arguments.input), settings)
    if key is None:
        raise CliError(f"the event has no idempotency key (JMESPath {settings.event_key_jmespath!r})")
    return key


def _table(arguments: argparse.Namespace, dynamodb: Any) -> str:
    return str(arguments.table or only_table(dynamodb))


def record(arguments: argparse.Namespace) -> int:
    key = _record_key(arguments)
    dynamodb = _client("dynamodb", arguments)
    item = dynamodb.get_item(
        TableName=_table(arguments, dynamodb), Key={"id": {"S": key}}, ConsistentRead=True
    )
    if "Item" not in item:
        print(f"no record for {key}", file=sys.stderr)
        return EXIT_FAILED_EXECUTION
    print(describe(plain(item["Item"]), dt.datetime.now(dt.UTC)))
    return 0


def forget(arguments: argparse.Namespace) -> int:
    if not arguments.yes:
        raise CliError("forget deletes a record and lets its event run again: add --yes to confirm")
    key = _record_key(arguments)
    dynamodb = _client("dynamodb", arguments)
    deleted = dynamodb.delete_item(
        TableName=_table(arguments, dynamodb), Key={"id": {"S": key}}, ReturnValues="ALL_OLD"
    )
    if "Attributes" not in deleted:
        print(f"no record for {key}", file=sys.stderr)
        return EXIT_FAILED_EXECUTION
    print(f"forgot {key} (was {deleted['Attributes']['status']['S']})")
    return 0


def draw(arguments: argparse.Namespace) -> int:
    try:
        print(graph.mermaid(arguments.asl), end="")
    # JSONDecodeError and UnicodeDecodeError are ValueErrors
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CliError(f"cannot draw {arguments.asl}: {error}") from None
    return 0


def check(arguments: argparse.Namespace) -> int:
    require_extra("local", "sfn-idempotency check")
    from sfn_idempotency.local.explorer import DEFAULT_MAX_STEPS, DEFAULT_SCHEDULES
    from sfn_idempotency.local.explorer.command import CheckError, CheckRequest, parse_request
    from sfn_idempotency.local.explorer.command import check as run_check
    from sfn_idempotency.local.explorer.report import dumps

    warnings.showwarning = _one_line_warning
    # With --json, stdout is the JSON alone: what the handlers print goes to stderr (their log).
    printed_to = contextlib.redirect_stdout(sys.stderr) if arguments.json else contextlib.nullcontext()
    try:
        with printed_to:
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


def print_environment(arguments: argparse.Namespace) -> int:
    for name, value in shell_environment(arguments.endpoint_url, arguments.region).items():
        print(f"export {name}={shlex.quote(value)}")
    return 0


def wrap(arguments: argparse.Namespace) -> int:
    source = arguments.definition
    definition = sys.stdin.read() if source == "-" else _read_text(source, "a definition")
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


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": demo,
    "serve": serve,
    "start": start,
    "record": record,
    "forget": forget,
    "graph": draw,
    "wrap": wrap,
    "check": check,
    "env": print_environment,
}


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    try:
        return COMMANDS[arguments.command](arguments)
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


def one_line(message: str) -> str:
    """Bad input is one line, even when it quotes what it was given (a file name with a newline)."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


def run() -> NoReturn:
    sys.exit(main())


if __name__ == "__main__":
    run()
