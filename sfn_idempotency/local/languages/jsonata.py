"""JSONata as Step Functions evaluates it, for compat fix 15: jsonata-python (a port of jsonata-java,
the evaluator LocalStack wires to the interpreter moto ported) plus the functions Step Functions adds.

Step Functions adds ``$partition``, ``$range``, ``$hash``, ``$random`` (with an optional seed),
``$uuid`` and ``$parse``, and does not support ``$eval``
(https://docs.aws.amazon.com/step-functions/latest/dg/transforming-data.html).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import itertools
import json
import random
import re
import threading
import uuid
from collections.abc import Callable
from typing import Any

from jsonata import Jsonata
from jsonata.utils import Utils
from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

# $hash's algorithm names, as Step Functions spells them.
HASH_ALGORITHMS = {
    "MD5": "md5",
    "SHA-1": "sha1",
    "SHA-256": "sha256",
    "SHA-384": "sha384",
    "SHA-512": "sha512",
}
MAX_RANGE_ITEMS = 1000  # as States.ArrayRange
_COMPILED_KEPT = 1024  # distinct expressions parsed and kept
_DECLARATION = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*):=")
_RESULT_CHECKS = ("$exists(", "$type(")  # how moto's validations wrap a composed expression
_JSON = json.JSONDecoder()


class JSONataEvaluationError(Exception):
    """The expression failed to evaluate (a type error, a function Step Functions lacks...)."""


def evaluate(expression: str) -> Any:
    """The expression's value as JSON values (None: undefined or null); JSONataEvaluationError if it fails.

    moto hands over one text: ``($name:=<JSON>;...<expression>)``, the variables and ``$states``
    declared ahead of the state's expression. Parsing that text at every evaluation cost most of a
    JSONata workflow's time; the declarations are bound as values instead and each distinct
    expression is parsed once."""
    try:
        bindings, body = _declared_bindings(expression)
        # Each evaluation on an instance of its own (a shallow copy: the parsed tree is shared),
        # made its thread's current one. jsonata-python evaluates on the thread's current instance,
        # which holds the evaluation's input and scope, and reads $millis() and $now() from its
        # time; the current one was the thread's last-made expression, whose time is stale when
        # the expression is a kept one. Never the kept instance itself: threads would share it.
        instance = copy.copy(_compiled(body))
        Jsonata.CURRENT.jsonata = instance
        result = instance.evaluate(None, bindings)
        # As the JVM bridge hands results over: JSON values only (a function is not one); JSONata
        # numbers are doubles, written without a fraction when whole (as AWS prints 2, not 2.0).
        return _whole_numbers_as_int(json.loads(json.dumps(result)))
    except JSONataEvaluationError:
        raise
    except Exception as error:
        raise JSONataEvaluationError(str(error)) from error


@functools.lru_cache(maxsize=_COMPILED_KEPT)
def _compiled(expression: str) -> Jsonata:
    compiled = Jsonata(expression)
    for name, function in STEP_FUNCTIONS_FUNCTIONS.items():
        compiled.register_lambda(name, function)
    return compiled


def _declared_bindings(expression: str) -> tuple[dict[str, Any], str]:
    """Split ``($a:=<JSON>;$b:=<JSON>;body)`` into ``{"a": ..., "b": ...}`` and ``(body)``. Binding a
    name to a JSON value ahead of a block is what the declaration does, so the meaning is the same.
    A declaration of ``$states`` names its value (``encode_states``) instead of holding it as text.
    moto's checks of a result wrap the whole text once more (``$exists(…)``, ``$type(…)``)."""
    for check in _RESULT_CHECKS:
        if expression.startswith(check) and expression.endswith(")"):
            checked, body = _declared_bindings(expression[len(check) : -1])
            return checked, f"{check}{body})"
    if not (expression.startswith("(") and expression.endswith(")")):
        return {}, expression
    text = expression[1:-1]
    bindings: dict[str, Any] = {}
    position = 0
    while (declaration := _DECLARATION.match(text, position)) is not None:
        if text.startswith(_NAMED_VALUE, declaration.end()):
            end = text.index(";", declaration.end())
            value = _named_value(int(text[declaration.end() + len(_NAMED_VALUE) : end]))
        else:
            try:
                decoded, end = _JSON.raw_decode(text, declaration.end())
            except ValueError:
                break
            if not text.startswith(";", end):
                break
            value = _as_jsonata(decoded)
        bindings[declaration.group(1)] = value
        position = end + 1
    return bindings, f"({text[position:]})"


