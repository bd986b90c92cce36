"""Step Functions engines side by side: the same pure-ASL workloads against each endpoint, interleaved.

    python -m bench.peer --serve                          # our `serve`, started for the run
    python -m bench.peer --serve --endpoint localstack=http://127.0.0.1:4566

Each workload (ten Pass states; a Choice loop to 50 with ``States.MathAdd``; a Map of 100 items,
MaxConcurrency 10) is created on every endpoint, then run ``--samples`` times, one endpoint after the
other for each sample, so that every engine sees the same machine at the same minute. An execution
is timed from StartExecution until DescribeExecution, asked every ``--poll-ms``, says it ended: the
poll is part of every figure, the same for every engine. Then ``--executions`` executions run at
``--threads`` in flight on each endpoint in turn, for a throughput. Every execution's output must be
the same on every endpoint, or the run fails: a fast wrong answer is not a result.

Writes a table (median, p95, per second, and each ratio to the first endpoint) to stdout, and to
``--out`` when given. Nothing but the given endpoints is contacted, with fake credentials.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

REGION = "us-east-1"
ROLE = "arn:aws:iam::000000000000:role/bench-peer"
SERVE_READY_SECONDS = 60
EXECUTION_DEADLINE_SECONDS = 60
P95 = 0.95


def _ten_passes() -> dict[str, Any]:
    states: dict[str, Any] = {f"Pass{i}": {"Type": "Pass", "Next": f"Pass{i + 1}"} for i in range(9)}
    states["Pass9"] = {"Type": "Pass", "End": True}
    return {"StartAt": "Pass0", "States": states}


def _choice_loop(limit: int = 50) -> dict[str, Any]:
    return {
        "StartAt": "Start",
        "States": {
            "Start": {"Type": "Pass", "Result": {"i": 0}, "Next": "Loop"},
            "Loop": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.i", "NumericLessThan": limit, "Next": "Add"}],
                "Default": "Done",
            },
            "Add": {"Type": "Pass", "Parameters": {"i.$": "States.MathAdd($.i, 1)"}, "Next": "Loop"},
            "Done": {"Type": "Succeed"},
        },
    }


def _map_of_items() -> dict[str, Any]:
    return {
        "StartAt": "Fan",
        "States": {
            "Fan": {
                "Type": "Map",
                "MaxConcurrency": 10,
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "Echo",
                    "States": {"Echo": {"Type": "Pass", "End": True}},
                },
                "End": True,
            }
        },
    }


@dataclass(frozen=True)
class Workload:
    name: str
    definition: dict[str, Any]
    execution_input: Any


WORKLOADS = (
    Workload("ten Pass states", _ten_passes(), {"order": 1}),
    Workload("a Choice loop to 50", _choice_loop(), {}),
    Workload("a Map of 100 items", _map_of_items(), list(range(100))),
)


@dataclass
class Figures:
    seconds: list[float] = field(default_factory=list)
    per_second: float = 0.0

    @property
    def median_ms(self) -> float:
        return statistics.median(self.seconds) * 1000

    @property
    def p95_ms(self) -> float:
        ordered = sorted(self.seconds)
        return ordered[min(len(ordered) - 1, int(P95 * len(ordered)))] * 1000


class Engine:
    """One endpoint: its client and the machines created on it."""

    def __init__(self, name: str, url: str, poll_seconds: float) -> None:
        self.name = name
        self.url = url
        self.poll_seconds = poll_seconds
        self.client = boto3.client(
            "stepfunctions",
            region_name=REGION,
            endpoint_url=url,
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
            config=Config(max_pool_connections=64, retries={"max_attempts": 0}),
        )
        self.machines: dict[str, str] = {}

    def create(self, workload: Workload, run_id: str) -> None:
        answer = self.client.create_state_machine(
            name=f"peer-{run_id}-{len(self.machines)}",
            definition=json.dumps(workload.definition),
            roleArn=ROLE,
        )
        self.machines[workload.name] = answer["stateMachineArn"]

    def run(self, workload: Workload) -> tuple[float, Any]:
        """Seconds from StartExecution to an ended DescribeExecution, and the output."""
        started = time.perf_counter()
        arn = self.client.start_execution(
            stateMachineArn=self.machines[workload.name], input=json.dumps(workload.execution_input)
        )["executionArn"]
        deadline = started + EXECUTION_DEADLINE_SECONDS
        while time.perf_counter() < deadline:
            described = self.client.describe_execution(executionArn=arn)
            if described["status"] != "RUNNING":
                elapsed = time.perf_counter() - started
                if described["status"] != "SUCCEEDED":
                    raise RuntimeError(f"{self.name}: {workload.name} ended {described['status']}")
                return elapsed, json.loads(described["output"])
            time.sleep(self.poll_seconds)
        raise RuntimeError(f"{self.name}: {workload.name} did not end within {EXECUTION_DEADLINE_SECONDS} s")


def measure(
    engines: list[Engine], samples: int, executions: int, threads: int
) -> dict[str, dict[str, Figures]]:
    """Per workload, per engine: the latencies (interleaved) and the throughput (in turns)."""
    figures = {w.name: {e.name: Figures() for e in engines} for w in WORKLOADS}
    run_id = str(int(time.time()))
    for engine in engines:
        for workload in WORKLOADS:
            engine.create(workload, run_id)
    for workload in WORKLOADS:
        for engine in engines:
            engine.run(workload)  # warm: the first parse, the first connection
        for _ in range(samples):
            outputs = []
            for engine in engines:
                seconds, output = engine.run(workload)
                figures[workload.name][engine.name].seconds.append(seconds)
                outputs.append(output)
            _same_everywhere(workload, engines, outputs)
        for engine in engines:
            figures[workload.name][engine.name].per_second = _rate(engine, workload, executions, threads)
    return figures


def _same_everywhere(workload: Workload, engines: list[Engine], outputs: list[Any]) -> None:
    for engine, output in zip(engines[1:], outputs[1:], strict=True):
        if output != outputs[0]:
            raise RuntimeError(
                f"{workload.name}: {engine.name} answered {output!r}, {engines[0].name} {outputs[0]!r}"
            )


def _rate(engine: Engine, workload: Workload, executions: int, threads: int) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(lambda _: engine.run(workload), range(executions)))
    return executions / (time.perf_counter() - started)


def render(engines: list[Engine], figures: dict[str, dict[str, Figures]], args: argparse.Namespace) -> str:
    first = engines[0].name
    header = "| workload | engine | median ms | p95 ms | per second at {t} in flight | {f} / engine: median, p95, per second |"
    lines = [
        "# Step Functions engines side by side (bench/peer.py)",
        "",
        f"{args.samples} interleaved executions per workload and engine, DescribeExecution every "
        f"{args.poll_ms} ms; {args.executions} executions at {args.threads} in flight for the rate. "
        "Every output was the same on every engine.",
        "",
        header.format(t=args.threads, f=first),
        "|---|---|---|---|---|---|",
    ]
    for workload, by_engine in figures.items():
        reference = by_engine[first]
        for engine in engines:
            mine = by_engine[engine.name]
            ratios = (
                f"{reference.median_ms / mine.median_ms:.2f}x, {reference.p95_ms / mine.p95_ms:.2f}x, "
                f"{mine.per_second / reference.per_second:.2f}x"
            )
            lines.append(
                f"| {workload} | {engine.name} | {mine.median_ms:.1f} | {mine.p95_ms:.1f} | "
                f"{mine.per_second:.0f} | {ratios} |"
            )
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def our_serve() -> Iterator[str]:
    """`sfn-idempotency serve` on a free loopback port, without the console; its endpoint."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "sfn_idempotency.cli", "serve", "--port", str(port), "--no-console"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        if not line:
            raise RuntimeError(f"serve ended before its ready line (exit {server.wait(SERVE_READY_SECONDS)})")
        yield str(json.loads(line)["endpoint"])
    finally:
        server.terminate()
        server.wait(SERVE_READY_SECONDS)


def named_endpoint(text: str) -> tuple[str, str]:
    name, separator, url = text.partition("=")
    if not separator or not url.startswith("http"):
        raise argparse.ArgumentTypeError(f"an endpoint is NAME=http://host:port, got {text!r}")
    return name, url


def main(argv: list[str] | None = None, report: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--endpoint", type=named_endpoint, action="append", default=[], metavar="NAME=URL")
    parser.add_argument("--serve", action="store_true", help="start our `serve` and compare it as 'ours'")
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--executions", type=int, default=96, help="executions per throughput figure")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--poll-ms", type=float, default=10.0)
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    if not args.endpoint and not args.serve:
        parser.error("name an --endpoint, or --serve")
    with contextlib.ExitStack() as stack:
        endpoints = list(args.endpoint)
        if args.serve:
            endpoints.append(("ours", stack.enter_context(our_serve())))
        engines = [Engine(name, url, args.poll_ms / 1000) for name, url in endpoints]
        table = render(engines, measure(engines, args.samples, args.executions, args.threads), args)
    report(table)
    if args.out is not None:
        args.out.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    raise SystemExit(main())
