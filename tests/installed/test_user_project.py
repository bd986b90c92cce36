"""A user's project, outside the checkout, with the wheel installed: their CDK app, their tests,
the console script. Nothing here can import the repository's files."""

from __future__ import annotations

import json
import signal
import urllib.request
from pathlib import Path

from tests import REPOSITORY_ROOT
from tests.installed.conftest import COMMAND_DEADLINE_SECONDS, UserEnvironment
from tests.servers import free_port, read_ready_line


def test_site_packages_gains_only_sfn_idempotency(user_env: UserEnvironment) -> None:
    assert user_env.added_to_site_packages == {"sfn_idempotency", "sfn_idempotency-0.2.0.dist-info"}


def test_the_package_comes_from_the_virtual_environment(user_env: UserEnvironment) -> None:
    # When the user's Python imports the package and its ASL
    result = user_env.run(
        [
            user_env.python,
            "-c",
            "import sfn_idempotency, sfn_idempotency.flow.resources as r; print(sfn_idempotency.__file__); print(r.IDEMPOTENCY_ASL)",
        ]
    )
    # Then both live in the virtual environment, not in the checkout
    for line in result.stdout.splitlines():
        assert Path(line).is_relative_to(user_env.root), line
        assert not Path(line).is_relative_to(REPOSITORY_ROOT), line


def test_the_console_script_prints_the_version(user_env: UserEnvironment) -> None:
    result = user_env.run([str(user_env.bin / "sfn-idempotency"), "--version"])
    assert result.stdout.strip() == "sfn-idempotency 0.2.0"


def test_the_users_cdk_app_synthesizes_with_the_key_lambda_asset(cdk_out: Path) -> None:
    # Given the user's app (IdempotentWorkflow around their own Lambda), synthesized with no
    # credentials and no Docker
    outdir = cdk_out
    # Then the key Lambda's asset is the installed compute_key package, and nothing else
    template = json.loads((outdir / "MyPayments.template.json").read_text())
    functions = {
        resource["Properties"]["Handler"]: outdir
        / f"asset.{resource['Properties']['Code']['S3Key'].removesuffix('.zip')}"
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
    }
    assert set(functions) == {"compute_key.handler.handler", "charge.handler.handler"}
    key_asset = functions["compute_key.handler.handler"]
    assert (key_asset / "compute_key" / "handler.py").is_file()
    assert sorted(path.name for path in key_asset.iterdir()) == ["compute_key"]
    state_machines = [
        r for r in template["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    assert state_machines, "the workflow's state machine is in the template"
    # And the checkout chain is an Express machine with the Charge step wrapped inline
    (checkout,) = [r for r in state_machines if "Charge.ComputeKey" in json.dumps(r["Properties"])]
    assert checkout["Properties"]["StateMachineType"] == "EXPRESS"


def test_the_users_tests_run_on_the_plugin_fixtures(user_env: UserEnvironment, cdk_out: Path) -> None:
    # Given the user's app synthesized (cdk synth) into the project's cdk.out
    # When the user runs their own pytest suite (local_cloud with their ASL, idempotent_service,
    # and cdk_app: their synthesized app deployed)
    result = user_env.run([user_env.python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], check=False)
    # Then it passes
    assert result.returncode == 0, result.stdout + result.stderr
    assert "12 passed" in result.stdout


def test_demo_runs_from_the_installed_console_script(user_env: UserEnvironment) -> None:
    result = user_env.run([str(user_env.bin / "sfn-idempotency"), "demo"], check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "business step ran 5 times for 7 executions" in result.stdout


def test_serve_answers_a_request_and_stops_on_sigterm(user_env: UserEnvironment) -> None:
    # Given `sfn-idempotency serve` from the installed script
    port = free_port()
    server = user_env.serve(port)
    try:
        ready = read_ready_line(server, deadline=COMMAND_DEADLINE_SECONDS)
        assert ready["endpoint"] == f"http://127.0.0.1:{port}"
        # When one execution is started through it
        started = user_env.run(
            [
                str(user_env.bin / "sfn-idempotency"),
                "start",
                "--endpoint-url",
                ready["endpoint"],
                "--input",
                '{"orderId": "o-1", "amount": 5}',
            ],
        )
        assert json.loads(started.stdout)["status"] == "PLACED"
        # And the console's page and graph library come from the installed package
        for path in ("/", "/console/app.mjs", "/console/vendor/dagre.min.js"):
            with urllib.request.urlopen(f"{ready['console'].rstrip('/')}{path}", timeout=10) as answer:
                assert answer.status == 200
    finally:
        server.send_signal(signal.SIGTERM)
        _, stderr = server.communicate(timeout=COMMAND_DEADLINE_SECONDS)
    # Then it stopped cleanly
    assert server.returncode == 0, stderr
    assert "stopped" in stderr
