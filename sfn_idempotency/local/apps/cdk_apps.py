"""A CDK app synthesized as ``cdk synth`` runs it, for ``serve --cdk-app``, so that a pip user needs
no CDK CLI: the app's command (cdk.json's ``app``, or the one given) run by a shell in the app's
folder, with ``CDK_OUTDIR`` set to cdk.json's ``output`` (``cdk.out``) and ``CDK_CONTEXT_JSON`` to
the context of cdk.json and cdk.context.json, the account and region the engine's.

What the app prints goes to standard error: serve's standard output is its ready line alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

CDK_JSON = "cdk.json"
CONTEXT_JSON = "cdk.context.json"  # the context the CDK CLI caches beside cdk.json
DEFAULT_OUTPUT = "cdk.out"
SYNTH_DEADLINE_SECONDS = 900


class SynthError(Exception):
    """The app could not be synthesized; the message says why in one line."""


def synthesize(folder: Path, command: str | None, *, region: str, account: str) -> Path:
    """The cloud assembly ``command`` (else cdk.json's app) writes, run in ``folder``."""
    settings = _json_object(folder / CDK_JSON)
    app = command or settings.get("app")
    if not isinstance(app, str) or not app.strip():
        raise SynthError(f'no CDK app to run: give --cdk-app COMMAND, or an "app" in {folder / CDK_JSON}')
    output = folder / str(settings.get("output") or DEFAULT_OUTPUT)
    context = {**(settings.get("context") or {}), **_json_object(folder / CONTEXT_JSON)}
    environment = {
        **os.environ,
        "CDK_OUTDIR": str(output),
        "CDK_CONTEXT_JSON": json.dumps(context),
        "CDK_DEFAULT_REGION": region,
        "CDK_DEFAULT_ACCOUNT": account,
    }
    output.mkdir(parents=True, exist_ok=True)
    try:
        ran = subprocess.run(
            app,
            shell=True,  # as the CDK CLI runs cdk.json's app: a command line of the user's own
            cwd=folder,
            env=environment,
            stdout=sys.stderr,
            timeout=SYNTH_DEADLINE_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SynthError(f"the CDK app {app!r} ran longer than {SYNTH_DEADLINE_SECONDS} s") from None
    if ran.returncode != 0:
        raise SynthError(f"the CDK app {app!r} exited {ran.returncode} (its output is above)")
    if not (output / "manifest.json").is_file():
        raise SynthError(f"the CDK app {app!r} wrote no cloud assembly into {output} (CDK_OUTDIR)")
    return output


def _json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``, or {} when there is no such file."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise SynthError(f"{path}: not a JSON file ({error})") from None
    if not isinstance(value, dict):
        raise SynthError(f"{path}: not a JSON object")
    return value
