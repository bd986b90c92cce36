"""CloudWatch Logs filter patterns (local/observability/filter_patterns.py), on the examples of AWS's
own pages: "Using filter patterns to match terms in JSON log events" and "... in unstructured log
events" (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/FilterAndPatternSyntax.html)."""

from __future__ import annotations

import json

import pytest

from sfn_idempotency.local.observability.filter_patterns import PatternError, compile_pattern

# The example JSON log event of AWS's page
EVENT = json.dumps(
    {
        "eventType": "UpdateTrail",
        "sourceIPAddress": "111.111.111.111",
        "arrayKey": ["value", "another value"],
        "objectList": [{"name": "a", "id": 1}, {"name": "b", "id": 2}],
        "SomeObject": None,
        "cluster.name": "c1",
        "ThisFlag": True,
    }
)
# ... and the one of its compound expressions
USERS = json.dumps(
    {
        "user": {"id": 1, "email": "John.Stiles@example.com"},
        "users": [{"id": 2, "email": "John.Doe@example.com"}, {"id": 3, "email": "Jane.Doe@example.com"}],
        "actions": ["GET", "PUT", "DELETE"],
        "coordinates": [[0, 1], [2, 3]],
    }
)
UNSTRUCTURED = [
    "[ERROR 400] BAD REQUEST",
    "[ERROR 401] UNAUTHORIZED REQUEST",
    "[ERROR 419] MISSING ARGUMENTS",
    "[ERROR 420] INVALID ARGUMENTS",
]


@pytest.mark.parametrize(
    "pattern",
    [
        '{ $.eventType = "UpdateTrail" }',
        "{ $.sourceIPAddress != 123.123.* }",
        '{ $.arrayKey[0] = "value" }',
        "{ $.objectList[1].id = 2 }",
        "{ $.SomeObject IS NULL }",
        "{ $.SomeOtherObject NOT EXISTS }",
        "{ $.ThisFlag IS TRUE }",
        "{ $.['cluster.name'] = \"c1\" }",
        '{ $.eventType = "Update*" }',
    ],
)
def test_the_documented_json_patterns_match_the_documented_event(pattern: str):
    assert compile_pattern(pattern)(EVENT)


@pytest.mark.parametrize(
    "pattern",
    [
        '{ $.eventType = "CreateTrail" }',
        "{ $.sourceIPAddress != 111.111.* }",
        "{ $.objectList[1].id = 1 }",
        "{ $.objectList[5].id = 2 }",
        "{ $.SomeObject NOT EXISTS }",
        "{ $.ThisFlag IS FALSE }",
        "{ $.objectList[1].id > 2 }",
        "{ $.eventType = 2 }",
    ],
)
def test_the_same_patterns_turned_around_do_not(pattern: str):
    assert not compile_pattern(pattern)(EVENT)


@pytest.mark.parametrize(
    ("pattern", "matches"),
    [
        ('{($.user.id = 1) && ($.users[0].email = "John.Doe@example.com")}', True),
        ('{($.user.id = 2 && $.users[0].email = "nonmatch") || $.actions[2] = "GET"}', False),
        # && binds tighter than ||: the first clause alone matches
        (
            '{$.user.email = "John.Stiles@example.com" || $.coordinates[0][1] = "nonmatch" && $.actions[2] = "nonmatch"}',
            True,
        ),
        ("{ $.coordinates[1][0] >= 2 && $.coordinates[0][1] < 2 }", True),
    ],
)
def test_compound_expressions_combine_as_documented(pattern: str, matches: bool):
    assert compile_pattern(pattern)(USERS) is matches


@pytest.mark.parametrize(
    ("pattern", "matched"),
    [
        ("ERROR", [0, 1, 2, 3]),
        ("ERROR ARGUMENTS", [2, 3]),
        ("?UNAUTHORIZED ?MISSING", [1, 2]),
        ("ERROR -ARGUMENTS", [0, 1]),
        ('"INVALID ARGUMENTS"', [3]),
        ("error", []),
        ("", [0, 1, 2, 3]),
    ],
)
def test_terms_match_unstructured_events_as_documented(pattern: str, matched: list[int]):
    matcher = compile_pattern(pattern)
    assert [index for index, event in enumerate(UNSTRUCTURED) if matcher(event)] == matched


def test_a_json_pattern_matches_no_event_that_is_not_json():
    assert not compile_pattern('{ $.eventType = "UpdateTrail" }')("eventType = UpdateTrail")


@pytest.mark.parametrize(
    "pattern",
    [
        "{ $.message = %ERROR% }",
        "[ip, user, ...]",
        "{ $.a = }",
        "{ $.a IS MAYBE }",
        "{ ($.a = 1 }",
        "{ a = 1 }",
    ],
)
def test_what_cannot_be_evaluated_faithfully_is_refused(pattern: str):
    with pytest.raises(PatternError):
        compile_pattern(pattern)
