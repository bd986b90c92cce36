"""The canary: the whole suite on the newest releases, to learn of a break before users do.

    python -m scripts.canary                  # both environments below (make canary)
    python -m scripts.canary --only ranges    # one of them

Each environment is made anew from the registry, not from the lock:
- ``ranges``: every dependency at the newest release pyproject's ranges admit (what a user who
  installs today gets);
- ``newest-moto``: the same, with moto's newest release whatever the [local] range says (what the
  next widening of the range would take on).

The suite runs in each. A failure is then laid to a dependency: for every dependency whose release
differs from the lock, an environment of the lock with that one dependency moved runs the failed
tests again, and the report says which dependency breaks which test. The exit status is 1 when
the ``ranges`` environment fails (users can install that today), else 0: a new moto that breaks
the suite is news, not an emergency, since the range does not admit it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "dev.lock"
BUILD_REQUIREMENTS = ROOT / "requirements" / "build.in"
SUITE_DEADLINE_SECONDS = 45 * 60
INSTALL_DEADLINE_SECONDS = 15 * 60
_PINNED = re.compile(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)", re.MULTILINE)
_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)


@dataclass(frozen=True)
class Canary:
    name: str
    overrides: tuple[str, ...]  # requirements that override pyproject's ranges (uv --override)


CANARIES = (
    Canary("ranges", ()),
    Canary("newest-moto", ("moto[stepfunctions,dynamodb,events,sqs,server]",)),
)


@dataclass
class Outcome:
    canary: Canary
    moved: dict[str, tuple[str, str]]  # dependency: (locked release, this environment's)
    failed: list[str]
    culprits: dict[str, list[str]] = field(default_factory=dict)  # dependency: the tests it breaks

    @property
    def passed(self) -> bool:
        return not self.failed


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned(text: str) -> dict[str, str]:
    return {normalized(name): version for name, version in _PINNED.findall(text)}


def uv() -> str:
    return str(Path(sys.executable).parent / "uv")


def make_venv(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    return folder / "bin" / "python"


def install(python: Path, *arguments: str) -> None:
    subprocess.run(
        [uv(), "pip", "install", "--quiet", "--python", str(python), *arguments],
        check=True,
        cwd=ROOT,
        timeout=INSTALL_DEADLINE_SECONDS,
    )


def install_project(python: Path) -> None:
    install(python, "--no-deps", "--no-build-isolation", "-e", ".")


def newest_requirements(canary: Canary, folder: Path) -> Path:
    """The newest releases the ranges admit (``overrides`` lifting some), resolved as a lock is."""
    overrides = folder / "overrides.txt"
    overrides.write_text("".join(f"{requirement}\n" for requirement in canary.overrides))
    requirements = folder / "requirements.txt"
    subprocess.run(
        [
            uv(),
            "pip",
            "compile",
            "--quiet",
            "--upgrade",
            "--no-header",
            "--python-version",
            "3.11",
            "--override",
            str(overrides),
            "pyproject.toml",
            str(BUILD_REQUIREMENTS),
            "--extra",
            "dev",
            "-o",
            str(requirements),
        ],
        check=True,
        cwd=ROOT,
        timeout=INSTALL_DEADLINE_SECONDS,
    )
    return requirements


def run_suite(python: Path, tests: list[str] | None = None) -> list[str]:
    """The suite (or ``tests``) on ``python``'s environment; the node ids that failed."""
    bin_folder = str(python.parent)
    environment = {**os.environ, "PATH": f"{bin_folder}{os.pathsep}{os.environ.get('PATH', '')}"}
    command = [
        str(python),
        "-m",
        "pytest",
        "-q",
        "-rfE",
        "-p",
        "no:randomly",
        "-n",
        "auto",
        "--dist",
        "loadgroup",
    ]
    result = subprocess.run(
        [*command, *(tests or [])],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=SUITE_DEADLINE_SECONDS,
        check=False,
    )
    print(result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr[-2000:])
    failed = sorted(set(_FAILED.findall(result.stdout)))
    if result.returncode not in (0, 1) and not failed:
        failed = [f"(pytest exited {result.returncode}: the suite could not run)"]
    return failed


def blame(outcome: Outcome, folder: Path) -> None:
    """Each moved dependency alone on the lock: the failed tests it breaks again."""
    runnable = [test for test in outcome.failed if not test.startswith("(")]
    for dependency, (old, release) in sorted(outcome.moved.items()):
        python = make_venv(folder / f"blame-{dependency}")
        install(python, "--no-deps", "-r", str(LOCK))
        install(python, "--no-deps", f"{dependency}=={release}")
        install_project(python)
        print(f"  with only {dependency} {old} -> {release}: ", end="", flush=True)
        broken = run_suite(python, runnable or None)
        if broken:
            outcome.culprits[dependency] = broken


def check(canary: Canary, locked: dict[str, str]) -> Outcome:
    folder = ROOT / f".venv-canary-{canary.name}"
    python = make_venv(folder)
    requirements = newest_requirements(canary, folder)
    newest = pinned(requirements.read_text())
    install(python, "--no-deps", "-r", str(requirements))
    install_project(python)
    moved = {
        name: (locked.get(name, "(not locked)"), release)
        for name, release in newest.items()
        if locked.get(name) != release
    }
    print(f"{canary.name}: {len(moved)} dependencies differ from the lock; the suite: ", end="", flush=True)
    outcome = Outcome(canary, moved, run_suite(python))
    if outcome.failed and moved:
        blame(outcome, folder)
    return outcome


def report(outcome: Outcome) -> str:
    lines = [f"## {outcome.canary.name}: {'passed' if outcome.passed else 'FAILED'}"]
    lines += [f"- {name}: {old} -> {new}" for name, (old, new) in sorted(outcome.moved.items())]
    if outcome.failed:
        lines.append(f"{len(outcome.failed)} tests failed:")
        lines += [f"  {test}" for test in outcome.failed]
    for dependency, tests in outcome.culprits.items():
        lines.append(f"{dependency} {outcome.moved[dependency][1]} alone breaks {len(tests)}:")
        lines += [f"  {test}" for test in tests]
    if outcome.failed and not outcome.culprits:
        lines.append("no single dependency breaks them alone: a combination does, or the tests are flaky")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=[canary.name for canary in CANARIES])
    arguments = parser.parse_args()
    locked = pinned(LOCK.read_text())
    outcomes = [check(canary, locked) for canary in CANARIES if arguments.only in (None, canary.name)]
    print("\n\n".join(report(outcome) for outcome in outcomes))
    return 1 if any(o.canary.name == "ranges" and not o.passed for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
