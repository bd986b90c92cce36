"""The engine assembled from the fixes to moto (``local/compat``) and the capabilities that patch
moto too: the one table of every patch, in the order they compose (a later patch wraps what an
earlier one put in place), checked before anything is patched; and the seams through which a fix
reaches what stands above it (the call hooks, the program store), wired here before the first
Task client or parse."""

from __future__ import annotations

import importlib.metadata
import time
from collections.abc import Callable
from typing import Any

from sfn_idempotency.extras import TESTED_MOTO
from sfn_idempotency.local.capabilities import distributed_map, http_task, test_state, versions
from sfn_idempotency.local.compat import (
    answers,
    apigateway,
    callbacks,
    cloudformation,
    definitions,
    dynamodb,
    evaluation,
    events,
    execution_ends,
    execution_logs,
    execution_lookups,
    express,
    history,
    integrations,
    interpreter,
    json_paths,
    jsonata,
    lambda_runtime,
    moto_core,
    moto_server,
    redrive_fields,
    service_tasks,
    services,
)
from sfn_idempotency.local.compat.lambda_runtime import Around
from sfn_idempotency.local.compat.patching import IncompatibleMotoError, Patch, apply, missing
from sfn_idempotency.local.controls.calls import interceptor
from sfn_idempotency.local.engine import program_store

# The moto releases the fixes were written and tested against (pyproject's [local] pin admits these).
SUPPORTED_MOTO = ", ".join(TESTED_MOTO)

# Every moto internal the engine touches, by surface; attributes only read use `keep`.
PATCHES: tuple[Patch, ...] = (
    *interpreter.PATCHES,
    *json_paths.PATCHES,
    *evaluation.PATCHES,
    *history.PATCHES,
    *answers.PATCHES,
    *definitions.PATCHES,
    *service_tasks.PATCHES,  # before integrations': fixes 70 and 71 wrap what it puts in place
    *integrations.PATCHES,
    *events.PATCHES,
    *dynamodb.PATCHES,
    *jsonata.PATCHES,
    *lambda_runtime.PATCHES,
    *test_state.PATCHES,
    *execution_logs.PATCHES,
    *services.PATCHES,
    *http_task.PATCHES,
    *callbacks.PATCHES,
    *cloudformation.PATCHES,
    *apigateway.PATCHES,
    *versions.PATCHES,
    *express.PATCHES,
    *redrive_fields.PATCHES,
    *distributed_map.PATCHES,
    *execution_ends.PATCHES,
    *execution_lookups.PATCHES,
    *moto_core.PATCHES,
    *moto_server.PATCHES,
)


def incompatibilities(*, loaded_only: bool = False) -> list[str]:
    """What each fix needs from moto and this moto lacks (empty: every fix applies).
    ``loaded_only``: fixes of moto modules that load on demand wait for their first import."""
    return missing(PATCHES, loaded_only=loaded_only)


def check() -> None:
    """Refuse a moto whose internals moved, naming its version and the fixes that cannot apply
    (those of modules that load on demand are checked at their first import)."""
    problems = incompatibilities(loaded_only=True)
    if problems:
        raise IncompatibleMotoError(
            f"moto {importlib.metadata.version('moto')} is not supported by the local engine "
            f"(tested on {SUPPORTED_MOTO}): {'; '.join(problems)}. "
            f"Install a supported one: pip install 'moto=={TESTED_MOTO[-1]}'"
        )


def _wire_seams() -> None:
    """What the fixes are given from above: every Task client's calls pass the engine's call hooks
    (fix 1), and a definition is parsed once for every process (fix 9's program store)."""
    interpreter.client_hooks = [
        ("before-call", interceptor.before_call),
        ("after-call", interceptor.after_call),
    ]
    interpreter.program_cache = program_store.stored


def install() -> None:
    """Apply every fix; idempotent, and safe before or after moto's modules were imported. The
    caller has run ``check()`` (LocalCloud does, when it is made: once, not at every start too)."""
    _wire_seams()
    modules = interpreter.interpreter_modules()  # all imported before the patches apply
    apply(PATCHES)
    interpreter.route_task_clients(modules)
    interpreter.install_map_input_words()
    evaluation.install_program_state_copies()
    answers.install_start_sync_execution()
    definitions.install_validate_state_machine_definition()
    test_state.install_test_state()
    versions.install_operations()
    apigateway.install_models()
    cloudformation.install_models()  # last: moto lists every model again


def connect(
    *,
    now: Callable[[], float],
    retry_wait_scale: float,
    around_functions: Around,
    api_gateway: Callable[..., Any],
    execution_ended: Callable[..., Any],
) -> None:
    """Hand the fixes what a running cloud gives them: its clock (a state's entry time, a redrive's
    date), its retry wait scale, what it puts around every function call (its faults), its API
    Gateway answers to a Task, and who hears that an execution ended."""
    redrive_fields.redrive_clock.now = interpreter.state_clock.now = now
    interpreter.retry_time.scale = retry_wait_scale
    lambda_runtime.around = around_functions
    service_tasks.api_gateway.answer = api_gateway
    execution_ends.ends.listeners[:] = [execution_ended]


def disconnect() -> None:
    """Take back what ``connect`` handed, and the Task clients the cloud's calls were made with."""
    interpreter.forget_clients()
    redrive_fields.redrive_clock.now = interpreter.state_clock.now = time.time
    interpreter.retry_time.scale = 1.0
    lambda_runtime.around = None
    service_tasks.api_gateway.answer = None
    execution_ends.ends.listeners.clear()
