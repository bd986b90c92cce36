"""`make bench-console`: does the console hold its speed with 10,000 executions of one machine?

A served engine (the console on) gets EXECUTIONS executions of one state machine, half of them
failed. Measured: ListExecutions as the console's executions view calls it (first page, a status
filter, and every page walked through to the oldest), over HTTP; and the whole view in headless
Chromium, from navigation to drawn. Writes bench/results/console.md. Not part of the tests.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from sfn_idempotency.console import ConsoleSettings
from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.engine.backends import ServerBackend
from sfn_idempotency.local.engine.cloud import DEFAULT_REGION
from tests.console.conftest import Page, chromium
from tests.servers import free_port

RESULTS = Path(__file__).parent / "results" / "console.md"
PAGE_SIZE = 50  # as the console's executions view asks
TARGET_PAGE_P95_MS = 250.0
TARGET_VIEW_MEDIAN_MS = 2000.0
VIEW_SAMPLES = 5
FIRST_PAGE_SAMPLES = 30
MACHINE = {
    "StartAt": "Route",
    "States": {
        "Route": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.fail", "BooleanEquals": True, "Next": "Refuse"}],
            "Default": "Done",
        },
        "Done": {"Type": "Succeed"},
        "Refuse": {"Type": "Fail", "Error": "Refused"},
    },
}


def milliseconds(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return (time.perf_counter() - started) * 1000


def p95(samples: list[float]) -> float:
    return sorted(samples)[max(0, round(0.95 * len(samples)) - 1)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--executions", type=int, default=10_000)
    executions = parser.parse_args(argv).executions
    backend = ServerBackend("127.0.0.1", free_port(), ConsoleSettings(DEFAULT_REGION))
    with LocalCloud(backend=backend) as cloud:
        machine = cloud.create_state_machine("many", json.dumps(MACHINE), {})
        started = time.perf_counter()
        for number in range(executions):
            cloud.sfn.start_execution(stateMachineArn=machine, input=json.dumps({"fail": number % 2 == 1}))
        cloud.wait_until(
            lambda: (
                cloud.sfn.list_executions(stateMachineArn=machine, statusFilter="RUNNING")["executions"] == []
            ),
            what="every execution to end",
        )
        fill_seconds = time.perf_counter() - started

        first = [
            milliseconds(lambda: cloud.sfn.list_executions(stateMachineArn=machine, maxResults=PAGE_SIZE))
            for _ in range(FIRST_PAGE_SAMPLES)
        ]
        failed = [
            milliseconds(
                lambda: cloud.sfn.list_executions(
                    stateMachineArn=machine, maxResults=PAGE_SIZE, statusFilter="FAILED"
                )
            )
            for _ in range(FIRST_PAGE_SAMPLES)
        ]
        walk: list[float] = []
        token: str | None = None
        listed = 0
        while True:
            request = {"stateMachineArn": machine, "maxResults": PAGE_SIZE}
            if token:
                request["nextToken"] = token
            began = time.perf_counter()
            page = cloud.sfn.list_executions(**request)
            walk.append((time.perf_counter() - began) * 1000)
            listed += len(page["executions"])
            token = page.get("nextToken")
            if not token:
                break

        with tempfile.TemporaryDirectory(prefix="console-bench-") as profile:
            driver = chromium(profile)
            try:
                view = Page(driver, f"{cloud.endpoint_url}/")
                route = f"#/machine?arn={quote(machine, safe='')}"
                views = [milliseconds(lambda: view.open(route)) for _ in range(VIEW_SAMPLES)]
                rows = len(view.all("#execution-list tbody tr"))
            finally:
                driver.quit()

    rows_md = [
        ("ListExecutions, first page", first),
        ("ListExecutions, first page of FAILED", failed),
        (f"ListExecutions, every page ({len(walk)} pages, {listed} executions)", walk),
    ]
    page_ok = all(p95(samples) <= TARGET_PAGE_P95_MS for _, samples in rows_md)
    view_ok = statistics.median(views) <= TARGET_VIEW_MEDIAN_MS
    lines = [
        "# Benchmark: the console with many executions",
        "",
        f"One run of `make bench-console`: {executions:,} executions of one state machine (half failed), "
        f"started in {fill_seconds:.0f} s; pages of {PAGE_SIZE}, as the console asks. Local timings.",
        "",
        "| call | median (ms) | p95 (ms) | target p95 |",
        "|---|---|---|---|",
        *(
            f"| {name} | {statistics.median(samples):.1f} | {p95(samples):.1f} | "
            f"≤ {TARGET_PAGE_P95_MS:.0f} ms: {'met' if p95(samples) <= TARGET_PAGE_P95_MS else 'MISSED'} |"
            for name, samples in rows_md
        ),
        "",
        f"The executions view in headless Chromium (page load, graph, first page of {rows} rows), "
        f"navigation to drawn, {VIEW_SAMPLES} loads: median {statistics.median(views):.0f} ms, "
        f"slowest {max(views):.0f} ms; target median ≤ {TARGET_VIEW_MEDIAN_MS:.0f} ms: "
        f"{'met' if view_ok else 'MISSED'}.",
        "",
    ]
    RESULTS.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0 if page_ok and view_ok and listed == executions else 1


if __name__ == "__main__":
    raise SystemExit(main())
