"""Extras that do not cross: [cdk] brings no moto, [local] no aws-cdk-lib, and the base install
says which extra to add instead of failing with a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.installed.conftest import (
    UV,
    Distributions,
    UserEnvironment,
    install,
    make_venv,
    run,
    site_packages,
)


def resolved(requirement: str, cwd: Path) -> set[str]:
    """The distributions an install of ``requirement`` into an empty environment brings (uv's
    resolution, for this Python: what pip would install, without installing it)."""
    report = run(
        [
            str(UV),
            "pip",
            "compile",
            "--quiet",
            "--no-header",
            "--no-annotate",
            "--python",
            sys.executable,
            "-",
        ],
        cwd=cwd,
        input_text=requirement,
    )
    return {
        line.split("==")[0].split(" @ ")[0].strip().lower() for line in report.stdout.splitlines() if line
    }


def test_the_cdk_extra_does_not_pull_moto(dists: Distributions) -> None:
    names = resolved(f"sfn-idempotency[cdk] @ {dists.wheel.as_uri()}", dists.folder)
    assert {"aws-cdk-lib", "constructs"} <= names
    assert "moto" not in names


def test_the_local_extra_does_not_pull_aws_cdk_lib(dists: Distributions) -> None:
    names = resolved(f"sfn-idempotency[local] @ {dists.wheel.as_uri()}", dists.folder)
    assert "moto" in names
    assert not names & {"aws-cdk-lib", "constructs"}


@pytest.fixture(scope="module")
def base_env(dists: Distributions, tmp_path_factory: pytest.TempPathFactory) -> UserEnvironment:
    """The wheel without extras (and pytest, whose plugin loader must survive that)."""
    root = tmp_path_factory.mktemp("base-venv")
    make_venv(root)
    install(root, str(dists.wheel), "pytest")
    project = tmp_path_factory.mktemp("base-project")
    return UserEnvironment(root=root, project=project, added_to_site_packages=frozenset(site_packages(root)))


def test_the_base_install_has_neither_extra(base_env: UserEnvironment) -> None:
    assert not {"moto", "aws_cdk"} & base_env.added_to_site_packages


def test_a_command_that_needs_local_says_which_extra_to_install(base_env: UserEnvironment) -> None:
    result = base_env.run([str(base_env.bin / "sfn-idempotency"), "demo"], check=False)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr  # one line, no traceback
    assert "pip install 'sfn-idempotency[local]'" in result.stderr


def test_importing_the_constructs_names_the_cdk_extra(base_env: UserEnvironment) -> None:
    result = base_env.run(
        [
            base_env.python,
            "-c",
            "try:\n import sfn_idempotency.cdk\nexcept ImportError as e:\n print(type(e).__name__, e, sep=': ')",
        ]
    )
    assert result.stdout.strip() == (
        "MissingExtraError: sfn_idempotency.cdk needs the [cdk] extra (aws_cdk, constructs not installed): "
        "pip install 'sfn-idempotency[cdk]'"
    )


def test_the_fixtures_name_the_local_extra_and_pytest_still_runs(base_env: UserEnvironment) -> None:
    # Given a test that uses local_cloud, in a project without the [local] extra
    (base_env.project / "test_uses_engine.py").write_text("def test_engine(local_cloud):\n    pass\n")
    (base_env.project / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    # When pytest runs (the plugin is loaded from the installed entry point)
    result = base_env.run([base_env.python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], check=False)
    # Then the plain test passes and the fixture's error names the extra
    assert "1 passed, 1 error" in result.stdout, result.stdout
    assert "pip install 'sfn-idempotency[local]'" in result.stdout


def test_graph_works_on_the_base_install(base_env: UserEnvironment) -> None:
    graph = base_env.run([str(base_env.bin / "sfn-idempotency"), "graph"])
    assert graph.stdout.startswith("stateDiagram-v2")
