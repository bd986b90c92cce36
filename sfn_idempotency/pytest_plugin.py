"""pytest fixtures for testing state machines on the local engine (registered as a pytest11 plugin).

- ``local_cloud``: a started LocalCloud (moto Step Functions, DynamoDB, EventBridge, in-process
  Lambdas), closed after the test. Retry waits are cut to zero so Retry policies run instantly.
- ``idempotent_service``: the project's workflow deployed on it with the example configuration.
- ``@pytest.mark.sfn_mock_config(path_or_dict)``: the ``local_cloud`` of that test reads Step
  Functions Local's mock file (a relative path is the test file's folder's), for executions started
  as ``<stateMachineArn>#<TestCase>``.
- ``cdk_app``: the project's own CDK app, as ``cdk synth`` left it (ini ``sfn_cdk_out``, default
  ``cdk.out`` under pytest's rootdir; ``sfn_cdk_stacks`` selects stacks), deployed on
  ``local_cloud``; ``@pytest.mark.sfn_cdk_out(path, stacks=[...], stand_in=[...])`` for one test
  (ini ``sfn_stand_in``: resources to stand in for, sfn_idempotency.local.apps.stand_ins).
- ``sam_app``: the project's SAM or CloudFormation template (ini ``sfn_template``, default
  ``template.yaml`` under the rootdir) deployed on ``local_cloud`` as ``sam deploy`` would;
  ``@pytest.mark.sfn_template(path, parameters={...}, state_machine_names={...})`` for one test.

The engine is imported when a fixture is used, not when pytest loads the plugin: a project that
installed only ``[cdk]`` keeps a working pytest.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sfn_idempotency.extras import MissingExtraError

if TYPE_CHECKING:
    from sfn_idempotency.local.apps.deployed import DeployedAssembly, DeployedStack
    from sfn_idempotency.testing import IdempotentService, LocalCloud

_RETRY_WAIT_SCALE = "sfn_local_retry_wait_scale"
_CDK_OUT = "sfn_cdk_out"
_CDK_STACKS = "sfn_cdk_stacks"
_STAND_IN = "sfn_stand_in"
_TEMPLATE = "sfn_template"
MOCK_CONFIG_MARKER = "sfn_mock_config"
CDK_OUT_MARKER = "sfn_cdk_out"
TEMPLATE_MARKER = "sfn_template"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        _RETRY_WAIT_SCALE, "factor applied to Retry waits in local_cloud (default 0: no waiting)", default="0"
    )
    parser.addini(
        _CDK_OUT, "the cloud assembly cdk_app deploys (default: cdk.out under the rootdir)", default="cdk.out"
    )
    parser.addini(
        _CDK_STACKS, "the stacks cdk_app deploys, globs allowed (default: every stack)", type="args"
    )
    parser.addini(
        _TEMPLATE,
        "the SAM or CloudFormation template sam_app deploys (default: template.yaml)",
        default="template.yaml",
    )
    parser.addini(
        _STAND_IN,
        "resources (logical ids or types, globs) cdk_app stands in for instead of refusing the app",
        type="args",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MOCK_CONFIG_MARKER}(path_or_dict): the local_cloud fixture reads this Step Functions Local mock file",
    )
    config.addinivalue_line(
        "markers",
        f"{CDK_OUT_MARKER}(path, stacks=None, stand_in=None): the cloud assembly the cdk_app fixture deploys",
    )
    config.addinivalue_line(
        "markers",
        f"{TEMPLATE_MARKER}(path, parameters=None, state_machine_names=None, stand_in=None): the template "
        "the sam_app fixture deploys",
    )


@pytest.fixture
def local_cloud(request: pytest.FixtureRequest) -> Iterator[LocalCloud]:
    scale = float(request.config.getini(_RETRY_WAIT_SCALE))
    with _local_cloud_class()(retry_wait_scale=scale, mock_config=_marked_mock_config(request)) as cloud:
        yield cloud


def _local_cloud_class() -> type[LocalCloud]:
    """The engine; without the [local] extra, or on a moto it was not tested on, the test fails
    with the one line that says which and how to install it."""
    try:
        from sfn_idempotency.testing import LocalCloud
    except MissingExtraError as error:
        refusal = str(error)
    else:
        return LocalCloud
    pytest.fail(refusal, pytrace=False)


def _marked_mock_config(request: pytest.FixtureRequest) -> Any:
    marker = request.node.get_closest_marker(MOCK_CONFIG_MARKER)
    if marker is None:
        return None
    (config,) = marker.args
    if isinstance(config, str | Path) and not Path(config).is_absolute():
        return Path(request.path).parent / config
    return config


@pytest.fixture
def idempotent_service(local_cloud: LocalCloud) -> IdempotentService:
    from sfn_idempotency.testing import IdempotentService

    return IdempotentService(local_cloud)


@pytest.fixture
def cdk_app(local_cloud: LocalCloud, request: pytest.FixtureRequest) -> DeployedAssembly:
    """The project's CDK app (its ``cdk synth`` output) deployed on ``local_cloud``."""
    marker = request.node.get_closest_marker(CDK_OUT_MARKER)
    stand_in = list(request.config.getini(_STAND_IN))
    if marker is not None:
        directory = Path(marker.args[0])
        stacks = list(marker.kwargs.get("stacks") or [])
        stand_in = list(marker.kwargs.get("stand_in") or stand_in)
        base = Path(request.path).parent
    else:
        directory = Path(str(request.config.getini(_CDK_OUT)))
        stacks = list(request.config.getini(_CDK_STACKS))
        base = Path(request.config.rootpath)
    path = directory if directory.is_absolute() else base / directory
    return local_cloud.deploy_cdk_out(path, stacks, stand_in=stand_in)


@pytest.fixture
def sam_app(local_cloud: LocalCloud, request: pytest.FixtureRequest) -> DeployedStack:
    """The project's SAM or CloudFormation template deployed on ``local_cloud``."""
    marker = request.node.get_closest_marker(TEMPLATE_MARKER)
    options = dict(marker.kwargs) if marker is not None else {}
    if marker is not None:
        template, base = Path(marker.args[0]), Path(request.path).parent
    else:
        template, base = Path(str(request.config.getini(_TEMPLATE))), Path(request.config.rootpath)
    return local_cloud.deploy_template(
        template if template.is_absolute() else base / template,
        parameters=options.get("parameters"),
        state_machine_names=options.get("state_machine_names"),
        stand_in=list(options.get("stand_in") or request.config.getini(_STAND_IN)),
    )
