"""What we run ourselves installs from the lock files, and the locks agree with what users install.

`make demo`, `make test` (so CI), `make bench` and `make docs` build their environments from
requirements/*.lock with hashes; pyproject's ranges are what users get, bounded to what the suite
passed on. These tests hold the two together: a lock that a range no longer admits, an entry without
a hash, or a moto the engine does not name as tested fails here, before any environment is built."""

from __future__ import annotations

import re
import tomllib

import pytest
from packaging.requirements import Requirement

from scripts.canary import normalized
from sfn_idempotency.extras import TESTED_MOTO
from tests import REPOSITORY_ROOT

REQUIREMENTS = REPOSITORY_ROOT / "requirements"
# Each lock and the pyproject extras it was compiled for.
LOCKS = {"dev.lock": ("dev", "cdk", "local"), "demo.lock": ("local",)}
ENTRY = re.compile(r"^([A-Za-z0-9._-]+)==(\S+)((?:\s*\\\n\s+--hash=sha256:[0-9a-f]{64})+)", re.MULTILINE)


def locked(lock: str) -> dict[str, str]:
    return {
        normalized(name): version for name, version, _ in ENTRY.findall((REQUIREMENTS / lock).read_text())
    }


def declared(extras: tuple[str, ...]) -> list[Requirement]:
    project = tomllib.loads((REPOSITORY_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    listed = [
        *project["dependencies"],
        *(r for extra in extras for r in project["optional-dependencies"][extra]),
    ]
    return [requirement for requirement in map(Requirement, listed) if requirement.name != "sfn-idempotency"]


@pytest.mark.parametrize("lock", [*LOCKS, "tools.lock"])
def test_every_locked_package_is_pinned_with_a_hash(lock: str):
    # Given a lock file, When its requirement lines are read
    text = (REQUIREMENTS / lock).read_text()
    requirement_lines = [line for line in text.splitlines() if line and not line.startswith((" ", "#"))]
    # Then each pins one release, with the hashes pip and uv check
    assert requirement_lines
    assert len(ENTRY.findall(text)) == len(requirement_lines)


@pytest.mark.parametrize(("lock", "extras"), LOCKS.items())
def test_each_lock_holds_a_release_every_declared_range_admits(lock: str, extras: tuple[str, ...]):
    # Given what pyproject declares for the lock's extras, and what the lock pins
    pins = locked(lock)
    # Then every declared dependency is locked, at a release its range admits
    outside = {
        str(requirement): pins.get(name, "not locked")
        for requirement in declared(extras)
        if (name := normalized(requirement.name)) not in pins or pins[name] not in requirement.specifier
    }
    assert outside == {}


@pytest.mark.parametrize("lock", LOCKS)
def test_each_lock_runs_a_moto_the_engine_was_tested_on_and_builds_the_project_offline(lock: str):
    pins = locked(lock)
    assert pins["moto"] in TESTED_MOTO
    # the project goes in without build isolation: its build requirements are locked too
    assert {"setuptools", "wheel"} <= set(pins)


def test_the_makefile_builds_every_environment_from_a_lock_with_hashes():
    # Given the Makefile's recipe for an environment
    makefile = (REPOSITORY_ROOT / "Makefile").read_text()
    recipe = makefile[makefile.index("define locked_venv") : makefile.index("endef")]
    # Then each install in it checks hashes and resolves nothing (the lock is the whole answer)
    installs = [line for line in recipe.splitlines() if " install " in line and "-e ." not in line]
    assert len(installs) == 2
    assert all("--require-hashes" in line and "--no-deps" in line for line in installs)
    # and the test, demo environments are made with it, from their own locks
    assert "$(call locked_venv,$(VENV),$(LOCK)" in makefile
    assert "$(call locked_venv,$(DEMO_VENV),$(DEMO_LOCK)" in makefile