# -- $states by name, not as text -------------------------------------------------------------------
# moto writes ``$states`` (the state's input, its context object, its result) into every expression
# as JSON text, and fix 15 read it back: each JSONata expression wrote and parsed its whole input.
# The value is handed over by name instead: ``$states:=<NUL><n>;``, n naming the value in this thread
# until evaluated. moto evaluates the text it composed at once, in the same thread (and a second
# time to check a null result), and never keeps it: a few names per thread are enough.
_NAMED_VALUE = "\x00"
_NAMES_KEPT = 8
_named = threading.local()
_names = itertools.count()


def encode_states(bindings: dict[str, Any]) -> str:
    """``$states:=<NUL><n>;``: the declaration fix 15's evaluator binds to the value itself."""
    kept: dict[int, Any] = _named.__dict__.setdefault("values", {})
    parts = []
    for name, value in bindings.items():
        number = next(_names)
        kept[number] = value
        parts.append(f"{name}:={_NAMED_VALUE}{number};")
    while len(kept) > _NAMES_KEPT:
        del kept[next(iter(kept))]
    return "".join(parts)


def _named_value(number: int) -> Any:
    kept: dict[int, Any] = _named.__dict__.get("values", {})
    if number not in kept:
        raise JSONataEvaluationError(f"the engine lost the value of $states ({number}): evaluated too late")
    return _as_bound(kept[number])


def _as_bound(value: Any) -> Any:
    """What the JSON text of ``value`` read back would be (``_as_jsonata`` of it), without the text:
    a copy of dicts with text keys, lists and scalars; anything else through the text, as before."""
    kind = type(value)
    if value is None:
        return Utils.NULL_VALUE
    if kind is str or kind is int or kind is float or kind is bool:
        return value
    if kind is list:
        return [_as_bound(item) for item in value]
    if kind is dict and all(type(key) is str for key in value):
        return {key: _as_bound(item) for key, item in value.items()}
    return _as_jsonata(json.loads(_json_text(value)))


def _whole_numbers_as_int(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_whole_numbers_as_int(item) for item in value]
    if isinstance(value, dict):
        return {key: _whole_numbers_as_int(item) for key, item in value.items()}
    return value


def _partition(array: list[Any], chunk_size: float) -> list[list[Any]]:
    size = int(chunk_size)
    if not isinstance(array, list) or size < 1:
        raise JSONataEvaluationError("$partition takes an array and a chunk size of at least 1")
    return [array[start : start + size] for start in range(0, len(array), size)]


def _range(first: float, last: float, step: float) -> Any:
    if step == 0:
        raise JSONataEvaluationError("$range needs a step other than 0")
    count = max(0, int((last - first) // step) + 1)
    if count > MAX_RANGE_ITEMS:
        raise JSONataEvaluationError(f"$range makes at most {MAX_RANGE_ITEMS} items, this would be {count}")
    # A sequence, as JSONata's own functions return: one item alone is that item (recorded on AWS:
    # $range(1, 1, 1) is 1, not [1]).
    return Utils.create_sequence_from_iter(first + index * step for index in range(count))


def _hash(value: str, algorithm: str) -> str:
    name = HASH_ALGORITHMS.get(algorithm)
    if name is None or not isinstance(value, str):
        raise JSONataEvaluationError(f"$hash takes a string and one of {', '.join(HASH_ALGORITHMS)}")
    return hashlib.new(name, value.encode("utf-8")).hexdigest()


def _random(seed: float | None = None) -> float:
    return random.Random(seed).random() if seed is not None else random.random()


def _uuid() -> str:
    return str(uuid.uuid4())


def _parse(text: str) -> Any:
    try:
        return _as_jsonata(json.loads(text))
    except (TypeError, json.JSONDecodeError) as error:
        raise JSONataEvaluationError(f"$parse: not JSON text: {error}") from None


def _as_jsonata(value: Any) -> Any:
    """A JSON value as the evaluator holds it: JSON null is its NULL_VALUE (None means undefined)."""
    if value is None:
        return Utils.NULL_VALUE
    if isinstance(value, list):
        return [_as_jsonata(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_jsonata(item) for key, item in value.items()}
    return value


def _unsupported(name: str) -> Callable[..., Any]:
    def refuse(*_: Any) -> Any:
        raise JSONataEvaluationError(f"the JSONata function ${name} is not supported by Step Functions")

    return refuse


STEP_FUNCTIONS_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "partition": _partition,
    "range": _range,
    "hash": _hash,
    "random": _random,
    "uuid": _uuid,
    "parse": _parse,
    "eval": _unsupported("eval"),
}


def encode_declarations(bindings: dict[str, Any]) -> str:
    """``$name:=<JSON>;`` for each binding, a string value escaped as JSON text (moto wrote it between
    quotes as it was, so a quote in it broke the expression); other values as moto encodes them
    (its encoder also writes the context object's timestamps)."""
    return "".join(f"{name}:={_json_text(value)};" for name, value in bindings.items())


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    text: str = to_json_str(value, separators=(",", ":"))
    return text
