"""``sfn-idempotency check`` (issue 41): the explorer on the example app and on an ASL file the user
names; its answer as text, JSON and an image; a counterexample replayed from its token; bad input
as one line and exit 2."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest

from sfn_idempotency.cli import build_parser, main
from sfn_idempotency.flow.resources import COMPUTE_KEY_HANDLER
from sfn_idempotency.testing import ExplorationTarget
from sfn_idempotency.wrap import step_settings, wrap_state
from tests import REPOSITORY_ROOT
from tests.local.test_cdk_out import write_app as write_cdk_app

CHECKOUT = REPOSITORY_ROOT / "tests" / "apps" / "checkout"
ORDER = '{"orderId": "o-7", "amount": 12}'
EXIT_VIOLATION, EXIT_BAD_INPUT = 1, 2


def checkout_file(folder: Path, idempotent_state: str) -> Path:
    """The user's checkout ASL with one Task wrapped, as `sfn-idempotency wrap` writes it."""
    wrapped = wrap_state(
        (CHECKOUT / "checkout.asl.json").read_text(encoding="utf-8"),
        idempotent_state,
        key_prefix="checkout",
        event_key_jmespath="orderId",
    )
    path = folder / f"checkout-{idempotent_state.lower()}.asl.json"
    path.write_text(wrapped, encoding="utf-8")
    return path


def check(*arguments: str) -> list[str]:
    return [
        "check",
        *arguments,
        "--function",
        "Reserve=handlers.reserve",
        "--function",
        "Pay=handlers.pay",
        "--code-dir",
        str(CHECKOUT),
        "--watch",
        "Pay",
        "--request",
        ORDER,
        "--key",
        "orderId",
    ]


def test_check_passes_the_example_app(capsys: pytest.CaptureFixture[str]):
    # When the example app is checked, Then it passes, saying how many schedules ran and what they held
    assert main(["check", "--schedules", "30"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("idempotency: PASSED, 30 schedules")
    assert "Covered: " in out
    assert "duplicate" in out


def test_check_finds_a_payment_outside_the_idempotent_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # Given the user's checkout whose idempotent step is Reserve, not Pay
    definition = checkout_file(tmp_path, "Reserve")
    image = tmp_path / "timeline.svg"

    # When it is checked
    code = main(check(str(definition), "--svg", str(image)))

    # Then it fails with the shortest counterexample, its timeline as an image, and a replay token
    out = capsys.readouterr().out
    assert code == EXIT_VIOLATION
    assert "VIOLATED ran again after its record was COMPLETED: Pay run 2 (P1)" in out
    assert image.read_text(encoding="utf-8").startswith("<svg")
    token = out.rsplit("Replay: ", 1)[1].strip()

    # And the token replays that schedule exactly, answered as JSON
    assert main([*check(str(definition), "--replay", token), "--json"]) == EXIT_VIOLATION
    answer = json.loads(capsys.readouterr().out)
    assert answer["schedules"] == 1
    assert answer["counterexample"]["replay"] == token
    assert (
        answer["counterexample"]["violations"][0]["invariant"] == "ran again after its record was COMPLETED"
    )


def test_check_passes_the_checkout_whose_payment_is_the_idempotent_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # Given the user's checkout whose idempotent step is Pay
    definition = checkout_file(tmp_path, "Pay")
    # When it is checked, Then every schedule kept the payment to one
    assert main(check(str(definition), "--schedules", "40")) == 0
    assert "PASSED, 40 schedules" in capsys.readouterr().out


def test_check_gives_the_watched_functions_results_at_the_size_limit_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # Given a Charge Task made idempotent inline, which calls the payment function Pay
    (tmp_path / "cards.py").write_text(
        "def pay(event, context):\n    return {'paid': True}\n", encoding="utf-8"
    )
    charge = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": "${Pay}", "Payload.$": "$"},
        "OutputPath": "$.Payload",
        "End": True,
    }
    definition = tmp_path / "charge.asl.json"
    wrapped = wrap_state(
        json.dumps({"StartAt": "Charge", "States": {"Charge": charge}}),
        "Charge",
        key_prefix="charge",
        event_key_jmespath="orderId",
    )
    definition.write_text(wrapped, encoding="utf-8")
    base = ["check", str(definition), "--function", "Pay=cards.pay", "--code-dir", str(tmp_path)]
    base += ["--request", ORDER, "--key", "orderId", "--schedules", "40", "--json"]

    # When it is checked without --large-results, Then the payment answers only its own results
    assert main(base) == 0
    assert not any("answered" in name for name in json.loads(capsys.readouterr().out)["covered"])

    # When it is checked with --large-results, Then it answered 250 KB and 300 KB too, and every
    # schedule still kept the payment to one run
    assert main([*base, "--large-results"]) == 0
    covered = json.loads(capsys.readouterr().out)["covered"]
    assert covered["fault: answered 250 KB"] > 0
    assert covered["fault: answered 300 KB"] > 0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--request", "{not json"], "--request is not JSON"),
        (["--replay", "nonsense"], "a replay token begins with 'sfnx1.'"),
        (["--watch", "Refund"], "--watch Refund: neither a --function nor a state of this definition"),
        (["--function", "Reserve=handlers.missing"], "function Reserve: cannot load handlers.missing"),
    ],
)
def test_check_refuses_bad_input_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
):
    definition = checkout_file(tmp_path, "Pay")
    assert main([*check(str(definition)), *arguments]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_check_names_a_placeholder_nobody_filled(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    # Given a definition whose payment function was not named
    definition = checkout_file(tmp_path, "Pay")
    # When it is checked with the reservation function only, Then it says which placeholder is empty
    code = main(
        [
            "check",
            str(definition),
            "--function",
            "Reserve=handlers.reserve",
            "--code-dir",
            str(CHECKOUT),
            "--request",
            ORDER,
        ]
    )
    assert code == EXIT_BAD_INPUT
    assert "no value for ${PayFunctionArn}: add --sub NAME=VALUE" in capsys.readouterr().err


# -- an app, as deployed from its template ---------------------------------------------------------
APP_TEMPLATE = """\
AWSTemplateFormatVersion: '2010-09-09'
Transform: AWS::Serverless-2016-10-31
Resources:
  Orders:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionUri: statemachine/orders.asl.json
      DefinitionSubstitutions:
        ChargeArn: !GetAtt Charge.Arn
      Policies: []
  Charge:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: charge/
      Handler: index.handler
      Runtime: nodejs24.x
"""
APP_DEFINITION = {
    "StartAt": "Charge",
    "States": {
        "Charge": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "${ChargeArn}", "Payload.$": "$"},
            "OutputPath": "$.Payload",
            "Next": "Done",
        },
        "Done": {"Type": "Succeed"},
    },
}


