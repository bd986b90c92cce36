"""Public API: test state machines locally (``pip install 'sfn-idempotency[local]'``).

- ``LocalCloud``: one in-process AWS account on moto's Step Functions interpreter, with moto
  DynamoDB and EventBridge and your real Lambda handlers; ``clock`` moves time, ``faults`` injects
  API errors, function errors and delays.
- ``IdempotentService``: the idempotent workflow deployed on a LocalCloud as the construct deploys it.
- ``ExecutionResult``: status, output, error, cause, visited states and history of one execution.
- ``ActivityWorker``: a Python function as an activity's worker, through the API, for a test.
- ``LocalCloud(mock_config=...)``: Step Functions Local's mock file, for ``<arn>#<TestCase>`` starts.
- ``LocalCloud.deploy_cdk_out(dir)``: your CDK app's ``cdk synth`` output, deployed; it answers a
  ``DeployedAssembly`` (``.stack(name)``: ``DeployedStack``, resources by logical id or construct
  path); what the engine cannot run is a ``SkippedResourceWarning``.
- ``LocalCloud.deploy_template(path)``: your SAM or CloudFormation template, packaged as ``sam
  deploy`` packages it and translated by aws-sam-translator; it answers a ``DeployedStack``. A bad
  template or override is a ``TemplateError``; a Node.js function declared for another Node than
  the engine's is a ``NodeVersionWarning`` at its first call, and the AWS SDK its runtime carries
  that could not be installed from npm a ``NodeSdkWarning``; a Python function whose code the
  engine's Python cannot load, declared for another, a ``PythonVersionWarning``.
- ``explore(ExplorationTarget(cloud, machine_arn, [request], watch=[function], key=...))``: the
  exactly-once explorer, which runs the machine under many schedules of duplicates, faults, stops,
  time-outs, redrives, a moving clock and late release workflows; ``report.assert_exactly_once()``
  fails a test with the shortest counterexample (an ``ExactlyOnceViolation``), its timeline and the
  token that replays it (``explore(..., replay=token)``). ``ExplorationTarget.of_service`` for an
  IdempotentService; ``ScheduleOutcome`` is what a user invariant receives.
- ``load_settings`` / ``IdempotencySettings``: the key Lambda's configuration (``IDEMPOTENCY_*``
  names), validated as the Lambda validates it at cold start; ``example_settings``: the example's.

The pytest plugin (registered on install) provides the fixtures ``local_cloud``,
``idempotent_service``, ``cdk_app`` (the project's cdk.out, deployed on ``local_cloud``) and
``sam_app`` (the project's template.yaml, likewise).
"""

from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings, load_settings
from sfn_idempotency.local.apps.deployed import (
    CloudAssemblyError,
    DeployedAssembly,
    DeployedStack,
    DeploymentError,
    SkippedResourceWarning,
)
from sfn_idempotency.local.apps.sam_templates import TemplateError
from sfn_idempotency.local.capabilities.activities import ActivityWorker
from sfn_idempotency.local.compat import IncompatibleMotoError
from sfn_idempotency.local.controls.clock import MovableClock
from sfn_idempotency.local.controls.faults import FaultPlan
from sfn_idempotency.local.engine.cloud import EngineError, LocalCloud
from sfn_idempotency.local.engine.lambdas import LocalFunction, LocalLambdaContext
from sfn_idempotency.local.engine.results import ExecutionResult
from sfn_idempotency.local.engine.service import IdempotentService
from sfn_idempotency.local.explorer import (
    DEFAULT_SCHEDULES,
    Counterexample,
    EventBridgeDelivery,
    ExactlyOnceViolation,
    ExplorerError,
    Report,
    ScheduleOutcome,
    TargetError,
    explore,
)
from sfn_idempotency.local.explorer import Target as ExplorationTarget
from sfn_idempotency.local.runtimes.node import NodeVersionWarning
from sfn_idempotency.local.runtimes.node_sdk import NodeSdkWarning
from sfn_idempotency.local.runtimes.python import PythonVersionWarning
from sfn_idempotency.settings import example_settings

__all__ = [
    "DEFAULT_SCHEDULES",
    "ActivityWorker",
    "CloudAssemblyError",
    "Counterexample",
    "DeployedAssembly",
    "DeployedStack",
    "DeploymentError",
    "EngineError",
    "EventBridgeDelivery",
    "ExactlyOnceViolation",
    "ExecutionResult",
    "ExplorationTarget",
    "ExplorerError",
    "FaultPlan",
    "IdempotencySettings",
    "IdempotentService",
    "IncompatibleMotoError",
    "LocalCloud",
    "LocalFunction",
    "LocalLambdaContext",
    "MovableClock",
    "NodeSdkWarning",
    "NodeVersionWarning",
    "PythonVersionWarning",
    "Report",
    "ScheduleOutcome",
    "SkippedResourceWarning",
    "TargetError",
    "TemplateError",
    "example_settings",
    "explore",
    "load_settings",
]
