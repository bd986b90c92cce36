"""An update expression's validation (fixes 117 and 118, speed: no behaviour changes): each walk of
the tree finds a node class's handler once, and the clause counts take one walk. Every expression
here is validated twice, by the engine and by moto's own walk written out below, and must end the
same: the same tree, or the same error with the same message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.parsing import ast_nodes, validators
from moto.dynamodb.parsing.expressions import UpdateExpressionParser

from sfn_idempotency.local import LocalCloud

NAMES = {"#s": "status", "#id": "id", "#a": "a", "#b": "b"}
VALUES = {
    ":v": {"S": "v"},
    ":n": {"N": "1"},
    ":l": {"L": [{"S": "x"}]},
    ":e": {"L": []},
    ":set": {"SS": ["x"]},
    ":empty": {"S": ""},
}
EXPRESSIONS = (
    "SET #s = :v, a = :n, b = list_append(if_not_exists(b, :e), :l)",  # valid: functions, names
    "SET a = a + :n REMOVE b ADD c :n DELETE d :set",  # valid: one clause of each kind
    "SET a = :v SET b = :v",  # two SET clauses
    "REMOVE a REMOVE b",  # two REMOVE clauses
    "ADD x :n SET a = :v SET b = :v ADD c :n",  # two of two kinds: which one moto names first
    "SET a = :v ADD c :n REMOVE d REMOVE e ADD f :n",
    "SET a = :v, a = :n",  # the same path twice
    "SET a.b = :v, a = :n",  # overlapping paths
    "SET #a = :v, #a = :n",  # one name twice
    "SET #id = :v",  # the partition key
    "SET id = :empty",
    "SET a = never_written + :n",  # an attribute the item lacks
    "SET a = :v + :n",  # an operand of the wrong type
)


def _moto_s_walk(walk: Any, node: Any, child_id: int = -1) -> Any:
    """moto's ``traverse_node_recursively``, with moto's own ``process`` and handler classes."""
    if isinstance(node, ast_nodes.Node):
        parent_node = node.parent
        for i, child_node in enumerate(node.children or ()):
            walk.pre_processing_of_child(node, i)
            _moto_s_walk(walk, child_node, i)
        if isinstance(node, walk.nodes_to_be_processed()):
            node = walk.process(node)
            node.parent = parent_node
            if parent_node:
                parent_node.children[child_id] = node
    return node


def _shape(node: Any) -> Any:
    """A tree as nested values, its parent links left out (they point back up)."""
    if isinstance(node, list):
        return [_shape(child) for child in node]
    if isinstance(node, DynamoType):
        return node.to_json()
    if hasattr(node, "__dict__"):
        return type(node).__name__, {
            name: _shape(value)
            for name, value in vars(node).items()
            if name not in {"parent", "_sfn_local_handlers"}
        }
    return node


def _outcome(validate: Callable[[], Any]) -> Any:
    try:
        return "validated", _shape(validate())
    except Exception as error:  # the error itself is what is compared
        return type(error).__name__, str(error)


def _validator(cloud: LocalCloud, table: str, expression: str) -> validators.UpdateExpressionValidator:
    backend = dynamodb_backends[cloud.account][cloud.region]
    item = backend.get_item(table, {"id": {"S": "k"}})
    return validators.UpdateExpressionValidator(
        UpdateExpressionParser.make(expression),
        expression_attribute_names=NAMES,
        expression_attribute_values=VALUES,
        item=item,
        table=backend.get_table(table),
    )


@pytest.fixture
def records(local_cloud: LocalCloud) -> str:
    table = local_cloud.create_table("validated")
    local_cloud.client("dynamodb").put_item(
        TableName=table, Item={"id": {"S": "k"}, "a": {"N": "2"}, "b": {"L": []}}
    )
    return table


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_a_validation_ends_as_moto_s_own_walk_ends_it(local_cloud: LocalCloud, records: str, expression: str):
    # Given an update expression and an item, validated by moto's walk, check by check
    def by_moto_s_walk() -> Any:
        validator = _validator(local_cloud, records, expression)
        node = validator.node_to_validate
        for walk in validator.processors:
            node = _moto_s_walk(walk, node)
        return node

    expected = _outcome(by_moto_s_walk)
    # When the engine validates it
    outcome = _outcome(_validator(local_cloud, records, expression).validate)
    # Then it ends the same: the same tree, or the same error and message
    assert outcome == expected


def test_each_walk_asks_for_its_handlers_once_per_node_class(
    local_cloud: LocalCloud, records: str, monkeypatch: pytest.MonkeyPatch
):
    # Given a check whose handler map is counted, and an expression of 37 nodes, 11 classes
    asked: list[type] = []
    processing_map = validators.TypeMismatchValidator._processing_map

    def counted(self: Any) -> Any:
        asked.append(type(self))
        return processing_map(self)

    monkeypatch.setattr(validators.TypeMismatchValidator, "_processing_map", counted)
    validator = _validator(local_cloud, records, EXPRESSIONS[0])
    classes = _node_classes(validator.node_to_validate)
    # When the expression is validated
    validator.validate()
    # Then that check asked for its map once per node class it met (moto asked at every node)
    assert len(asked) <= len(classes) < _node_count(validator.node_to_validate)


def test_the_clause_counts_take_one_walk(
    local_cloud: LocalCloud, records: str, monkeypatch: pytest.MonkeyPatch
):
    # Given clause searches counted, and an expression with clauses of every kind
    searched: list[Any] = []
    find_clauses = ast_nodes.Node.find_clauses

    def counted(self: Any, clause_types: Any) -> Any:
        searched.append(self)
        return find_clauses(self, clause_types)

    monkeypatch.setattr(ast_nodes.Node, "find_clauses", counted)
    tree = UpdateExpressionParser.make(EXPRESSIONS[1])
    # When only the clause count check walks it
    validators.ActionCountValidator().traverse(tree)
    # Then it searched no subtree again (moto searched below every clause node, three times)
    assert searched == []


def test_a_second_set_clause_is_refused_and_changes_nothing(local_cloud: LocalCloud, records: str):
    # When an UpdateItem has two SET clauses
    dynamodb = local_cloud.client("dynamodb")
    with pytest.raises(ClientError) as refused:
        dynamodb.update_item(
            TableName=records,
            Key={"id": {"S": "k"}},
            UpdateExpression="SET a = :v SET b = :v",
            ExpressionAttributeValues={":v": {"S": "v"}},
        )
    # Then it is refused, naming the clause, and the item is unchanged
    error = refused.value.response["Error"]
    assert error["Code"] == "ValidationException"
    assert 'Invalid UpdateExpression: The "SET" section can only be used once' in error["Message"]
    assert dynamodb.get_item(TableName=records, Key={"id": {"S": "k"}})["Item"]["a"] == {"N": "2"}


def _nodes(node: Any) -> list[Any]:
    if not isinstance(node, ast_nodes.Node):
        return []
    return [node, *(below for child in node.children or () for below in _nodes(child))]


def _node_classes(node: Any) -> set[type]:
    return {type(each) for each in _nodes(node)}


def _node_count(node: Any) -> int:
    return len(_nodes(node))
