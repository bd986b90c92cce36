"""A JSONPath that selects nothing, reported as AWS reports it (fix 94).

94. (a) A Task's parameters are evaluated in a frame of their own, and moto named the field of a
    missing path from its caller's frame: the last field the caller evaluated, ``TimeoutSeconds``,
    not the ``MessageBody.$`` whose path was missing. The field is now the one being evaluated when
    the path selected nothing.
    (b) An ``InputPath``, ``OutputPath``, ``TimeoutSecondsPath`` or ``HeartbeatSecondsPath`` that
    selects nothing is worded as Jayway (AWS's JSONPath) words it, in bracket notation:
    ``No results for path: $['a']['b']`` for a missing last property, ``Missing property in path
    $['a']`` for a missing one before it (both recorded), and ``Filter: [0]['body'] can only be
    applied to arrays. Current context is: {}`` for an index into what is not an array (Jayway's
    ``ArrayPathToken``). moto cut the path's first two characters and quoted the rest, which was
    right only for ``$.name`` (``$[0].body`` became ``$['0].body']``).
160. A JSONPath ``Assign`` entry whose path selects nothing names its field as written
    (``sfnIdempotencyClaimRun.$``), as a parameter's does (recorded: ``value.$``); moto named a
    class of its own (``AssignTemplateBindingStringExpressionSimple``) in the execution's cause.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.patching import Patch

_COMPONENT_PACKAGE = "moto.stepfunctions.parser.asl.component"
_STRING_JSON_PATH = f"{_COMPONENT_PACKAGE}.common.string.string_expression:StringJsonPath"
# The components whose missing path moto words itself ("Invalid path '…' : …").
_PATH_FIELDS = (
    (f"{_COMPONENT_PACKAGE}.common.path.input_path:InputPath", "_eval_body"),
    (f"{_COMPONENT_PACKAGE}.common.path.output_path:OutputPath", "_eval_body"),
    (f"{_COMPONENT_PACKAGE}.common.timeouts.timeout:TimeoutSecondsPath", "_eval_seconds"),
    (f"{_COMPONENT_PACKAGE}.common.timeouts.heartbeat:HeartbeatSecondsPath", "_eval_seconds"),
)
# A path made only of names and indices: $.a, $['a'], $[0]; anything else (filters, wildcards,
# slices) keeps moto's words.
_TOKEN = re.compile(r"\.([^.\[\]]+)|\['([^']*)'\]|\[(\d+)\]")
_ASSIGN_PATH_BINDING = (
    f"{_COMPONENT_PACKAGE}.common.assign.assign_template_binding:AssignTemplateBindingStringExpressionSimple"
)
FIELD_NAME = "sfn_field_name"
_JAYWAY_WORDS = "sfn_jayway_words"


def jayway_words(json_path: str, data: Any) -> str | None:
    """What Jayway says of ``json_path`` selecting nothing in ``data``; None for a path it would
    not word this way (or one that does select something)."""
    tokens: list[str | int] = []
    position = 1
    while position < len(json_path):
        found = _TOKEN.match(json_path, position)
        if not json_path.startswith("$") or found is None:
            return None
        name, quoted, index = found.groups()
        tokens.append(int(index) if index is not None else (name if name is not None else quoted))
        position = found.end()
    current = data
    for depth, token in enumerate(tokens):
        if isinstance(token, int):
            if not isinstance(current, list):
                rest = "".join(_bracketed(t) for t in tokens[depth:])
                return (
                    f"Filter: {rest} can only be applied to arrays. Current context is: {_java_text(current)}"
                )
            if token >= len(current):
                return None
            current = current[token]
        elif isinstance(current, dict) and token in current:
            current = current[token]
        elif isinstance(current, dict):
            so_far = "$" + "".join(_bracketed(t) for t in tokens[: depth + 1])
            if depth == len(tokens) - 1:
                return f"No results for path: {so_far}"
            return f"Missing property in path {so_far}"
        else:
            return None
    return None


def _bracketed(token: str | int) -> str:
    return f"[{token}]" if isinstance(token, int) else f"['{token}']"


def _java_text(value: Any) -> str:
    """A JSON value as Java's ``toString`` of Jayway's maps and lists writes it."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}={_java_text(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_java_text(item) for item in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _noting_where_it_failed(original: Callable[..., None]) -> Callable[..., None]:
    from moto.stepfunctions.parser.asl.utils.json_path import NoSuchJsonPathError

    def eval_body(self: Any, env: Any) -> None:
        try:
            original(self, env)
        except NoSuchJsonPathError as missing:
            setattr(missing, FIELD_NAME, env.next_field_name)
            setattr(missing, _JAYWAY_WORDS, jayway_words(missing.json_path, missing.data))
            raise

    return eval_body


def _worded_as_jayway(original: Callable[..., Any]) -> Callable[..., Any]:
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEventException,
    )

    def evaluate(self: Any, env: Any) -> Any:
        try:
            return original(self, env)
        except FailureEventException as failure:
            missing: Any = failure.__context__  # what moto caught: the NoSuchJsonPathError
            words = getattr(missing, _JAYWAY_WORDS, None)
            details = (failure.failure_event.event_details or {}).get("taskFailedEventDetails")
            if words is not None and details is not None:
                details["cause"] = f"Invalid path '{missing.json_path}' : {words}"
            raise

    return evaluate


def _named_as_written(_original: Callable[[Any], str | None]) -> Callable[[Any], str]:
    return lambda self: f"{self.identifier}.$"


PATCHES: tuple[Patch, ...] = (
    Patch(94, _STRING_JSON_PATH, "_eval_body", _noting_where_it_failed),
    Patch(160, _ASSIGN_PATH_BINDING, "_field_name", _named_as_written),
    *(Patch(94, component, method, _worded_as_jayway) for component, method in _PATH_FIELDS),
)
