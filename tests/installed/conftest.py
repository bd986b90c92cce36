"""The installed tier: build the sdist and the wheel, install the wheel into fresh virtual
environments outside the checkout, and use it from there as a user's project would.

Installs reuse uv's cache; nothing is fetched but packages from the registries."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import REPOSITORY_ROOT

EXAMPLE_PROJECT = REPOSITORY_ROOT / "examples" / "my_project"
INSTALL_DEADLINE_SECONDS = 900
COMMAND_DEADLINE_SECONDS = 300


def run(
    command: list[str],
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    check: bool = True,
    timeout: float = COMMAND_DEADLINE_SECONDS,
    input_text: str | None = None,
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        command,
        cwd=cwd,
        env=env,
        input=input_text,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"{command} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


@dataclass(frozen=True)
class Distributions:
    wheel: Path  # built from the sdist, as `python -m build` does
    sdist: Path
    folder: Path


@pytest.fixture(scope="session")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Distributions:
    folder = tmp_path_factory.mktemp("dist")
    run(
        [sys.executable, "-m", "build", "--outdir", str(folder), str(REPOSITORY_ROOT)],
        cwd=folder,
        timeout=INSTALL_DEADLINE_SECONDS,
    )
    (wheel,) = folder.glob("*.whl")
    (sdist,) = folder.glob("*.tar.gz")
    return Distributions(wheel=wheel, sdist=sdist, folder=folder)


@dataclass(frozen=True)
class UserEnvironment:
    """A virtual environment outside the checkout with the wheel installed, and a user project."""

    root: Path
    project: Path
    added_to_site_packages: frozenset[str]

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def python(self) -> str:
        return str(self.bin / "python")

    def env(self) -> dict[str, str]:
        """The environment a user's shell would have with the virtual environment activated."""
        environment = {
            name: value
            for name, value in os.environ.items()
            # Bytecode is written as Python writes it by default: the venv was installed without
            # compiling ahead, and its first import of each module compiles it once, not every run.
            if name not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE"}
            and not name.startswith("PYTEST_")
        }
        environment.update(
            PATH=f"{self.bin}{os.pathsep}{environment.get('PATH', '')}",
            VIRTUAL_ENV=str(self.root),
        )
        return environment

    def run(
        self, command: list[str], *, check: bool = True, env_extra: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return run(command, cwd=self.project, env={**self.env(), **(env_extra or {})}, check=check)

    def serve(self, port: int, *arguments: str) -> subprocess.Popen[str]:
        """The installed ``sfn-idempotency serve`` on ``port``, run from the user's project."""
        return subprocess.Popen(
            [str(self.bin / "sfn-idempotency"), "serve", "--port", str(port), *arguments],
            cwd=self.project,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def synthesize(self) -> Path:
        """What `cdk synth` does for the user's app: run it, into the project's cdk.out."""
        outdir = self.project / "cdk.out"
        self.run([self.python, "app.py"], env_extra={"CDK_OUTDIR": str(outdir)})
        return outdir


# uv (locked in requirements/tools.lock, beside the suite's Python in every .venv the Makefile
# makes) installs what pip would resolve, in seconds where pip takes a minute; it compiles nothing
# ahead, so Python compiles what the tests import as a user's would. The venv itself is Python's,
# with pip in it, as a user's is.
UV = Path(sys.executable).with_name("uv")


def make_venv(root: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(root)
    return root / "bin"


def install(root: Path, *requirements: str) -> None:
    """``requirements`` installed into the venv at ``root``, with what they need."""
    command = [str(UV), "pip", "install", "--quiet", "--python", str(root / "bin" / "python"), *requirements]
    run(command, cwd=root, timeout=INSTALL_DEADLINE_SECONDS)


def site_packages(root: Path) -> set[str]:
    (folder,) = root.glob("lib/python*/site-packages")
    return {entry.name for entry in folder.iterdir() if entry.name != "__pycache__"}


@pytest.fixture(scope="session")
def user_env(dists: Distributions, tmp_path_factory: pytest.TempPathFactory) -> UserEnvironment:
    """``pip install "sfn-idempotency[cdk,local]" pytest`` (by uv) in a fresh venv; site-packages is listed
    before and after the wheel itself goes in, so what the wheel adds is known exactly."""
    root = tmp_path_factory.mktemp("user-venv")
    make_venv(root)
    install(root, f"{dists.wheel}[cdk,local]", "pytest")
    python = str(root / "bin" / "python")
    run([str(UV), "pip", "uninstall", "--quiet", "--python", python, "sfn-idempotency"], cwd=root)
    before = site_packages(root)
    install(root, "--no-deps", str(dists.wheel))
    added = frozenset(site_packages(root) - before)
    project = tmp_path_factory.mktemp("user-project") / "my_project"
    shutil.copytree(EXAMPLE_PROJECT, project, ignore=shutil.ignore_patterns("__pycache__", "cdk.out"))
    return UserEnvironment(root=root, project=project, added_to_site_packages=added)


@pytest.fixture(scope="session")
def cdk_out(user_env: UserEnvironment) -> Path:
    """The user's app synthesized once, into the project's cdk.out (a test that synthesizes it
    again after an edit puts this one back)."""
    return user_env.synthesize()
