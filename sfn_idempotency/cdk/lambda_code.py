"""Lambda code and layers, without bundling or Docker: the handlers' folders are the assets."""

from __future__ import annotations

from aws_cdk import Aws, Stack
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from sfn_idempotency.resources import LAMBDAS_DIR

# Powertools for AWS Lambda (Python) v3, public layer published by AWS in every commercial region.
POWERTOOLS_LAYER_ACCOUNT = "017000801446"
POWERTOOLS_LAYER_VERSION = 27
RUNTIME = lambda_.Runtime.PYTHON_3_13
_POWERTOOLS_LAYER_NAME = "AWSLambdaPowertoolsPythonV3-python313-x86_64"
_POWERTOOLS_LAYER_ID = "PowertoolsLayer"


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
