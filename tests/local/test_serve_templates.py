"""`serve --template` (issue 40): a SAM app instead of the example's workflows, with its parameters,
a mock file whose test cases name the machine, its outputs in the ready line, and a re-deploy on
SIGHUP and on --watch."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.local.test_sam_templates import APP, ORDER
from tests.local.test_serve_cdk_out import STOP_DEADLINE_SECONDS, StderrLines, run, stepfunctions
from tests.servers import read_ready_line, start_server

Served = tuple[subprocess.Popen[str], dict[str, Any], StderrLines, Path]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    # Given a copy of the SAM app (the test edits it), served with a parameter, its machine named for
    # the mock file's test cases, and --watch
    app = tmp_path_factory.mktemp("served") / "sam-orders"
    shutil.copytree(APP, app)
    process = start_server(
        "--template",
        str(app),
        "--parameter-overrides",
        "Stage=served",
        "--state-machine-name",
        "OrderStateMachine=Orders",
        "--mock-config",
        str(app / "MockConfigFile.json"),
        "--watch",
    )
    ready = read_ready_line(process)
    stderr = StderrLines(process)
    yield process, ready, stderr, app
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=STOP_DEADLINE_SECONDS)


def test_the_ready_line_has_the_stacks_outputs(served: Served):
    _, ready, _, app = served
    stack = ready["stacks"]["sam-orders"]
    assert ready["templates"] == [str(app / "template.yaml")]
    assert stack["outputs"]["OrderStateMachineArn"].endswith(":stateMachine:Orders")
    assert set(stack["apiEndpoints"]) == {"ServerlessRestApi/Prod", "ServerlessRestApi/Stage"}


def test_node_and_python_functions_run_unmocked_with_the_overridden_parameter(served: Served):
    _, ready, stderr, _ = served
    client = stepfunctions(ready)
    described = run(client, ready["stacks"]["sam-orders"]["outputs"]["OrderStateMachineArn"], ORDER)
    assert described["status"] == "SUCCEEDED", (described.get("error"), described.get("cause"))
    output = json.loads(described["output"])
    assert (output["stage"], output["total"], output["recorded"]) == ("served", 6, True)
    # And the function declared for Node.js 22 said, in one line, which Node ran it
    stderr.wait_for("declares nodejs22.x; it runs on the engine's Node, v24")


def test_a_mock_file_test_case_runs_against_the_named_machine(served: Served):
    _, ready, _, _ = served
    machine = ready["stacks"]["sam-orders"]["outputs"]["OrderStateMachineArn"]
    described = run(stepfunctions(ready), f"{machine}#PricedByMock", ORDER)
    assert described["status"] == "SUCCEEDED", (described.get("error"), described.get("cause"))
    assert json.loads(described["output"])["total"] == 1


def test_an_edited_template_is_deployed_again_and_sighup_does_it_on_request(served: Served):
    process, ready, stderr, app = served
    # When the template is edited (its functions' memory) while serve watches it
    mark = len(stderr.lines)
    template = app / "template.yaml"
    template.write_text(template.read_text().replace("MemorySize: 256", "MemorySize: 1024"))
    stderr.wait_for("updated stack sam-orders", after=mark)
    described = run(
        stepfunctions(ready), ready["stacks"]["sam-orders"]["outputs"]["OrderStateMachineArn"], ORDER
    )
    assert json.loads(described["output"])["memory"] == "1024"
    # And SIGHUP deploys again on request
    mark = len(stderr.lines)
    process.send_signal(signal.SIGHUP)
    stderr.wait_for("updated stack sam-orders", after=mark)
