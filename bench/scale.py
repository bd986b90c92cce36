"""`make bench`, part three: issue 42's goals (speed, flatness as work grows, cost), in one run.

Each goal is measured in this run, on this machine, and reported met or missed in
bench/results/scale.md, with the figure it was judged by. Not a test: the figures depend on the
machine, and some take minutes (the listing after ``--listing-executions`` executions).
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import peer, speed
from bench.pricing import cost_per_million
from bench.run import embedding_costs, path_costs
from bench.speed import Goal
from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.engine import program_store

RESULTS_DIR = Path(__file__).parent / "results"
REPOSITORY = Path(__file__).resolve().parent.parent
GOAL_THROUGHPUT_PER_S = 250.0
GOAL_PEER_RATIO = 3.0
GOAL_JSONATA_RATIO = 1.15
GOAL_SERVE_READY_S = 2.0
GOAL_CLOUD_START_S = 1.0
GOAL_TRANSITIONS = {"first run": 3, "replay": 4}
GOAL_EXPRESS_USD_PER_MILLION = 2.00
GOAL_FRESH_TEST_S = 300.0
GOAL_LISTING_RATIO = 1.5
GOAL_MEMORY_KB = 10.0
PAGE = 100
LOOKUPS = 30  # calls per look-up figure, the median taken
STARTS = 3  # fresh processes per start-up figure, the median taken
ROLE = "arn:aws:iam::123456789012:role/scale"
TEN_PASSES = json.dumps(peer.WORKLOADS[0].definition)


def _median_of(samples: int, measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(samples))


def _fresh_python(code: str, env: dict[str, str]) -> float:
    """Seconds ``code`` printed, run in a fresh interpreter (the interpreter's own start excluded)."""
    finished = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ, **env}
    )
    return float(finished.stdout.splitlines()[-1])


CLOUD_START = """
import time
started = time.perf_counter()
from sfn_idempotency.local import LocalCloud
cloud = LocalCloud()
cloud.start()
print(time.perf_counter() - started)
cloud.close()
"""


def cloud_start(store: Path) -> Goal:
    env = {program_store.CACHE_DIR_VARIABLE: str(store)}
    seconds = _median_of(STARTS, lambda: _fresh_python(CLOUD_START, env))
    return Goal(
        "`LocalCloud()` started in a fresh process, its imports included (median of 3)",
        f"{seconds:.2f} s",
        f"< {GOAL_CLOUD_START_S:.0f} s",
        seconds < GOAL_CLOUD_START_S,
    )


def _serve_ready(env: dict[str, str]) -> float:
    command = [sys.executable, "-m", "sfn_idempotency.cli", "serve", "--port", str(_free_port())]
    started = time.perf_counter()
    server = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={**os.environ, **env}
    )
    try:
        assert server.stdout is not None
        if not server.stdout.readline():
            raise RuntimeError("serve ended before its ready line")
        return time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(30)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve_ready(store: Path) -> Goal:
    """From the command to its ready line (the example's eight machines deployed): the first start
    on a machine parses every definition; later starts read the parsed programs back."""
    env = {program_store.CACHE_DIR_VARIABLE: str(store)}
    first = _serve_ready(env)
    later = _median_of(STARTS, lambda: _serve_ready(env))
    return Goal(
        "`serve` ready (the command to its ready line): a later start; the first on a machine",
        f"{later:.2f} s; first {first:.2f} s",
        f"< {GOAL_SERVE_READY_S:.0f} s",
        later < GOAL_SERVE_READY_S,
    )


def throughput(executions: int) -> Goal:
    rate = statistics.median(speed.rate(8, executions) for _ in range(3))
    return Goal(
        "throughput at 8 in flight, in process (the idempotency flow, distinct orders; median of 3)",
        f"{rate:.0f}/s",
        f"≥ {GOAL_THROUGHPUT_PER_S:.0f}/s",
        rate >= GOAL_THROUGHPUT_PER_S,
    )


