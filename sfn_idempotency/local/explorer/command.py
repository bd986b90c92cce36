"""``sfn-idempotency check``: the explorer on the example app, or on an ASL file with its functions."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sfn_idempotency.local.cloud import EngineError, LocalCloud
from sfn_idempotency.local.explorer import DEFAULT_MAX_STEPS, DEFAULT_SCHEDULES, explore
from sfn_idempotency.local.explorer.report import Report
from sfn_idempotency.local.explorer.surface import states_of
from sfn_idempotency.local.explorer.target import Target, TargetError
from sfn_idempotency.local.service import IdempotentService
from sfn_idempotency.settings import example_settings
from sfn_idempotency.wrap import KEY_FUNCTION_PLACEHOLDER, TABLE_PLACEHOLDER

EXAMPLE_ORDER = {"orderId": "o-1001", "amount": 42.5}
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


class CheckError(ValueError):
    """What the command was given cannot be checked (one line, exit 2)."""


@dataclass
class CheckRequest:
    """What ``sfn-idempotency check`` was asked: ``definition`` (None: the example app), its
    ``functions`` (name: ``module.function`` under ``code_dir``), ``substitutions``, the ``watch``ed
    functions (default: all of them), the ``request`` and its ``key``, and the exploration's
    ``schedules``, ``seed``, ``budget_seconds``, ``max_steps`` or ``replay``."""

    definition: Path | None = None
    functions: dict[str, str] = field(default_factory=dict)
    code_dir: Path = Path()
    substitutions: dict[str, str] = field(default_factory=dict)
    watch: Sequence[str] = ()
    request: Any = None
    key: str | None = None
    express: bool = False
    schedules: int = DEFAULT_SCHEDULES
    seed: int = 0
    budget_seconds: float | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    replay: str | None = None


def check(request: CheckRequest) -> Report:
    """Deploy what was asked on a fresh LocalCloud and explore it."""
    with LocalCloud() as cloud:
        target = _example(cloud) if request.definition is None else _definition(cloud, request)
        try:
            return explore(
                target,
                schedules_to_run=request.schedules,
                seed=request.seed,
                budget_seconds=request.budget_seconds,
                max_steps=request.max_steps,
                replay=request.replay,
            )
        except ValueError as error:  # a replay token that is not one
            raise CheckError(str(error)) from None


def _example(cloud: LocalCloud) -> Target:
    """The example app as its stack deploys it: the workflow, its release workflow, place-order."""
    service = IdempotentService(cloud, example_settings({}))
    service.deploy_claim_release()
    return Target.of_service(service, [EXAMPLE_ORDER])


def _definition(cloud: LocalCloud, request: CheckRequest) -> Target:
    assert request.definition is not None
    try:
        text = request.definition.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CheckError(f"cannot read {request.definition}: {error}") from None
    if request.request is None:
        raise CheckError("--request is required with a definition: the input of one request, as JSON")
    if not request.functions:
        raise CheckError("name the definition's functions with --function NAME=module.handler")
    substitutions = dict(request.substitutions)
    placeholders = set(_PLACEHOLDER.findall(text))
    for name, handler in request.functions.items():
        try:
            function = cloud.add_function(name, handler, code_dir=request.code_dir.resolve())
        except (EngineError, ImportError, AttributeError, SyntaxError) as error:
            raise CheckError(f"function {name}: cannot load {handler}: {error}") from None
        for placeholder in {name, f"{name}Arn", f"{name}FunctionArn"} & placeholders:
            substitutions.setdefault(placeholder, function.arn)
    if {KEY_FUNCTION_PLACEHOLDER, TABLE_PLACEHOLDER} & placeholders:
        substitutions.update(cloud.idempotency_substitutions())
    missing = sorted(placeholders - set(substitutions))
    if missing:
        raise CheckError(f"no value for {', '.join('${' + m + '}' for m in missing)}: add --sub NAME=VALUE")
    try:
        arn = cloud.create_state_machine(
            request.definition.stem.replace(".", "-"),
            text,
            substitutions,
            workflow_type="EXPRESS" if request.express else "STANDARD",
        )
    except Exception as error:  # the API's refusal of the definition, in its words
        raise CheckError(f"{request.definition} is not a valid state machine: {error}") from None
    watch = list(request.watch) or list(request.functions)
    states = {name for name, _ in states_of(json.loads(text))}
    unknown = sorted(set(watch) - set(request.functions) - states)
    if unknown:
        raise CheckError(f"--watch {', '.join(unknown)}: neither a --function nor a state of this definition")
    try:
        return Target(cloud, arn, [request.request], watch=watch, key=request.key)
    except TargetError as error:
        raise CheckError(str(error)) from None


def parse_request(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise CheckError(f"--request is not JSON: {error}") from None
