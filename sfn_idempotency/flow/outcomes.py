"""What the demo's scenarios need of an execution and of where it runs: below both the demo and
its targets (the embedded engine, a deployed state machine), so neither imports the other."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from sfn_idempotency.lambdas.compute_key.settings import IdempotencySettings


@dataclass(frozen=True)
class Outcome:
    """What a scenario needs of an execution, wherever it ran."""

    arn: str
    status: str
    output_json: str | None
    error: str | None
    states: list[str]
    business_runs: int

    @property
    def output(self) -> Any:
        return None if self.output_json is None else json.loads(self.output_json)


class Target(Protocol):
    """Where the scenarios run: the embedded engine or a deployed state machine."""

    settings: IdempotencySettings
    # How long the first of two concurrent orders holds its claim: long enough for the second to
    # run from start to end meanwhile.
    concurrent_hold_seconds: float

    def start(self, event: Any) -> str: ...

    def wait(self, execution_arn: str) -> Outcome: ...

    def record(self, key: str) -> dict[str, Any] | None: ...

    def records(self) -> list[dict[str, Any]]: ...
