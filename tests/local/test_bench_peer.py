"""bench/peer.py compares engines only on answers that agree: its workloads answer what ASL says, and
an engine that answers otherwise fails the run instead of counting as fast."""

from __future__ import annotations

import argparse
import json

import pytest

from bench import peer
from sfn_idempotency.local import LocalCloud

ROLE = "arn:aws:iam::123456789012:role/peer"
EXPECTED = {
    "ten Pass states": {"order": 1},
    "a Choice loop to 50": {"i": 50},
    "a Map of 100 items": list(range(100)),
}


@pytest.mark.parametrize("workload", peer.WORKLOADS, ids=lambda workload: workload.name)
def test_each_workload_answers_what_its_asl_says(local_cloud: LocalCloud, workload: peer.Workload):
    # Given the workload's machine, When it runs on the engine
    machine = local_cloud.sfn.create_state_machine(
        name=f"peer-{peer.WORKLOADS.index(workload)}",
        definition=json.dumps(workload.definition),
        roleArn=ROLE,
    )["stateMachineArn"]
    result = local_cloud.run(machine, workload.execution_input)
    # Then it answers what the definition computes
    assert (result.status, result.output) == ("SUCCEEDED", EXPECTED[workload.name])


class Named:
    def __init__(self, name: str) -> None:
        self.name = name


def test_an_engine_that_answers_otherwise_fails_the_comparison():
    workload = peer.WORKLOADS[1]
    engines = [Named("ours"), Named("other")]
    peer._same_everywhere(workload, engines, [{"i": 50}, {"i": 50}])
    with pytest.raises(
        RuntimeError, match=r"a Choice loop to 50: other answered \{'i': 49\}, ours \{'i': 50\}"
    ):
        peer._same_everywhere(workload, engines, [{"i": 50}, {"i": 49}])


def test_figures_and_endpoints():
    figures = peer.Figures(seconds=[0.010] * 19 + [0.100])
    assert figures.median_ms == pytest.approx(10.0)
    assert figures.p95_ms == pytest.approx(100.0)
    assert peer.named_endpoint("localstack=http://127.0.0.1:4566") == ("localstack", "http://127.0.0.1:4566")
    with pytest.raises(argparse.ArgumentTypeError, match="NAME=http://host:port"):
        peer.named_endpoint("127.0.0.1:4566")
