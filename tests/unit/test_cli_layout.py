"""The ``sfn-idempotency`` command is a package, one module per command (issue 56): what users and
scripts name stays where it was: the console script's entry point, ``python -m``, and the imports."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import import_module

from sfn_idempotency import __version__
from tests import REPOSITORY_ROOT

COMMANDS = ("demo", "serve", "env", "start", "record", "forget", "wrap", "check", "graph")
DEADLINE_SECONDS = 60


def test_the_console_script_names_an_entry_point_that_exists():
    # Given the entry point pyproject.toml installs as `sfn-idempotency`
    scripts = tomllib.loads((REPOSITORY_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ]
    module, _, function = scripts["sfn-idempotency"].partition(":")
    # Then it is callable where it names it
    assert callable(getattr(import_module(module), function))


def test_python_dash_m_runs_the_command():
    # When the package is run as a module, as the benches run serve
    result = subprocess.run(
        [sys.executable, "-m", "sfn_idempotency.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=DEADLINE_SECONDS,
        check=False,
    )
    # Then it is the command
    assert (result.returncode, result.stdout.strip()) == (0, f"sfn-idempotency {__version__}")


def test_each_command_is_a_module_with_its_parser_and_its_work():
    from sfn_idempotency.cli import build_parser, main
    from sfn_idempotency.cli.main import COMMANDS as REGISTERED

    # Then every command has its module, registered in the order --help lists them
    assert tuple(REGISTERED) == COMMANDS
    for name in COMMANDS:
        module = import_module(f"sfn_idempotency.cli.{name}")
        assert callable(module.add_parser), name
        assert callable(module.run), name
    # And the parser the package exports knows each of them, as main dispatches them
    parser = build_parser()
    assert parser.parse_args(["graph"]).command == "graph"
    assert main(["graph", "--asl", "/nonexistent.asl.json"]) == 2
