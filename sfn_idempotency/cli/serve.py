"""``sfn-idempotency serve``: the local engine on an HTTP endpoint, with the example's workflows or
the user's app (a cloud assembly, SAM templates)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sfn_idempotency.cli.options import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    CliError,
    add_access_flags,
    add_setting_flags,
    host,
    is_loopback,
    one_line_warning,
    port,
    retained_executions,
    settings_from,
)
from sfn_idempotency.deployed.remote import shell_environment
from sfn_idempotency.flow import inline_workflows
from sfn_idempotency.flow.definitions import is_a_flow_answer
from sfn_idempotency.flow.resources import ORDER_WORKFLOW_ASL
from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings
from sfn_idempotency.settings import ORDER_ERROR_STATUSES, ORDER_EVENT_KEY_JMESPATH

if TYPE_CHECKING:
    from sfn_idempotency.console import ConsoleSettings
    from sfn_idempotency.local import LocalCloud
    from sfn_idempotency.local.capabilities.mock_files import MockConfigSource
    from sfn_idempotency.local.http.request_guard import AccessPolicy
    from sfn_idempotency.local.http.server import LocalRestApi
    from sfn_idempotency.local.observability.task_failures import TaskFailure


def add_parser(commands: Any) -> None:
    command = commands.add_parser(
        "serve",
        help="serve Step Functions, DynamoDB and EventBridge on a local HTTP endpoint",
        description="Starts moto's server with the project's table and state machine created and the "
        "Lambdas dispatched in-process to the real handlers. The AWS CLI and any SDK work against it "
        "with --endpoint-url and region us-east-1 (any credentials). When ready it prints one JSON line: "
        "endpoint, region, state machine ARNs and table name. Stops cleanly on SIGINT or SIGTERM.",
    )
    command.add_argument(
        "--host", type=host, default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})"
    )
    command.add_argument("--port", type=port, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    command.add_argument(
        "--console-actions",
        action="store_true",
        help="let the console at the endpoint's root start executions and forget records "
        "(it is read-only without this flag; serve has no authentication)",
    )
    command.add_argument(
        "--no-console",
        action="store_true",
        help="serve the APIs only, with no console at the endpoint's root",
    )
    command.add_argument(
        "--api-port",
        type=port,
        default=0,
        help="the port of the HTTP front door, or of your app's first REST API stage (each next "
        "stage takes the port after); default: any free port",
    )
    command.add_argument(
        "--retain-executions",
        type=retained_executions,
        default=None,
        metavar="N",
        help="keep at most N ended executions, forgetting the oldest first (default: keep every "
        "one, as AWS keeps them for 90 days); for a serve left running for days",
    )
    command.add_argument(
        "--mock-config",
        metavar="PATH",
        default=os.environ.get("SFN_MOCK_CONFIG"),
        help="Step Functions Local's mock file, for executions started as <stateMachineArn>#<TestCase>; "
        "read again whenever it changes (default: $SFN_MOCK_CONFIG)",
    )
    app = command.add_argument_group(
        "your app: a CDK app or SAM templates (instead of the example's workflows)"
    )
    app.add_argument(
        "--cdk-out",
        metavar="DIR",
        type=Path,
        help="deploy the cloud assembly cdk synth left in DIR (manifest.json, templates, assets)",
    )
    app.add_argument(
        "--cdk-app",
        nargs="?",
        const="",
        metavar="COMMAND",
        help="synthesize the CDK app as `cdk synth` does (no CDK CLI needed: the command run in this "
        "folder with CDK_OUTDIR and cdk.json's context; default: cdk.json's app), then deploy its assembly",
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
    add_access_flags(command)
    add_setting_flags(command)


def run(arguments: argparse.Namespace) -> int:
    from sfn_idempotency.local import LocalCloud
    from sfn_idempotency.local.engine.backends import PortInUseError, ServerBackend
    from sfn_idempotency.local.engine.cloud import DEFAULT_REGION

    settings = settings_from(arguments)
    stop = threading.Event()
    warnings.showwarning = one_line_warning
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
    if arguments.cdk_app is not None:
        arguments.cdk_out = _synthesized(arguments)
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
            report_failures(cloud)
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
    from sfn_idempotency.local.capabilities.mock_files import MockConfigError, MockConfigSource, keep_reading

    if not path:
        return None

    def report(line: str) -> None:
        print(f"sfn-idempotency: {line}", file=sys.stderr, flush=True)

    source = MockConfigSource(path, on_change=report)
    with contextlib.suppress(MockConfigError):  # a fault is reported as it is read
        report(f"mock configuration {path}: {len(source.current().test_cases)} test case(s)")
    threading.Thread(target=keep_reading, args=(source, stop), name="mock-config", daemon=True).start()
    return source


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


def report_failures(cloud: LocalCloud) -> None:
    """One line on stderr for each failed Task attempt of the served apps, but for the flow's own
    expected answers (a duplicate's claim, a fenced completion or release: is_a_flow_answer), which
    are its way of working, not failures; one for each failed run of a function a trigger
    invoked, which no caller sees; and one for each e-mail or SMS the engine does not send."""
    from sfn_idempotency.local.observability import function_failures, unsent_notifications

    def report(failure: TaskFailure) -> None:
        if not is_a_flow_answer(failure.state, failure.error):
            print(f"sfn-idempotency: task failed: {failure.line()}", file=sys.stderr, flush=True)

    cloud.on_task_failure(report)
    function_failures.listeners.append(
        lambda failure: print(
            f"sfn-idempotency: function failed: {failure.line()}", file=sys.stderr, flush=True
        )
    )
    unsent_notifications.listeners.append(
        lambda notification: print(
            f"sfn-idempotency: not sent: {notification.line()}", file=sys.stderr, flush=True
        )
    )


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


def _synthesized(arguments: argparse.Namespace) -> Path:
    """--cdk-app's cloud assembly, synthesized in the current folder (where cdk.json is)."""
    from sfn_idempotency.local.apps.cdk_apps import SynthError, synthesize
    from sfn_idempotency.local.engine.cloud import DEFAULT_REGION, MOTO_ACCOUNT

    if arguments.cdk_out is not None:
        raise CliError("--cdk-app synthesizes the assembly itself: give --cdk-app or --cdk-out")
    try:
        return synthesize(Path.cwd(), arguments.cdk_app or None, region=DEFAULT_REGION, account=MOTO_ACCOUNT)
    except SynthError as error:
        raise CliError(str(error)) from None


def _check_apps(arguments: argparse.Namespace) -> None:
    """What serve is to deploy can be read, and its options make sense, before anything starts."""
    from sfn_idempotency.local.apps import sam_templates
    from sfn_idempotency.local.apps.cloud_assembly import read_assembly, select
    from sfn_idempotency.local.apps.deployed import CloudAssemblyError

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
    from sfn_idempotency.local.apps.cloud_assembly import fingerprint, keep_deploying, redeploy
    from sfn_idempotency.local.apps.deployed import (
        CloudAssemblyError,
        DeployedAssembly,
        DeployedStack,
        DeploymentError,
        SkippedResourceWarning,
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