def write_app(folder: Path, template: str = APP_TEMPLATE) -> Path:
    (folder / "statemachine").mkdir(parents=True)
    (folder / "charge").mkdir()
    (folder / "template.yaml").write_text(template)
    (folder / "statemachine" / "orders.asl.json").write_text(json.dumps(APP_DEFINITION))
    (folder / "charge" / "index.js").write_text(
        "exports.handler = async (event) => ({ charged: event.orderId });\n"
    )
    return folder


def test_check_explores_an_app_s_state_machine_and_its_node_function(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # Given a SAM app whose workflow charges through a Node.js function, with no idempotency
    app = write_app(tmp_path / "shop")
    # When it is checked from its template, the function watched by its logical id
    code = main(
        ["check", "--template", str(app), "--watch", "Charge", "--request", ORDER, "--schedules", "10"]
    )
    # Then the deployed function's second run is found
    out = capsys.readouterr().out
    assert code == EXIT_VIOLATION
    assert "VIOLATED two runs took effect: shop-Charge-" in out


def test_check_of_an_app_watches_the_functions_its_machine_calls_and_names_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # Given the app with a second state machine
    second = APP_TEMPLATE.replace(
        "  Charge:\n",
        "  Audit:\n    Type: AWS::Serverless::StateMachine\n    Properties:\n      Definition: {StartAt: Done, States: {Done: {Type: Succeed}}}\n      Policies: []\n  Charge:\n",
        1,
    )
    app = write_app(tmp_path / "shop", second)
    # When it is checked without saying which machine, then the refusal lists them
    assert main(["check", "--template", str(app), "--request", ORDER]) == EXIT_BAD_INPUT
    refusal = capsys.readouterr().err
    assert "the app has 2 state machines: name one with --state-machine (" in refusal
    # And each name it lists is taken (a SAM app's: the stack's name, a slash, the logical id)
    (listed,) = re.findall(r"[\w-]+/Orders", refusal)
    assert main(
        ["check", "--template", str(app), "--state-machine", listed, "--request", ORDER, "--schedules", "1"]
    ) == (EXIT_VIOLATION)
    capsys.readouterr()
    # And with the machine named and nothing watched, the function it calls is watched
    code = main(
        ["check", "--template", str(app), "--state-machine", "Orders", "--request", ORDER, "--schedules", "5"]
    )
    assert code == EXIT_VIOLATION
    assert "two runs took effect: shop-Charge-" in capsys.readouterr().out
    # And a --watch that names nothing of the app is one line
    assert (
        main(
            [
                "check",
                "--template",
                str(app),
                "--state-machine",
                "Orders",
                "--watch",
                "Nope",
                "--request",
                ORDER,
            ]
        )
        == EXIT_BAD_INPUT
    )
    assert (
        "--watch Nope: neither a function of the app nor a state of its state machine"
        in capsys.readouterr().err
    )


def test_check_of_an_app_never_watches_the_library_s_own_key_lambda_unless_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # Given an app whose machine calls only sfn-idempotency's key Lambda (its handler), no side effect
    keys_only = APP_TEMPLATE.replace(
        "      Handler: index.handler\n      Runtime: nodejs24.x\n",
        f"      Handler: {COMPUTE_KEY_HANDLER}\n      Runtime: python3.13\n",
    )
    app = write_app(tmp_path / "shop", keys_only)
    # When it is checked without --watch, then nothing is watched: the refusal asks for a side effect
    # (a replay may run the key Lambda again by design; before, its second run was the violation)
    assert main(["check", "--template", str(app), "--request", ORDER]) == EXIT_BAD_INPUT
    assert "calls none of the app's functions: name a side effect with --watch" in capsys.readouterr().err


def test_check_explores_a_cdk_app_s_state_machine_from_its_cloud_assembly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # Given a synthesized CDK app (a Python function from an asset, a table, a machine calling both)
    assembly = write_cdk_app(tmp_path / "cdk.out")
    # When it is checked from its cloud assembly, its machine named by its construct path with the
    # stack (as the refusal lists a CDK app's machines) and its function by its path below the stack
    code = main(
        [
            "check",
            "--cdk-out",
            str(assembly),
            "--state-machine",
            "Shop/Checkout",
            "--watch",
            "Charge",
            "--request",
            '{"amount": 3}',
            "--schedules",
            "5",
        ]
    )
    # Then the function's second run is found
    assert code == EXIT_VIOLATION
    assert "two runs took effect: Shop-Charge" in capsys.readouterr().out


# -- the CLI and the Python API are one surface (issue 53) ----------------------------------------
EXAMPLE_PROJECT = REPOSITORY_ROOT / "examples" / "my_project"


def test_a_marker_guarded_workflow_checks_clean_from_the_cli_with_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # Given the guide's checkout wrapped from the command line with a replay marker (a replay says
    # "chargeReplay": true, a first run false: whole outputs of duplicates differ by design)
    wrapped = tmp_path / "checkout.wrapped.asl.json"
    assert (
        main(
            [
                "wrap",
                str(EXAMPLE_PROJECT / "statemachines" / "checkout.asl.json"),
                "--state",
                "Charge",
                "--key-prefix",
                "checkout",
                "--event-key-jmespath",
                "paymentId",
                "--replay-marker",
                "$.chargeReplay",
            ]
        )
        == 0
    )
    wrapped.write_text(capsys.readouterr().out, encoding="utf-8")
    assert "chargeReplay" in wrapped.read_text(encoding="utf-8")
    base = [
        "check",
        str(wrapped),
        "--function",
        "Charge=charge.handler.handler",
        "--function",
        "Receipt=receipt.handler.handler",
        "--code-dir",
        str(EXAMPLE_PROJECT / "functions"),
        "--request",
        '{"paymentId": "p-9", "amount": 25}',
        "--key",
        "paymentId",
        "--schedules",
        "20",
    ]
    # When it is checked comparing whole outputs, then the marker itself is flagged
    assert main(base) == EXIT_VIOLATION
    assert "duplicates got different answers" in capsys.readouterr().out
    # And when duplicates need agree only on the charge (a JSONPath, or the same as a JMESPath), it passes
    assert main([*base, "--answer", "$.charged"]) == 0
    assert "PASSED, 20 schedules" in capsys.readouterr().out
    assert main([*base, "--answer", "charged"]) == 0
    capsys.readouterr()


def pay_definition(folder: Path) -> Path:
    """A definition of one Task, Pay, the function ``--function Pay=…`` names."""
    definition = folder / "pay.asl.json"
    definition.write_text(
        json.dumps(
            {"StartAt": "Pay", "States": {"Pay": {"Type": "Task", "Resource": "${Pay}", "End": True}}}
        ),
        encoding="utf-8",
    )
    return definition


@pytest.mark.parametrize("as_json", [True, False])
def test_check_s_stdout_is_the_report_alone_when_a_handler_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], as_json: bool
):
    # Given a payment handler that prints, as handlers log
    (tmp_path / "noisy.py").write_text(
        "def pay(event, context):\n    print('charging', event)\n    return {'paid': True}\n",
        encoding="utf-8",
    )
    definition = pay_definition(tmp_path)
    # When it is checked, as text or with --json
    code = main(
        [
            "check",
            str(definition),
            "--function",
            "Pay=noisy.pay",
            "--code-dir",
            str(tmp_path),
            "--request",
            ORDER,
            "--schedules",
            "3",
            *(["--json"] if as_json else []),
        ]
    )
    # Then stdout is the report (it parses as JSON when asked), and what the handler printed is on
    # stderr: `check > report.txt` keeps the report alone
    captured = capsys.readouterr()
    assert code == EXIT_VIOLATION
    if as_json:
        assert json.loads(captured.out)["counterexample"] is not None
    else:
        assert captured.out.startswith("pay-asl: FAILED"), captured.out
    assert "charging" in captured.err
    assert "charging" not in captured.out


