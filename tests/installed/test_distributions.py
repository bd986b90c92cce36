"""The sdist and the wheel: one import package, the data inside it, metadata fit for an index."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from tests import REPOSITORY_ROOT
from tests.installed.conftest import Distributions, run

SHIPPED_DATA = {
    "sfn_idempotency/statemachines/idempotency.asl.json",
    "sfn_idempotency/statemachines/idempotency.jsonata.asl.json",
    "sfn_idempotency/statemachines/order_pipeline_inline.asl.json",
    "sfn_idempotency/statemachines/order_workflow.asl.json",
    "sfn_idempotency/statemachines/sqs_batch.asl.json",
    "sfn_idempotency/statemachines/release_abandoned_claim.asl.json",
    "sfn_idempotency/statemachines/http_orders.asl.json",
    "sfn_idempotency/apis/orders.request.vtl",
    "sfn_idempotency/apis/orders.response.vtl",
    "sfn_idempotency/events/order_placed.pattern.json",
    "sfn_idempotency/events/execution_ended.pattern.json",
    "sfn_idempotency/lambdas/compute_key/handler.py",
    "sfn_idempotency/lambdas/place_order/handler.py",
    # The console, and the graph library the build copies in from npm, with its licences.
    "sfn_idempotency/console/static/index.html",
    "sfn_idempotency/console/static/app.mjs",
    "sfn_idempotency/console/static/style.css",
    "sfn_idempotency/console/static/vendor/dagre.min.js",
    "sfn_idempotency/console/static/vendor/LICENSE.dagre.txt",
    "sfn_idempotency/console/static/vendor/LICENSE.graphlib.txt",
}


def wheel_contents(wheel: Path) -> dict[str, str]:
    """Every member of the wheel and the sha256 of its bytes."""
    with zipfile.ZipFile(wheel) as archive:
        return {name: hashlib.sha256(archive.read(name)).hexdigest() for name in archive.namelist()}


def test_the_wheel_holds_one_import_package_with_its_data(dists: Distributions) -> None:
    # Given the wheel `python -m build` made
    names = set(wheel_contents(dists.wheel))
    # Then every file is under sfn_idempotency/ or its dist-info, the repository's data folders are
    # inside the package, and neither the example app nor the tests are
    top_level = {name.split("/", 1)[0] for name in names}
    assert top_level == {"sfn_idempotency", "sfn_idempotency-0.2.0.dist-info"}
    assert names >= SHIPPED_DATA
    assert not {name for name in names if "/stacks/" in name or "/tests/" in name or "examples" in name}


def test_the_sdist_builds_the_same_wheel(dists: Distributions, tmp_path: Path) -> None:
    # Given a wheel built straight from the tree (the fixture's wheel was built from the sdist)
    run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path), str(REPOSITORY_ROOT)],
        cwd=tmp_path,
    )
    (direct,) = tmp_path.glob("*.whl")
    # Then both hold the same files with the same bytes
    assert wheel_contents(direct) == wheel_contents(dists.wheel)


def test_twine_accepts_both_distributions(dists: Distributions) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dists.wheel), str(dists.sdist)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASSED") == 2


def test_the_metadata_describes_the_project(dists: Distributions) -> None:
    # Given the wheel's METADATA
    with zipfile.ZipFile(dists.wheel) as archive:
        metadata = Parser().parsestr(archive.read("sfn_idempotency-0.2.0.dist-info/METADATA").decode())
    # Then it carries the README, the licence, classifiers, project URLs and the extras
    readme = (REPOSITORY_ROOT / "README.md").read_text(encoding="utf-8")
    assert metadata.get_payload().strip() == readme.strip()
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata["License-Expression"] == "MIT-0"
    assert "Programming Language :: Python :: 3.11" in metadata.get_all("Classifier")
    assert {url.split(",")[0] for url in metadata.get_all("Project-URL")} >= {"Homepage", "Source", "Issues"}
    assert set(metadata.get_all("Provides-Extra")) == {"cdk", "local", "dev"}


def test_a_wheel_built_from_a_clean_tree_carries_the_console(tmp_path: Path) -> None:
    # Given the tracked files alone (a fresh clone: no vendored console files), after npm ci
    tree = tmp_path / "clone"
    tracked = run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPOSITORY_ROOT
    ).stdout.split("\0")
    for name in filter(None, tracked):
        source = REPOSITORY_ROOT / name
        if source.is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, tree / name)
    (tree / "node_modules").symlink_to(REPOSITORY_ROOT / "node_modules")
    assert not (tree / "sfn_idempotency" / "console" / "static" / "vendor" / "dagre.min.js").exists()
    # When `pip wheel .` builds it, with no separate step
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "--wheel-dir",
            str(tmp_path),
            str(tree),
        ],
        cwd=tmp_path,
    )
    # Then the wheel has the console's graph library and licences
    (wheel,) = tmp_path.glob("*.whl")
    assert set(wheel_contents(wheel)) >= SHIPPED_DATA
