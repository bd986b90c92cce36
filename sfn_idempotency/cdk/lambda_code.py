"""Lambda code and layers, without bundling or Docker: the handlers' folders are the assets."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Aws, Duration, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from sfn_idempotency.cdk.nag import acknowledge_lambda_findings
from sfn_idempotency.cdk.state_machines import LOG_RETENTION
from sfn_idempotency.flow.resources import COMPUTE_KEY_HANDLER, LAMBDAS_DIR

# Powertools for AWS Lambda (Python) v3, public layer published by AWS in every commercial region.
POWERTOOLS_LAYER_ACCOUNT = "017000801446"
POWERTOOLS_LAYER_VERSION = 27
RUNTIME = lambda_.Runtime.PYTHON_3_13
_POWERTOOLS_LAYER_NAME = "AWSLambdaPowertoolsPythonV3-python313-x86_64"
_POWERTOOLS_LAYER_ID = "PowertoolsLayer"
KEY_FUNCTION_TIMEOUT = Duration.seconds(10)
KEY_FUNCTION_MEMORY_MB = 256


def handler_code(package: str) -> lambda_.Code:
    """Only ``lambdas/<package>/`` goes into the asset; the asset root is on the runtime's sys.path,
    so the handler is ``<package>.handler.handler`` on AWS and locally alike."""
    if not (LAMBDAS_DIR / package / "handler.py").is_file():
        raise ValueError(f"no Lambda handler at lambdas/{package}/handler.py")
    return lambda_.Code.from_asset(
        str(LAMBDAS_DIR), exclude=["*", f"!{package}", f"!{package}/**", "**/__pycache__", "**/*.pyc"]
    )


def powertools_layer(scope: Construct, version: int = POWERTOOLS_LAYER_VERSION) -> lambda_.ILayerVersion:
    """The stack's one reference to the public Powertools layer of its own region."""
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(_POWERTOOLS_LAYER_ID)
    if existing is not None:
        return existing  # type: ignore[return-value]
    arn = f"arn:{Aws.PARTITION}:lambda:{Aws.REGION}:{POWERTOOLS_LAYER_ACCOUNT}:layer:{_POWERTOOLS_LAYER_NAME}:{version}"
    return lambda_.LayerVersion.from_layer_version_arn(stack, _POWERTOOLS_LAYER_ID, arn)


def key_function(
    scope: Construct,
    construct_id: str,
    *,
    description: str,
    log_group_id: str,
    environment: Mapping[str, str] | None = None,
    powertools_layer_version: int = POWERTOOLS_LAYER_VERSION,
) -> lambda_.Function:
    """The key Lambda (``compute_key``): it makes no AWS calls, so it gets no rights beyond its logs
    and traces. ``environment`` holds a standalone workflow's IDEMPOTENCY_* settings; a key Lambda
    shared by inline steps has none."""
    function = lambda_.Function(
        scope,
        construct_id,
        description=description,
        runtime=RUNTIME,
        handler=COMPUTE_KEY_HANDLER,
        code=handler_code("compute_key"),
        layers=[powertools_layer(scope, powertools_layer_version)],
        environment=dict(environment) if environment else None,
        timeout=KEY_FUNCTION_TIMEOUT,
        memory_size=KEY_FUNCTION_MEMORY_MB,
        tracing=lambda_.Tracing.ACTIVE,
        log_group=logs.LogGroup(scope, log_group_id, retention=LOG_RETENTION),
    )
    acknowledge_lambda_findings(function)
    return function
