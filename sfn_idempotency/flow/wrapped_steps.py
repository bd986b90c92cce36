"""The steps ``wrap_state`` made, found again in a definition: each wrapped step's key prefix, the
step a state belongs to, and the definition's text outside them (sfn_idempotency.wrap writes them,
the CDK construct and ``wrap_state`` itself read them back)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

_MISSING = object()


def state_machines(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The definition and every nested one (Parallel branches, Map processors), outside in."""
    yield document
    for state in document["States"].values():
        for nested in [*state.get("Branches", []), state.get("ItemProcessor"), state.get("Iterator")]:
            if isinstance(nested, dict) and isinstance(nested.get("States"), dict):
                yield from state_machines(nested)


def find_state(document: dict[str, Any], name: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    for machine in state_machines(document):
        state = machine["States"].get(name, _MISSING)
        if state is not _MISSING:
            return machine["States"], state
    return None


def wrapped_key_prefix(state: dict[str, Any]) -> str | None:
    """The key prefix of a state this module made, or None for any other state."""
    if state.get("Type") != "Parallel" or len(state.get("Branches", [])) != 1:
        return None
    prefix = step_key_settings(state["Branches"][0]).get("IDEMPOTENCY_KEY_PREFIX")
    return prefix if isinstance(prefix, str) else None


def step_key_settings(branch: dict[str, Any]) -> dict[str, Any]:
    """The settings of a wrapped step's branch: its ComputeKey's payload (a JSONata step starts at
    Claim, with the same settings written into its expression), or {} for any other branch."""
    states = branch.get("States", {})
    for state in states.values() if isinstance(states, dict) else ():
        settings = payload_settings(state) if isinstance(state, dict) else {}
        if "IDEMPOTENCY_KEY_PREFIX" in settings:
            return settings
    return {}


def payload_settings(compute_key: dict[str, Any]) -> dict[str, Any]:
    """The settings a ComputeKey state carries in its payload (JSONPath Parameters or JSONata
    Arguments), or {} for any other state."""
    arguments = compute_key.get("Parameters", compute_key.get("Arguments", {}))
    payload = arguments.get("Payload", {}) if isinstance(arguments, dict) else {}
    settings = payload.get("settings", {}) if isinstance(payload, dict) else {}
    return settings if isinstance(settings, dict) else {}


def wrapped_steps(document: dict[str, Any]) -> dict[str, str]:
    """Every wrapped step of the definition: state name -> key prefix."""
    steps = {}
    for machine in state_machines(document):
        for name, state in machine["States"].items():
            prefix = wrapped_key_prefix(state)
            if prefix is not None:
                steps[name] = prefix
    return steps


def enclosing_wrapped_step(document: dict[str, Any], state_name: str) -> str | None:
    for machine in state_machines(document):
        for name, state in machine["States"].items():
            if wrapped_key_prefix(state) is None:
                continue
            inner = {n for nested in state_machines(state["Branches"][0]) for n in nested["States"]}
            if state_name in inner:
                return str(name)
    return None


def all_state_names(document: dict[str, Any]) -> set[str]:
    return {name for machine in state_machines(document) for name in machine["States"]}


def text_outside_wrapped_steps(document: dict[str, Any]) -> str:
    """The definition's text without the branches of steps wrapped already: each step's flow
    variables live in its own branch's scope, where another step's may use the same names."""
    trimmed = copy.deepcopy(document)
    for machine in state_machines(trimmed):
        for state in machine["States"].values():
            if wrapped_key_prefix(state) is not None:
                state["Branches"] = []
    return json.dumps(trimmed)


def renamed_states(states: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """``states`` under ``names`` (old name → new), every transition to them renamed too."""
    renamed = {}
    for name, state in states.items():
        state = copy.deepcopy(state)
        if "Next" in state:
            state["Next"] = names[state["Next"]]
        if "Default" in state:
            state["Default"] = names[state["Default"]]
        for rule in state.get("Choices", []):
            rule["Next"] = names[rule["Next"]]
        for catcher in state.get("Catch", []):
            catcher["Next"] = names[catcher["Next"]]
        renamed[names[name]] = state
    return renamed
