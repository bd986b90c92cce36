"""The documentation site: it builds with --strict (broken links, missing references and bad
anchors fail), and the Python examples of its pages and the README run as they stand."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import REPOSITORY_ROOT
from tests.docs.examples import examples

BUILD_DEADLINE_SECONDS = 300
EXAMPLES_DEADLINE_SECONDS = 600
USER_PROJECT = REPOSITORY_ROOT / "examples" / "my_project"
# Blocks that are not test modules run as scripts, one pytest item each, in the user project.
SCRIPT_RUNNER = """
import runpy

import pytest


def pytest_collect_file(file_path, parent):
    if file_path.name.startswith("example_") and file_path.suffix == ".py":
        return Script.from_parent(parent, path=file_path)


class Script(pytest.File):
    def collect(self):
        yield Run.from_parent(self, name="runs")


class Run(pytest.Item):
    def runtest(self):
        runpy.run_path(str(self.path), run_name="__main__")
"""


def test_the_site_builds_strict(tmp_path: Path):
    # When mkdocs builds the site with --strict
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
        timeout=BUILD_DEADLINE_SECONDS,
        check=False,
    )

    # Then nothing was broken, and the API reference was generated from the code
    assert built.returncode == 0, built.stderr
    api = (tmp_path / "site" / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    for name in (
        "sfn_idempotency.cdk.IdempotentStep",
        "sfn_idempotency.wrap.wrap_state",
        "sfn_idempotency.testing.LocalCloud.test_state",
    ):
        assert f'id="{name}"' in api, name
    flow = (tmp_path / "site" / "concepts" / "flow" / "index.html").read_text(encoding="utf-8")
    assert '<pre class="mermaid"><code>stateDiagram-v2' in flow
    # rendered by the copy make docs-assets takes from npm, not by a CDN's
    assert (tmp_path / "site" / "javascripts" / "vendor" / "mermaid.min.js").is_file()


def test_every_example_runs_or_says_why_not(tmp_path: Path):
    # Given every Python block of the docs, in a copy of a user's project (its functions/ and
    # statemachines/ are what the examples name)
    project = tmp_path / "project"
    shutil.copytree(USER_PROJECT, project, ignore=shutil.ignore_patterns("tests", "__pycache__"))
    (project / "conftest.py").write_text(SCRIPT_RUNNER, encoding="utf-8")
    runnable = [example for example in examples() if example.not_run_because is None]
    for example in runnable:
        prefix = "test_" if example.is_test_module else "example_"
        (project / f"{prefix}{example.name}.py").write_text(example.code, encoding="utf-8")

    # When pytest runs them all
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=EXAMPLES_DEADLINE_SECONDS,
        check=False,
    )

    # Then each passed, and most examples run (the rest name their reason)
    assert ran.returncode == 0, ran.stdout[-6000:]
    assert len(runnable) >= len(examples()) * 3 // 4


@pytest.mark.parametrize("example", examples(), ids=lambda example: example.name)
def test_an_example_is_python(example):
    # Even an example that cannot run is valid Python
    compile(example.code, example.name, "exec")
