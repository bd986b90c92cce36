"""The main job: the idempotent order workflow, walked through its paths on the embedded engine."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from sfn_idempotency.local import ExecutionResult, IdempotentService, LocalCloud

# Retry waits are real on the demo's engine, but no scenario hits a Retry.
CONCURRENT_HOLD_SECONDS = 1.0


@dataclass(frozen=True)
class Row:
    scenario: str
    result: ExecutionResult
    business_runs: int
    expected: bool

    def outcome(self) -> str:
        if self.result.status == "SUCCEEDED":
            output = self.result.output
            return f"order {output['placedOrderId'][:8]} placed {output['placedAt'][11:23]}"
        return f"{self.result.error}"


def run_scenarios(service: IdempotentService) -> list[Row]:
    cloud = service.cloud
    rows: list[Row] = []

    def record(
        scenario: str, run: Callable[[], ExecutionResult], check: Callable[[ExecutionResult], bool]
    ) -> ExecutionResult:
        result = run()
        rows.append(Row(scenario, result, service.business_runs_in(result), check(result)))
        return result

    first_order = {"orderId": "o-1001", "amount": 42.5}
    first = record("first order", lambda: service.run(first_order), lambda r: r.status == "SUCCEEDED")
    record(
        "duplicate (client resend)",
        lambda: service.run(dict(first_order)),
        lambda r: r.output_json == first.output_json and r.states[-1] == "Replay",
    )

    # The next business call takes a while, so a duplicate arrives while it holds the claim.
    slow_order = {"orderId": "o-1002", "amount": 10}
    cloud.faults.function_delay(service.business_function, CONCURRENT_HOLD_SECONDS, calls=2)
    holder = service.start(slow_order)
    service.wait_for_claim(slow_order)
    record(
        "concurrent duplicate",
        lambda: service.run(slow_order),
        lambda r: r.error == "IdempotencyAlreadyInProgressError",
    )
    record("  ...the first of the two", lambda: cloud.wait(holder), lambda r: r.status == "SUCCEEDED")

    flaky_order = {"orderId": "o-1003", "amount": 99}
    cloud.faults.function_error(
        service.business_function, "PaymentGatewayTimeout", "gateway did not answer", calls=3
    )
    record(
        "failing order (released)",
        lambda: service.run(flaky_order),
        lambda r: r.error == "PaymentGatewayTimeout" and service.record_for(flaky_order) is None,
    )
    record("retry of the failed order", lambda: service.run(flaky_order), lambda r: r.status == "SUCCEEDED")
    record(
        "invalid order (business error)",
        lambda: service.run({"orderId": "o-1004", "amount": -5}),
        lambda r: r.error == "InvalidOrderError",
    )
    return rows


def render(rows: list[Row], out: TextIO) -> None:
    header = ("scenario", "status", "output or error", "business runs", "states visited")
    lines = [
        (
            row.scenario,
            row.result.status,
            row.outcome(),
            str(row.business_runs),
            " > ".join(row.result.states),
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]
    for line in [header, tuple("-" * w for w in widths), *lines]:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip(), file=out
        )


def main(out: TextIO = sys.stdout) -> int:
    with LocalCloud() as cloud:
        service = IdempotentService(cloud)
        print(
            f"sfn-idempotency demo: state machine {service.name!r} on moto's Step Functions interpreter, "
            f"key prefix {service.settings.key_prefix!r}, key JMESPath {service.settings.event_key_jmespath!r}\n",
            file=out,
        )
        rows = run_scenarios(service)
        render(rows, out)
        records: list[dict[str, Any]] = service.records()
        print(
            f"\n{len(records)} records, all {sorted({r['status'] for r in records})}; "
            f"business step ran {service.business_runs} times for {len(rows)} executions.",
            file=out,
        )
    unexpected = [row.scenario.strip() for row in rows if not row.expected]
    if unexpected:
        print(f"UNEXPECTED: {', '.join(unexpected)}", file=out)
        return 1
    return 0