def jsonata_ratio(samples: int) -> Goal:
    measured = speed.jsonata_against_jsonpath(samples)
    ratio = float(measured.figure.split("x", 1)[0])
    return Goal(measured.what, measured.figure, f"≤ {GOAL_JSONATA_RATIO}x", ratio <= GOAL_JSONATA_RATIO)


def transitions() -> list[Goal]:
    with LocalCloud(retry_wait_scale=0) as cloud:
        costs = {cost.name: cost for cost in path_costs(cloud)}
    goals = []
    for path, goal in GOAL_TRANSITIONS.items():
        cost = costs[path]
        usd = sum(cost_per_million(cost.transitions, cost.dynamodb, cost.lambdas).values())
        goals.append(
            Goal(
                f"Standard {path}: state transitions ({' > '.join(cost.states)})",
                f"{cost.transitions} (${usd:.2f} per million)",
                f"≤ {goal}",
                cost.transitions <= goal,
            )
        )
    return goals


def express_cost() -> Goal:
    with LocalCloud(retry_wait_scale=0) as cloud:
        costs = embedding_costs(cloud, samples=2)
    (inline,) = [c for c in costs if c.express and c.path == "first run"]
    usd = sum(cost_per_million(inline.transitions, inline.dynamodb, inline.lambdas, express=True).values())
    return Goal(
        f"Express inline first run, $ per million ({inline.variant}; {inline.lambdas} Lambda invocations)",
        f"${usd:.2f}",
        f"≤ ${GOAL_EXPRESS_USD_PER_MILLION:.2f}",
        usd <= GOAL_EXPRESS_USD_PER_MILLION,
    )


def _rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _lookups(cloud: LocalCloud, machine: str) -> dict[str, float]:
    """Median milliseconds of a page of 100, a DescribeExecution and a GetExecutionHistory."""
    newest = [e["executionArn"] for e in cloud.sfn.list_executions(stateMachineArn=machine)["executions"]]
    oldest = cloud.executions(machine)[:LOOKUPS]

    def timed(call: Callable[[], Any]) -> float:
        started = time.perf_counter()
        call()
        return (time.perf_counter() - started) * 1000

    pages = [
        timed(lambda: cloud.sfn.list_executions(stateMachineArn=machine, maxResults=PAGE))
        for _ in range(LOOKUPS)
    ]
    arns = (newest + oldest)[: 2 * LOOKUPS]
    described = [timed(functools.partial(cloud.sfn.describe_execution, executionArn=arn)) for arn in arns]
    histories = [timed(functools.partial(cloud.sfn.get_execution_history, executionArn=arn)) for arn in arns]
    return {
        "ListExecutions": statistics.median(pages),
        "DescribeExecution": statistics.median(described),
        "GetExecutionHistory": statistics.median(histories),
    }