def test_wrap_takes_every_option_wrap_state_takes(capsys: pytest.CaptureFixture[str]):
    # wrap_state's replay hook and waiting options, from the command line
    code = main(
        [
            "wrap",
            str(EXAMPLE_PROJECT / "statemachines" / "checkout.asl.json"),
            "--state",
            "Charge",
            "--key-prefix",
            "checkout",
            "--replay-hook",
            '{"replayed": true, "charge.$": "$.output"}',
            "--wait-for-in-progress",
            "--max-wait-seconds",
            "30",
        ]
    )
    wrapped = capsys.readouterr().out
    assert code == 0
    expected = wrap_state(
        (EXAMPLE_PROJECT / "statemachines" / "checkout.asl.json").read_text(encoding="utf-8"),
        "Charge",
        key_prefix="checkout",
        replay_hook={"replayed": True, "charge.$": "$.output"},
        wait_for_in_progress=True,
        max_wait_seconds=30,
    )
    assert json.loads(wrapped) == json.loads(expected)


def test_check_makes_the_tables_a_workflow_writes_to_and_does_not_read_them_as_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # Given a user's own lock workflow: a conditional put into ${LockTable}, keyed by id (as
    # idempotency records are), then the payment; a duplicate finds the lock and skips the payment
    (tmp_path / "locking.py").write_text(
        "def pay(event, context):\n    return {'paid': True}\n", encoding="utf-8"
    )
    lock = {
        "Type": "Task",
        "Resource": "arn:aws:states:::dynamodb:putItem",
        "Parameters": {
            "TableName": "${LockTable}",
            "Item": {"id": {"S.$": "$.orderId"}},
            "ConditionExpression": "attribute_not_exists(id)",
        },
        "ResultPath": None,
        "Catch": [
            {"ErrorEquals": ["DynamoDB.ConditionalCheckFailedException"], "ResultPath": None, "Next": "Done"}
        ],
        "Next": "Pay",
    }
    definition = tmp_path / "locked.asl.json"
    definition.write_text(
        json.dumps(
            {
                "StartAt": "Lock",
                "States": {
                    "Lock": lock,
                    "Pay": {"Type": "Task", "Resource": "${Pay}", "ResultPath": None, "Next": "Done"},
                    "Done": {"Type": "Succeed"},
                },
            }
        ),
        encoding="utf-8",
    )
    base = ["check", str(definition), "--function", "Pay=locking.pay", "--code-dir", str(tmp_path)]
    base += ["--request", ORDER, "--key", "orderId", "--schedules", "20"]
    # When it is checked without the table, then the refusal says how to make it
    assert main(base) == EXIT_BAD_INPUT
    assert "no value for ${LockTable}: add --sub NAME=VALUE, or --table NAME=KEY" in capsys.readouterr().err
    # And with it, the lock does its work: the table exists, and its items are no idempotency records
    # (a lock held by an ended execution is not "a key stuck")
    code = main([*base, "--table", "LockTable=id"])
    out = capsys.readouterr().out
    assert "ResourceNotFoundException" not in out
    assert "stuck" not in out
    assert code == 0, out


