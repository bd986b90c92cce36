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
  the engine's is a ``NodeVersionWarning`` at its first call.
- ``load_settings`` / ``IdempotencySettings``: the key Lambda's configuration (``IDEMPOTENCY_*``
  names), validated as the Lambda validates it at cold start; ``example_settings``: the example's.

The pytest plugin (registered on install) provides the fixtures ``local_cloud``,
``idempotent_service``, ``cdk_app`` (the project's cdk.out, deployed on ``local_cloud``) and
``sam_app`` (the project's template.yaml, likewise).
"""

from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings, load_settings
from sfn_idempotency.local.activities import ActivityWorker
from sfn_idempotency.local.apps.cloud_assembly import (
    CloudAssemblyError,
    DeployedAssembly,
    DeployedStack,
    DeploymentError,
    SkippedResourceWarning,
)
from sfn_idempotency.local.apps.sam_templates import TemplateError
from sfn_idempotency.local.clock import MovableClock
from sfn_idempotency.local.cloud import EngineError, ExecutionResult, LocalCloud
from sfn_idempotency.local.compat import IncompatibleMotoError
from sfn_idempotency.local.faults import FaultPlan
from sfn_idempotency.local.lambdas import LocalFunction, LocalLambdaContext
from sfn_idempotency.local.runtimes.node import NodeVersionWarning
from sfn_idempotency.local.service import IdempotentService
from sfn_idempotency.settings import example_settings

__all__ = [
    "ActivityWorker",
    "CloudAssemblyError",
    "DeployedAssembly",
    "DeployedStack",
    "DeploymentError",
    "EngineError",
    "ExecutionResult",
    "FaultPlan",
    "IdempotencySettings",
    "IdempotentService",
    "IncompatibleMotoError",
    "LocalCloud",
    "LocalFunction",
    "LocalLambdaContext",
    "MovableClock",
    "NodeVersionWarning",
    "SkippedResourceWarning",
    "TemplateError",
    "example_settings",
    "load_settings",
]
