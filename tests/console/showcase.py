"""What the console's tests and its screenshots look at: the demo's scenarios run on a served engine
with the console (actions on), and a machine whose state names and data are hostile HTML."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sfn_idempotency.console import ConsoleSettings
from sfn_idempotency.demo import Row, run_scenarios
from sfn_idempotency.flow.inline_workflows import order_pipeline
from sfn_idempotency.local import IdempotentService, LocalCloud
from sfn_idempotency.local.engine.backends import ServerBackend
from sfn_idempotency.local.engine.cloud import DEFAULT_REGION
from sfn_idempotency.local.engine.results import ExecutionResult
from sfn_idempotency.local.engine.targets import LocalTarget
from tests.servers import free_port

EXPRESS_ORDER = {"orderId": "o-2001", "amount": 12}
HOSTILE_NAME = "<img src=x onerror=alert(1)>"
HOSTILE_INPUT = {"note": "<script>alert('input')</script>"}
HOSTILE_DEFINITION = {
    "Comment": "state names and data that are HTML",
    "StartAt": HOSTILE_NAME,
    "States": {
        HOSTILE_NAME: {"Type": "Pass", "Next": "<b>bold</b>"},
        "<b>bold</b>": {"Type": "Fail", "Error": "<i>Err</i>", "Cause": "<script>alert('cause')</script>"},
    },
}


@dataclass
class Showcase:
    cloud: LocalCloud
    service: IdempotentService
    rows: list[Row]
    hostile: ExecutionResult
    express_machine: str
    express: ExecutionResult

    @property
    def url(self) -> str:
        return f"{self.cloud.endpoint_url}/"

    def row(self, scenario: str) -> Row:
        return next(row for row in self.rows if row.scenario.strip() == scenario)


@contextmanager
def showcase(actions: bool = True) -> Iterator[Showcase]:
    backend = ServerBackend("127.0.0.1", free_port(), ConsoleSettings(DEFAULT_REGION, actions=actions))
    with LocalCloud(backend=backend) as cloud:
        service = IdempotentService(cloud)
        rows = run_scenarios(LocalTarget(service))
        hostile_machine = cloud.create_state_machine("hostile-names", json.dumps(HOSTILE_DEFINITION), {})
        hostile = cloud.run(hostile_machine, HOSTILE_INPUT)
        # An Express workflow with the order step wrapped inline, run as StartSyncExecution runs it.
        express_machine = service.deploy_inline(order_pipeline(service.settings), "order-pipeline-inline")
        express = cloud.run_sync(express_machine, EXPRESS_ORDER)
        yield Showcase(cloud, service, rows, hostile, express_machine, express)