def test_check_takes_the_errors_a_client_may_retry_and_the_records_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # Given a payment that declines every card (an error the user's client retries later)
    (tmp_path / "cards.py").write_text(
        "class CardDeclined(Exception):\n    pass\n\n"
        "def pay(event, context):\n    raise CardDeclined('declined')\n",
        encoding="utf-8",
    )
    definition = pay_definition(tmp_path)
    base = ["check", str(definition), "--function", "Pay=cards.pay", "--code-dir", str(tmp_path)]
    base += ["--request", ORDER, "--key", "orderId", "--schedules", "5"]
    unsafe = "an error that is not safe to retry: E1 failed with CardDeclined"
    # When it is checked, the decline is an unsafe error; named as one a client may retry, it is not
    main(base)
    assert unsafe in capsys.readouterr().out
    main([*base, "--safe-error", "CardDeclined", "--table", "Ledger=id", "--records-table", "Ledger"])
    assert "not safe to retry" not in capsys.readouterr().out
    # And a records table that does not exist is one line
    assert main([*base, "--records-table", "none-here"]) == EXIT_BAD_INPUT
    assert "--records-table none-here: no such table" in capsys.readouterr().err


def test_check_takes_invariants_of_the_users_own_and_requests_delivered_by_eventbridge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # Given a payment workflow started by an EventBridge rule (it reads the order from the event's
    # detail), and an invariant of the user's own: one execution per order at most
    (tmp_path / "cards.py").write_text(
        "def pay(event, context):\n    return {'paid': True}\n", encoding="utf-8"
    )
    (tmp_path / "rules.py").write_text(
        "def one_execution(outcome):\n"
        "    assert len(outcome.executions) <= 1, f'{len(outcome.executions)} executions'\n",
        encoding="utf-8",
    )
    workflow = {
        "StartAt": "Order",
        "States": {
            "Order": {"Type": "Pass", "Parameters": {"orderId.$": "$.detail.orderId"}, "Next": "Pay"},
            "Pay": {"Type": "Task", "Resource": "${Pay}", "End": True},
        },
    }
    definition = tmp_path / "pay.asl.json"
    definition.write_text(json.dumps(workflow), encoding="utf-8")
    base = ["check", str(definition), "--function", "Pay=cards.pay", "--code-dir", str(tmp_path)]
    base += ["--request", ORDER, "--key", "orderId", "--schedules", "3", "--json"]

    # When it is checked with its requests delivered as events and the user's invariant
    code = main([*base, "--via-eventbridge", "orders", "OrderPlaced", "--invariant", "rules.one_execution"])

    # Then executions start from the rule (no States.Runtime on $.detail), and the invariant is checked
    report = json.loads(capsys.readouterr().out)
    assert code == EXIT_VIOLATION
    violations = report["counterexample"]["violations"]
    assert {"invariant": "your invariant", "message": "one_execution: 2 executions"} in violations
    assert not any("States.Runtime" in v["message"] for v in violations)
    starts = [m["action"] for m in report["counterexample"]["timeline"] if " starts" in m["action"]]
    assert starts
    assert all("delivered by EventBridge (orders OrderPlaced)" in start for start in starts)
    # And an invariant that cannot be loaded is one line
    assert main([*base, "--invariant", "rules.absent"]) == EXIT_BAD_INPUT
    assert "--invariant rules.absent: cannot load it" in capsys.readouterr().err


