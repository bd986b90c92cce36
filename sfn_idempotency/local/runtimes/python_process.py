"""Python functions on the Python their runtime names, when it is not the engine's and is installed:
a ``python3.12`` function runs on Python 3.12 (``python3.12`` on PATH, else pyenv's newest 3.12),
in warm environments (``warm_processes``) whose bootstrap is ``python_bootstrap.py``. Code that
only a newer Python loads, or that an older one refuses, then answers as on Lambda. A Python older
than the SDK below supports (boto3 1.44: 3.10) is not used.

Only while the engine serves (``serve``): such a function's AWS SDK calls must reach the engine
over its endpoint, as on AWS they reach the account's services. In process (a ``LocalCloud``
without one) moto intercepts only this process's calls, so a function runs on the engine's own
Python there (``python``).

The runtime carries the AWS SDK, as Lambda's carries boto3 in ``/var/runtime``: the engine's own
boto3, botocore and the pure-Python packages they need, linked into one cache folder (never the
user's folders), after the function's code and layers on its ``sys.path``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from sfn_idempotency.local import runtimes
from sfn_idempotency.local.runtimes import code_folders, warm_processes
from sfn_idempotency.local.runtimes.outcome import Outcome
from sfn_idempotency.local.runtimes.python_interface import ENGINE_RUNTIME

BOOTSTRAP = "python_bootstrap.py"
_DECLARED = re.compile(r"python3\.(\d+)$")
_PROBE_SECONDS = 10
# What Lambda's Python runtime carries beside the function's code: boto3 and what it imports, and
# simplejson, which the runtime's interface client marshals with. All pure Python (simplejson's
# compiled speedups, built for the engine's Python, are passed over by another Python).
_SDK_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six", "simplejson")


def layer_paths(opt: Path | None) -> list[Path]:
    """Where Lambda's Python runtime finds a layer's packages: ``/opt/python`` and its
    ``lib/python3.x/site-packages``."""
    if opt is None:
        return []
    return [opt / "python", *sorted((opt / "python" / "lib").glob("python3*/site-packages"))]


def interpreter(run_time: str) -> str | None:
    """The installed Python a ``python3.X`` runtime names, if it is not the engine's own."""
    declared = _DECLARED.match(run_time)
    if declared is None or run_time == ENGINE_RUNTIME or int(declared.group(1)) < oldest_minor():
        return None
    return _installed(int(declared.group(1)))


@cache
def oldest_minor() -> int:
    """The oldest Python the SDK the runtime carries runs on (botocore's ``Requires-Python``): an
    older one's function runs on the engine's Python, where its boto3 imports."""
    required = importlib.metadata.metadata("botocore")["Requires-Python"] or ""
    found = re.search(r">=\s*3\.(\d+)", required)
    return max(9, int(found.group(1))) if found else 9  # the bootstrap's own oldest


@cache
def _installed(minor: int) -> str | None:
    """``python3.<minor>`` on PATH, else in pyenv's versions: the first that runs and is that Python
    (a pyenv shim of a version not selected fails)."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates = [
        shutil.which(f"python3.{minor}"),
        *sorted(pyenv.glob(f"3.{minor}.*/bin/python3.{minor}"), key=_release, reverse=True),
    ]
    for candidate in filter(None, candidates):
        try:
            probe = subprocess.run(
                [str(candidate), "-c", "import sys; print(sys.version_info[1])"],
                capture_output=True,
                text=True,
                timeout=_PROBE_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0 and probe.stdout.strip() == str(minor):
            return str(candidate)
    return None


def _release(python: Path) -> tuple[int, ...]:
    """A pyenv Python's release, from its folder's name (``3.12.10`` after ``3.12.9``)."""
    return tuple(int(number) for number in re.findall(r"\d+", python.parents[1].name))


def runs_elsewhere(function: Any) -> bool:
    """Whether ``function`` runs on the Python its runtime names rather than the engine's."""
    return runtimes.endpoint_url is not None and interpreter(str(function.run_time)) is not None


@cache
def sdk_folder() -> Path:
    """The cache folder of links to the engine's SDK packages: one per set of their locations."""
    sources = []
    for name in _SDK_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        origin = Path(spec.origin)
        sources.append(origin.parent if spec.submodule_search_locations else origin)
    key = hashlib.sha256("\n".join(map(str, sources)).encode()).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = base / "sfn-idempotency" / "python-sdk" / key
    if not folder.is_dir():
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=folder.parent))
        for source in sources:
            (staging / source.name).symlink_to(source)
        try:
            staging.rename(folder)
        except OSError:  # another engine linked it meanwhile
            shutil.rmtree(staging, ignore_errors=True)
    return folder


def environment_variables(function: Any) -> dict[str, str]:
    """What Lambda's Python runtime sets, then the function's own variables."""
    task = code_folders.unpacked(function)
    search = [task, *layer_paths(code_folders.layers_folder(function)), sdk_folder()]
    return {
        **runtimes.process_variables(function, task),
        "PYTHONPATH": os.pathsep.join(map(str, search)),
        **runtimes.sdk_variables(),
        **runtimes.own_variables(function),
    }


def run(function: Any, event: Any, invoked_arn: str) -> Outcome:
    """One invocation in a warm environment of ``function`` (a moto ``LambdaFunction``) on its Python."""
    request = warm_processes.Request.of(function, event, invoked_arn)
    python = interpreter(str(function.run_time))
    bootstrap = str(files("sfn_idempotency.local.runtimes") / BOOTSTRAP)
    try:
        folder, variables = code_folders.unpacked(function), environment_variables(function)
        return warm_processes.run(lambda: [str(python), "-s", "-u", bootstrap], folder, variables, request)
    except OSError as error:  # the Python went since it was found
        return Outcome.error(runtimes.UNAVAILABLE, f"RequestId: {request.request_id} Error: {error}")
