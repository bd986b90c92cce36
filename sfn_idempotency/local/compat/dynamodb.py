"""DynamoDB as the interpreter's integrations see it (fix 8), and what moto re-parsed, re-copied or
re-walked on every request (fixes 61, 62, 67, 117, 118 and 130, speed: no behaviour changes).

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
117. The validation walks the tree ten times, one check each. At every node each walk rebuilt its
     map of node classes to handlers, twice, and matched the node against abstract classes. Each
     walk class now finds a node class's handler once: the first of its map the class derives
     from, as moto's ``process`` chose, kept as its function (a map of methods bound to the walk
     is the same for every walk of its class; kept on each walk it was a cycle the garbage
     collector had to free). Half the validation's time; and the write lock of fix 8, held
     through it, is held that much less.
118. The check that an update expression has one SET, REMOVE and ADD clause at most counted the
     clauses below every node of the tree, again for each node above: a walk per node. It counts
     them in one walk, bottom up, and raises the error moto raised at the node moto raised it.
130. A conditional write's condition was parsed twice per request: by the request's check of the
     names and values it uses, then by the write, which evaluates the tree against the item. The
     tree depends on the text, the names and the values alone, and evaluating it changes nothing
     in it, so a thread's parse of the same text with the same names and values objects as its
     last parse, unchanged since, answers that parse's tree (and the names and values it found):
     the request's second parse. A parse that raised is parsed again.
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

from sfn_idempotency.local.compat.evaluation import copied_json
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


Handler = Callable[[Any, Any], Any]  # (walk, node) -> node


def _handlers_found_once(original: Callable[..., Any]) -> Callable[..., Any]:
    from moto.dynamodb.parsing.ast_nodes import Node

    is_node: dict[type, bool] = {}  # by class: moto's nodes are abstract classes, slow to match
    # By walk class and node class: the handler's function, called with the walk. Every walk's map
    # names its own methods, the same for every walk of its class; kept as functions, so that no
    # walk holds a map of methods bound to itself (a cycle, left to the garbage collector).
    handlers: dict[tuple[type, type], Handler | None] = {}

    def handler_of(walk: Any, kind: type) -> Handler | None:
        key = (type(walk), kind)
        if key in handlers:
            return handlers[key]
        handler = next(
            (handler for cls, handler in walk._processing_map().items() if issubclass(kind, cls)), None
        )
        if handler is None or getattr(handler, "__self__", None) is walk:
            function = None if handler is None else handler.__func__
            handlers[key] = function
            return function
        return lambda _walk, node: handler(node)  # not the walk's own method: looked up each time

    def traverse_node_recursively(self: Any, node: Any, child_id: int = -1) -> Any:
        # moto's walk, line for line, with the handler looked up once per walk class and node class.
        kind = type(node)
        if kind not in is_node:
            is_node[kind] = issubclass(kind, Node)
        if not is_node[kind]:
            return node
        parent_node = node.parent
        if node.children is not None:
            for i, child_node in enumerate(node.children):
                self.pre_processing_of_child(node, i)
                self.traverse_node_recursively(child_node, i)
        handler = handler_of(self, kind)
        if handler is not None:
            node = handler(self, node)
            node.parent = parent_node
            if parent_node:
                parent_node.children[child_id] = node
        return node

    return traverse_node_recursively


def _clauses_counted_in_one_walk(original: Callable[..., Any]) -> Callable[..., Any]:
    from moto.dynamodb.exceptions import TooManyClauses
    from moto.dynamodb.parsing import ast_nodes

    # In the order moto's check compares them; find_clauses descends through these classes only.
    kinds = (
        ("ADD", ast_nodes.UpdateExpressionAddClause),
        ("REMOVE", ast_nodes.UpdateExpressionRemoveClause),
        ("SET", ast_nodes.UpdateExpressionSetClause),
    )
    searched_through = (ast_nodes.Expression, ast_nodes.UpdateExpressionFunction)

    def clauses_below(node: Any) -> list[int]:
        """What moto's ``find_clauses`` finds of each kind below ``node``; checked children first."""
        counts = [0] * len(kinds)
        for child in node.children or ():
            if not isinstance(child, ast_nodes.Node):
                continue
            below = clauses_below(child)
            searched = isinstance(child, searched_through)
            for index, (_, kind) in enumerate(kinds):
                if type(child) is kind:
                    counts[index] += 1
                elif searched:
                    counts[index] += below[index]
        if isinstance(node, ast_nodes.UpdateExpression):
            for (clause, _), count in zip(kinds, counts, strict=True):
                if count > 1:
                    raise TooManyClauses(clause)
        return counts

    def traverse(self: Any, node: Any) -> Any:
        if isinstance(node, ast_nodes.Node):
            clauses_below(node)
        return node

    return traverse


class _LastParse(threading.local):
    # The names and values parsed (the objects, and copies as they were then), the text, the tree,
    # the names found and the values found
    entry: tuple[Any, Any, Any, Any, str, Any, list[str], list[str]] | None = None


_last_parse = _LastParse()


def _parsed_once_per_request(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def parse(self: Any) -> Any:
        text, names, values = (
            self.condition_expression,
            self.expression_attribute_names,
            self.expression_attribute_values,
        )
        last = _last_parse.entry
        if (
            last is not None
            and last[0] is names  # the request's own objects, which moto hands its check and its write
            and last[1] is values
            and last[2] == names  # unchanged since
            and last[3] == values
            and last[4] == text
        ):
            self.expr_attr_names_found.extend(last[6])
            self.expr_attr_values_found.extend(last[7])
            return last[5]
        tree = original(self)
        if text:
            found = (list(self.expr_attr_names_found), list(self.expr_attr_values_found))
            _last_parse.entry = (names, values, copied_json(names), copied_json(values), text, tree, *found)
        return tree

    return parse


PATCHES: tuple[Patch, ...] = (
    *(Patch(8, f"{_DYNAMODB_MODULE}:DynamoDBBackend", operation, _atomic) for operation in _ATOMIC_WRITES),
    Patch(
        61, "moto.dynamodb.comparisons:ConditionExpressionParser", "_lex_condition_expression", _lexed_once
    ),
    Patch(62, "moto.dynamodb.parsing.expressions:UpdateExpressionParser", "make", _parsed_once),
    Patch(67, "moto.dynamodb.parsing.validators", "deepcopy", _trees_copied_from_their_pickle),
    Patch(
        117,
        "moto.dynamodb.parsing.ast_nodes:DepthFirstTraverser",
        "traverse_node_recursively",
        _handlers_found_once,
    ),
    Patch(
        118, "moto.dynamodb.parsing.validators:ActionCountValidator", "traverse", _clauses_counted_in_one_walk
    ),
    Patch(130, "moto.dynamodb.comparisons:ConditionExpressionParser", "parse", _parsed_once_per_request),
)