class _Explored(Exception):
    """Raised in place of the exploration, with the target the command built."""


def test_check_names_an_apps_helper_workflows_or_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    # Given an app with two state machines beside the one checked
    machines = "".join(
        f"  {name}:\n    Type: AWS::Serverless::StateMachine\n    Properties:\n"
        "      Definition: {StartAt: Done, States: {Done: {Type: Succeed}}}\n      Policies: []\n"
        for name in ("Release", "Audit")
    )
    app = write_app(tmp_path / "shop", APP_TEMPLATE.replace("  Charge:\n", machines + "  Charge:\n", 1))
    helpers_of: dict[str, list[str]] = {}

    def explore(target: Any, **_: Any) -> None:
        raise _Explored(sorted(arn.rsplit(":", 1)[-1] for arn in target.helper_machines()))

    monkeypatch.setattr("sfn_idempotency.local.explorer.command.explore", explore)
    base = ["check", "--template", str(app), "--state-machine", "Orders", "--request", ORDER]
    for name, flags in {"default": [], "named": ["--helper", "Release"], "none": ["--no-helpers"]}.items():
        # When it is checked with each choice of helpers
        with pytest.raises(_Explored) as explored:
            main([*base, *flags])
        named = explored.value.args[0]
        helpers_of[name] = [
            logical_id for logical_id in ("Audit", "Release") if any(logical_id in m for m in named)
        ]
        assert len(named) == len(helpers_of[name])

    # Then the explorer is given every other machine, the one named, or none
    assert helpers_of == {"default": ["Audit", "Release"], "named": ["Release"], "none": []}
    # And a definition has no helper to name
    definition = tmp_path / "one.asl.json"
    definition.write_text(json.dumps(APP_DEFINITION), encoding="utf-8")
    assert (
        main(["check", str(definition), "--function", "Charge=x.y", "--request", ORDER, "--helper", "X"])
        == EXIT_BAD_INPUT
    )
    assert "--helper names a state machine of an app" in capsys.readouterr().err