def growth(executions: int) -> list[Goal]:
    """Look-ups after 100 executions and after ``executions``; memory per ended execution between
    a tenth of them and all of them (resident memory, after a collection)."""
    with LocalCloud(retry_wait_scale=0) as cloud:
        machine = cloud.sfn.create_state_machine(name="ten-passes", definition=TEN_PASSES, roleArn=ROLE)[
            "stateMachineArn"
        ]

        def run_until(count: int, done: int) -> int:
            # Only each status is kept: a list of the results (each with its history) was what the
            # process grew by, freed after the measure but not given back to the system.
            with ThreadPoolExecutor(max_workers=8) as pool:
                statuses = set(
                    pool.map(lambda i: cloud.run(machine, {"order": i}).status, range(done, count))
                )
            if statuses - {"SUCCEEDED"}:
                raise RuntimeError(f"the ten Pass states ended {sorted(statuses)}")
            return count

        done = run_until(100, 0)
        early = _lookups(cloud, machine)
        done = run_until(executions // 10, done)
        gc.collect()
        rss_before, counted_from = _rss_bytes(), done
        done = run_until(executions, done)
        gc.collect()
        per_execution_kb = (_rss_bytes() - rss_before) / (done - counted_from) / 1024
        late = _lookups(cloud, machine)
    goals = []
    for call in early:
        ratio = late[call] / early[call]
        goals.append(
            Goal(
                f"{call} after {executions:,} executions / after 100"
                + (" (a page of 100)" if call == "ListExecutions" else ""),
                f"{ratio:.2f}x ({late[call]:.2f} ms / {early[call]:.2f} ms)",
                f"≤ {GOAL_LISTING_RATIO}x",
                ratio <= GOAL_LISTING_RATIO,
            )
        )
    goals.append(
        Goal(
            "memory per ended execution of ten Pass states (resident, after a collection)",
            f"{per_execution_kb:.1f} KB",
            f"≤ {GOAL_MEMORY_KB:.0f} KB",
            per_execution_kb <= GOAL_MEMORY_KB,
        )
    )
    return goals


def against_peers(endpoints: list[tuple[str, str]], samples: int) -> Goal:
    if not endpoints:
        return Goal(
            "LocalStack (or any peer) / ours, every workload: median, p95 and throughput",
            "not measured: no peer endpoint given (`make bench PEER=localstack=http://127.0.0.1:4566`)",
            f"≥ {GOAL_PEER_RATIO:.0f}x",
            False,
        )
    with peer.our_serve() as ours:
        engines = [peer.Engine(name, url, 0.01) for name, url in endpoints] + [
            peer.Engine("ours", ours, 0.01)
        ]
        figures = peer.measure(engines, samples, executions=96, threads=8)
    worst = min(
        min(
            by_engine[name].median_ms / by_engine["ours"].median_ms,
            by_engine[name].p95_ms / by_engine["ours"].p95_ms,
            by_engine["ours"].per_second / by_engine[name].per_second,
        )
        for by_engine in figures.values()
        for name, _ in endpoints
    )
    return Goal(
        "peer / ours, every workload of bench/peer.py: the least of the median, p95 and throughput ratios",
        f"{worst:.2f}x",
        f"≥ {GOAL_PEER_RATIO:.0f}x",
        worst >= GOAL_PEER_RATIO,
    )


def fresh_test() -> Goal:
    """Clone the repository (its committed state) and time `make test`, set-up included."""
    with tempfile.TemporaryDirectory(prefix="sfn-test-") as scratch:
        clone = Path(scratch) / "clone"
        subprocess.run(["git", "clone", "--quiet", str(REPOSITORY), str(clone)], check=True)
        environment = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        started = time.perf_counter()
        finished = subprocess.run(
            ["make", "test"], cwd=clone, env=environment, capture_output=True, check=False
        )
        elapsed = time.perf_counter() - started
        shutil.rmtree(clone, ignore_errors=True)
    return Goal(
        "fresh clone `make test`, set-up included",
        f"{elapsed:.0f} s" + ("" if finished.returncode == 0 else f", exit {finished.returncode}"),
        f"≤ {GOAL_FRESH_TEST_S:.0f} s",
        finished.returncode == 0 and elapsed <= GOAL_FRESH_TEST_S,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=40, help="executions per latency figure")
    parser.add_argument("--executions", type=int, default=192, help="executions per throughput figure")
    parser.add_argument(
        "--listing-executions",
        type=int,
        default=100_000,
        help="executions before the look-ups are timed again",
    )
    parser.add_argument("--peer", type=peer.named_endpoint, action="append", default=[], metavar="NAME=URL")
    parser.add_argument("--fresh-test", action="store_true", help="also clone and time `make test` (minutes)")
    arguments = parser.parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sfn-programs-") as store:
        goals = [cloud_start(Path(store)), serve_ready(Path(store))]
    goals += [
        throughput(arguments.executions),
        jsonata_ratio(arguments.samples),
        *transitions(),
        express_cost(),
        *growth(arguments.listing_executions),
        against_peers(arguments.peer, arguments.samples),
    ]
    if arguments.fresh_test:
        goals.append(fresh_test())
    report = speed.render(
        goals, time.perf_counter() - started, "Speed, flatness and cost: issue 42's goals", "bench.scale"
    )
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "scale.md").write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
