"""The demo's scenarios on the embedded engine."""

from __future__ import annotations

from typing import Any

from sfn_idempotency.flow.outcomes import Outcome
from sfn_idempotency.local.engine.service import IdempotentService

# An embedded execution runs in milliseconds; a second is ample on a busy machine too.
EMBEDDED_HOLD_SECONDS = 1.0


class LocalTarget:
    concurrent_hold_seconds = EMBEDDED_HOLD_SECONDS

    def __init__(self, service: IdempotentService) -> None:
        self.service = service
        self.settings = service.settings

    def start(self, event: Any) -> str:
        return self.service.start(event)

    def wait(self, execution_arn: str) -> Outcome:
        result = self.service.cloud.wait(execution_arn)
        return Outcome(
            arn=result.arn,
            status=result.status,
            output_json=result.output_json,
            error=result.error,
            states=result.states,
            business_runs=self.service.business_runs_in(result),
        )

    def record(self, key: str) -> dict[str, Any] | None:
        return self.service.record(key)

    def records(self) -> list[dict[str, Any]]:
        return self.service.records()