# One surface (issue 53): each option of ExplorationTarget and wrap_state, and its flag.
TARGET_FLAGS = {
    "requests": "--request",
    "watch": "--watch",
    "key": "--key",
    "tables": "--records-table",
    "helpers": "--helper",
    "safe_errors": "--safe-error",
    "answer": "--answer",
    "invariants": "--invariant",
    "via": "--via-eventbridge",
    "large_results": "--large-results",
}
WRAP_FLAGS = {
    "key_prefix": "--key-prefix",
    "event_key_jmespath": "--event-key-jmespath",
    "payload_validation_jmespath": "--payload-validation-jmespath",
    "expires_after_seconds": "--expires-after",
    "hash_function": "--hash-function",
    "raise_on_no_key": "--raise-on-no-key",
    "disabled": "--disabled",
    "timeout_seconds": "--timeout",
    "wait_for_in_progress": "--wait-for-in-progress",
    "max_wait_seconds": "--max-wait-seconds",
    "replay_marker": "--replay-marker",
    "replay_hook": "--replay-hook",
    "result_variable": "--result-variable",
    "express": "--express",
}


def test_every_option_of_the_python_api_has_its_flag(capsys: pytest.CaptureFixture[str]):
    # Given the options the Python API takes (the target's machine and cloud are what check deploys;
    # a wrapped step's query language is its definition's)
    target_options = {field.name for field in dataclasses.fields(ExplorationTarget)} - {
        "cloud",
        "state_machine_arn",
    }
    wrap_options = set(inspect.signature(step_settings).parameters) - {"task", "state_name", "query_language"}
    assert set(TARGET_FLAGS) == target_options
    assert set(WRAP_FLAGS) == wrap_options
    # (and their docstrings, which the API reference shows, name each)
    assert all(f"``{option}``" in (ExplorationTarget.__doc__ or "") for option in target_options)
    assert all(f"``{option}``" in (wrap_state.__doc__ or "") for option in wrap_options)
    for command, flags in (("check", TARGET_FLAGS), ("wrap", WRAP_FLAGS)):
        # When the command's help is asked for, then it lists a flag for each
        with pytest.raises(SystemExit):
            main([command, "--help"])
        listed = set(re.findall(r"--[a-z-]+", capsys.readouterr().out))
        assert set(flags.values()) <= listed, sorted(set(flags.values()) - listed)


def test_every_command_s_help_is_written(capsys: pytest.CaptureFixture[str]):
    # (wrap's help once raised: a '%' in it was read as a format)
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    for command in commands:
        with pytest.raises(SystemExit) as exited:
            main([command, "--help"])
        assert exited.value.code == 0
        assert capsys.readouterr().out.startswith(f"usage: sfn-idempotency {command}")
