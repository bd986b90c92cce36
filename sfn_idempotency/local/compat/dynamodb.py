"""DynamoDB as the interpreter's integrations see it (fix 8), and what moto re-parsed or re-copied
on every request (fixes 61, 62 and 67, speed: no behaviour changes).

61. A condition expression was lexed into tokens twice per conditional write (the request's check
    of its names and values, then the write), every token with six regular expressions looked
    up again. The tokens depend on the text alone and are never changed after lexing, so each
    distinct text is lexed once; every parse still builds its own tree from them.
62. An update expression was parsed twice per UpdateItem. Its tree depends on the text alone, and
    what reads it either only reads it (the names and values it uses) or validates a deep copy,
    so each distinct text is parsed once. A text that does not parse raises at every request.
67. Validating an update expression starts from a deep copy of its tree (the validation rewrites
    it with the request's values and the item's attributes). A tree of fix 62 is pickled when it
    is parsed, and each copy of it is unpickled: the same objects, rebuilt without ``deepcopy``'s
    walk, which cost as much as the rest of the request's parse.
"""

from __future__ import annotations

import contextlib
import functools
import pickle
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

from sfn_idempotency.local.compat.patching import Patch

_DYNAMODB_MODULE = "moto.dynamodb.models"
_ATOMIC_WRITES = ("put_item", "update_item", "delete_item", "transact_write_items")
_DISTINCT_EXPRESSIONS = 1024  # texts remembered per kind: far more than a test suite's machines write
_dynamodb_write_lock = threading.RLock()
_pickled_trees: weakref.WeakKeyDictionary[Any, bytes] = weakref.WeakKeyDictionary()  # fix 62's trees


def _atomic(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def write(*args: Any, **kwargs: Any) -> Any:
        with _dynamodb_write_lock:
            return original(*args, **kwargs)

    return write


def _lexed_once(original: Callable[[Any], deque[Any]]) -> Callable[[Any], deque[Any]]:
    from moto.dynamodb.comparisons import ConditionExpressionParser

    @functools.lru_cache(maxsize=_DISTINCT_EXPRESSIONS)
    def tokens_of(text: str) -> tuple[Any, ...]:
        return tuple(original(ConditionExpressionParser(text, None, None)))  # lexing reads the text alone

    def lex_condition_expression(self: Any) -> deque[Any]:
        # The parser consumes the deque it is given: each parse gets its own, of the same tokens.
        return deque(tokens_of(self.condition_expression))

    return lex_condition_expression


def _parsed_once(original: Callable[[str], Any]) -> Any:
    @functools.lru_cache(maxsize=_DISTINCT_EXPRESSIONS)
    def make(expression: str) -> Any:
        tree = original(expression)
        with contextlib.suppress(pickle.PicklingError, TypeError, AttributeError):  # then deep-copied
            _pickled_trees[tree] = pickle.dumps(tree, protocol=pickle.HIGHEST_PROTOCOL)
        return tree

    return staticmethod(make)


def _trees_copied_from_their_pickle(original: Callable[..., Any]) -> Callable[..., Any]:
    def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        try:
            pickled = _pickled_trees.get(value) if memo is None else None
        except TypeError:  # unhashable, so not a tree
            pickled = None
        return original(value, memo) if pickled is None else pickle.loads(pickled)

    return deepcopy


PATCHES: tuple[Patch, ...] = (
    *(Patch(8, f"{_DYNAMODB_MODULE}:DynamoDBBackend", operation, _atomic) for operation in _ATOMIC_WRITES),
    Patch(
        61, "moto.dynamodb.comparisons:ConditionExpressionParser", "_lex_condition_expression", _lexed_once
    ),
    Patch(62, "moto.dynamodb.parsing.expressions:UpdateExpressionParser", "make", _parsed_once),
    Patch(67, "moto.dynamodb.parsing.validators", "deepcopy", _trees_copied_from_their_pickle),
)
