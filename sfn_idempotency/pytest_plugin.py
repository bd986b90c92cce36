"""pytest fixtures for testing state machines on the local engine (registered as a pytest11 plugin).

- ``local_cloud``: a started LocalCloud (moto Step Functions, DynamoDB, EventBridge, in-process
  Lambdas), closed after the test. Retry waits are cut to zero so Retry policies run instantly.
- ``idempotent_service``: the project's workflow deployed on it with the example configuration.

The engine is imported when a fixture is used, not when pytest loads the plugin: a project that
installed only ``[cdk]`` keeps a working pytest.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from sfn_idempotency.testing import IdempotentService, LocalCloud

_RETRY_WAIT_SCALE = "sfn_local_retry_wait_scale"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        _RETRY_WAIT_SCALE, "factor applied to Retry waits in local_cloud (default 0: no waiting)", default="0"
    )


@pytest.fixture
def local_cloud(request: pytest.FixtureRequest) -> Iterator[LocalCloud]:
    from sfn_idempotency.testing import LocalCloud

    scale = float(request.config.getini(_RETRY_WAIT_SCALE))
    with LocalCloud(retry_wait_scale=scale) as cloud:
        yield cloud


@pytest.fixture
def idempotent_service(local_cloud: LocalCloud) -> IdempotentService:
    from sfn_idempotency.testing import IdempotentService

    return IdempotentService(local_cloud)
