"""The main job: the idempotent order workflow, walked through its paths.

The scenarios are driven by the orders alone (the example business step's ``simulate`` hooks stand in
for a slow or failing payment gateway), so the same table runs on the embedded engine (``demo``) and
against a deployed stack or any endpoint (``aws-check``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from sfn_idempotency.flow.outcomes import Outcome, Target
from sfn_idempotency.lambdas.compute_key.computation import key_of

if TYPE_CHECKING:
    from sfn_idempotency.local.engine.targets import LocalTarget

CLAIM_DEADLINE_SECONDS = 30.0
CLAIM_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class Row:
    scenario: str
    result: Outcome
    expected: bool

    def outcome(self) -> str:
        if self.result.status == "SUCCEEDED":
            output = self.result.output
            return f"order {output['placedOrderId'][:8]} placed {output['placedAt'][11:23]}"
        return f"{self.result.error}"


def run_scenarios(target: Target) -> list[Row]:
    rows: list[Row] = []

    def run(event: Any) -> Outcome:
        return target.wait(target.start(event))

    def record(scenario: str, result: Outcome, check: Callable[[Outcome], bool]) -> Outcome:
        rows.append(Row(scenario, result, check(result)))
        return result

    def claimed(event: Any) -> bool:
        key = key_of(event, target.settings)
        return key is not None and target.record(key) is not None

    first_order = {"orderId": "o-1001", "amount": 42.5}
    first = record("first order", run(first_order), lambda r: r.status == "SUCCEEDED")
    record(
        "duplicate (client resend)",
        run(dict(first_order)),
        lambda r: r.output_json == first.output_json and r.states[-1] == "Replay",
    )

    # The first of two takes a while, so the second arrives while it holds the claim.
    slow_order = {"orderId": "o-1002", "amount": 10}
    holder = target.start({**slow_order, "simulate": {"delaySeconds": target.concurrent_hold_seconds}})
    wait_for(lambda: claimed(slow_order), "the first execution's claim")
    record(
        "concurrent duplicate",
        run(slow_order),
        lambda r: r.error == "IdempotencyAlreadyInProgressError",
    )
    record("  ...the first of the two", target.wait(holder), lambda r: r.status == "SUCCEEDED")

    flaky_order = {"orderId": "o-1003", "amount": 99}
    record(
        "failing order (released)",
        run({**flaky_order, "simulate": {"error": "PaymentGatewayTimeout"}}),
        lambda r: r.error == "PaymentGatewayTimeout" and not claimed(flaky_order),
    )
    record("retry of the failed order", run(flaky_order), lambda r: r.status == "SUCCEEDED")
    record(
        "invalid order (business error)",
        run({"orderId": "o-1004", "amount": -5}),
        lambda r: r.error == "InvalidOrderError",
    )
    return rows


def wait_for(condition: Callable[[], bool], what: str, deadline: float = CLAIM_DEADLINE_SECONDS) -> None:
    end = time.monotonic() + deadline
    while not condition():
        if time.monotonic() >= end:
            raise TimeoutError(f"not reached within {deadline:g} s: {what}")
        time.sleep(CLAIM_POLL_SECONDS)


def table_lines(rows: list[Row]) -> list[str]:
    header = ("scenario", "status", "output or error", "business runs", "states visited")
    lines = [
        (
            row.scenario,
            row.result.status,
            row.outcome(),
            str(row.result.business_runs),
            " > ".join(row.result.states),
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in [header, tuple("-" * w for w in widths), *lines]
    ]


def summary(rows: list[Row], target: Target) -> str:
    records = target.records()
    business_runs = sum(row.result.business_runs for row in rows)
    return (
        f"{len(records)} records, all {sorted({r['status'] for r in records})}; "
        f"business step ran {business_runs} times for {len(rows)} executions."
    )


def outcomes_line(counts: dict[str, int]) -> str:
    """The metrics per outcome, as the state machine's metric filters counted them."""
    return "Outcomes (metric filters on the state machine's logs): " + ", ".join(
        f"{name} {count}" for name, count in counts.items()
    )


def unexpected(rows: list[Row]) -> list[str]:
    return [row.scenario.strip() for row in rows if not row.expected]


@contextmanager
def embedded_target() -> Iterator[LocalTarget]:
    """The example workflow on a fresh embedded engine (needs the [local] extra)."""
    from sfn_idempotency.local import IdempotentService, LocalCloud
    from sfn_idempotency.local.engine.targets import LocalTarget

    with LocalCloud() as cloud:
        yield LocalTarget(IdempotentService(cloud))


def main(out: TextIO = sys.stdout) -> int:
    with embedded_target() as target:
        print(
            f"sfn-idempotency demo: state machine {target.service.name!r} on moto's Step Functions "
            f"interpreter, key prefix {target.settings.key_prefix!r}, key JMESPath "
            f"{target.settings.event_key_jmespath!r}\n",
            file=out,
        )
        rows = run_scenarios(target)
        print("\n".join(table_lines(rows)), file=out)
        print(f"\n{summary(rows, target)}", file=out)
        print(f"{outcomes_line(target.service.outcome_counts())}", file=out)
    failed = unexpected(rows)
    if failed:
        print(f"UNEXPECTED: {', '.join(failed)}", file=out)
        return 1
    return 0
