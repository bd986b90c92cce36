"""The exactly-once explorer from the installed wheel (issue 41): ``sfn-idempotency check`` on the
example app and on an ASL file the user names, a counterexample replayed from its token, and the
known-bad workflows and the flow's forms explored with nothing from the checkout but the workflows
themselves (copied next to the user's project)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests import REPOSITORY_ROOT
from tests.installed.conftest import UserEnvironment
from tests.local.exactly_once import forms as flow_forms
from tests.local.exactly_once import known_bad

WORKFLOWS = REPOSITORY_ROOT / "tests" / "local" / "exactly_once"
CHECKOUT = REPOSITORY_ROOT / "tests" / "apps" / "checkout"
ORDER = '{"orderId": "o-7", "amount": 12}'
EXIT_VIOLATION = 1
# Each form a few schedules from the wheel: that it runs installed is what this tier shows; its
# budget is test_explorer's, in the checkout.
FORM_SCHEDULES = 3
EXPLORE_EVERY_WORKFLOW = """
import json, sys, tempfile
from pathlib import Path
from sfn_idempotency.testing import LocalCloud, explore
from exactly_once import forms, known_bad

for bad in known_bad.KNOWN_BAD:
    with LocalCloud() as cloud, tempfile.TemporaryDirectory() as folder:
        report = explore(bad.build(cloud, Path(folder)))
        broken = sorted({v.invariant for v in report.counterexample.violations}) if report.counterexample else []
        print(json.dumps({"bad": bad.name, "expected": bad.broken, "broken": broken,
                          "schedules": report.schedules_to_find, "steps": report.counterexample.steps}))
for form, language in forms.EVERY_FORM:
    with LocalCloud() as cloud:
        report = explore(forms.FORMS[form](cloud, language), schedules_to_run=int(sys.argv[1]))
        print(json.dumps({"form": f"{form} {language}", "passed": report.passed, "schedules": report.schedules}))
"""


def test_check_runs_on_the_example_app_from_the_wheel(user_env: UserEnvironment):
    result = user_env.run([str(user_env.bin / "sfn-idempotency"), "check", "--schedules", "12"])
    assert result.stdout.startswith("idempotency: PASSED, 12 schedules")


def test_check_runs_on_a_users_asl_file_and_replays_its_counterexample(
    user_env: UserEnvironment, tmp_path: Path
):
    # Given the user's checkout, its Reserve step wrapped by the installed `sfn-idempotency wrap`
    app = tmp_path / "checkout"
    shutil.copytree(CHECKOUT, app)
    cli = str(user_env.bin / "sfn-idempotency")
    wrapped = user_env.run(
        [
            cli,
            "wrap",
            str(app / "checkout.asl.json"),
            "--state",
            "Reserve",
            "--key-prefix",
            "checkout",
            "--event-key-jmespath",
            "orderId",
        ]
    )
    definition = app / "checkout.wrapped.asl.json"
    definition.write_text(wrapped.stdout, encoding="utf-8")
    check = [
        cli,
        "check",
        str(definition),
        "--function",
        "Reserve=handlers.reserve",
        "--function",
        "Pay=handlers.pay",
        "--code-dir",
        str(app),
        "--watch",
        "Pay",
        "--request",
        ORDER,
        "--key",
        "orderId",
    ]

    # When it is checked, Then the payment outside the idempotent step is found
    found = user_env.run(check, check=False)
    assert found.returncode == EXIT_VIOLATION, found.stderr
    assert "VIOLATED ran again after its record was COMPLETED" in found.stdout
    token = found.stdout.rsplit("Replay: ", 1)[1].strip()

    # And its token replays it exactly
    replayed = user_env.run([*check, "--replay", token, "--json"], check=False)
    assert replayed.returncode == EXIT_VIOLATION, replayed.stderr
    answer = json.loads(replayed.stdout)
    assert answer["counterexample"]["replay"] == token


def test_the_wheel_finds_every_known_bad_workflow_and_passes_every_form(
    user_env: UserEnvironment, tmp_path: Path
):
    # Given the workflows, next to the user's project (and the checkout app one of them uses)
    shutil.copytree(WORKFLOWS, tmp_path / "workflows" / "exactly_once")
    shutil.copytree(CHECKOUT, tmp_path / "apps" / "checkout")

    # When the installed explorer runs them
    result = user_env.run(
        [user_env.python, "-c", EXPLORE_EVERY_WORKFLOW, str(FORM_SCHEDULES)],
        env_extra={"PYTHONPATH": str(tmp_path / "workflows")},
    )

    # Then each known-bad workflow breaks the invariant it is known for, and every form passes
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    bad = [line for line in lines if "bad" in line]
    assert len(bad) == len(known_bad.KNOWN_BAD)
    assert all(line["expected"] in line["broken"] for line in bad), bad
    forms = [line for line in lines if "form" in line]
    assert len(forms) == len(flow_forms.EVERY_FORM)
    assert all(line["passed"] and line["schedules"] == FORM_SCHEDULES for line in forms), forms
