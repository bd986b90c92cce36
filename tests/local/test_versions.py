"""Versions and aliases (issue 30, fix 44), variable references (fix 45) and nested request
constraints (fix 21), as AWS answers them in its recordings; in our own words."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sfn_idempotency.local import LocalCloud

ROLE = "arn:aws:iam::123456789012:role/versions"


def definition(comment: str) -> str:
    return json.dumps(
        {
            "Comment": comment,
            "StartAt": "Say",
            "States": {"Say": {"Type": "Pass", "Result": comment, "End": True}},
        }
    )


def error_of(refused: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    error: dict[str, Any] = refused.value.response["Error"]
    return error["Code"], error["Message"]


@pytest.fixture
def machine(local_cloud: LocalCloud) -> str:
    created = local_cloud.sfn.create_state_machine(
        name="greeter", definition=definition("v1"), roleArn=ROLE, publish=True
    )
    return str(created["stateMachineArn"])


def test_publishing_makes_a_version_only_when_something_changed(local_cloud: LocalCloud, machine: str):
    sfn = local_cloud.sfn
    # When the machine is published again unchanged, then after a change
    unchanged = sfn.publish_state_machine_version(stateMachineArn=machine)
    updated = sfn.update_state_machine(stateMachineArn=machine, definition=definition("v2"))
    changed = sfn.publish_state_machine_version(stateMachineArn=machine, description="second")
    # Then the unchanged publish answered version 1 again, the changed one made version 2
    assert unchanged["stateMachineVersionArn"] == f"{machine}:1"
    assert changed["stateMachineVersionArn"] == f"{machine}:2"
    # And version 2 is described with its description and the revision it was published from
    described = sfn.describe_state_machine(stateMachineArn=f"{machine}:2")
    assert (described["description"], described["revisionId"]) == ("second", updated["revisionId"])
    # And the versions are listed newest first, a page at a time
    first_page = sfn.list_state_machine_versions(stateMachineArn=machine, maxResults=1)
    second_page = sfn.list_state_machine_versions(
        stateMachineArn=machine, maxResults=1, nextToken=first_page["nextToken"]
    )
    assert [
        v["stateMachineVersionArn"]
        for v in first_page["stateMachineVersions"] + second_page["stateMachineVersions"]
    ] == [
        f"{machine}:2",
        f"{machine}:1",
    ]
    assert "nextToken" not in second_page


def test_publishing_for_a_stale_revision_is_refused(local_cloud: LocalCloud, machine: str):
    first = local_cloud.sfn.update_state_machine(stateMachineArn=machine, definition=definition("v2"))
    local_cloud.sfn.update_state_machine(stateMachineArn=machine, definition=definition("v3"))
    with pytest.raises(ClientError) as refused:
        local_cloud.sfn.publish_state_machine_version(stateMachineArn=machine, revisionId=first["revisionId"])
    assert error_of(refused)[0] == "ConflictException"


def test_an_update_that_changes_nothing_makes_no_revision(local_cloud: LocalCloud):
    # Given a machine never published, updated with its own definition and publish
    arn = local_cloud.sfn.create_state_machine(name="same", definition=definition("v1"), roleArn=ROLE)[
        "stateMachineArn"
    ]
    first = local_cloud.sfn.update_state_machine(
        stateMachineArn=arn, definition=definition("v1"), publish=True
    )
    again = local_cloud.sfn.update_state_machine(
        stateMachineArn=arn, definition=definition("v1"), publish=True
    )
    # Then both answer version 1 and no revision (recorded)
    assert first["stateMachineVersionArn"] == again["stateMachineVersionArn"] == f"{arn}:1"
    assert "revisionId" not in first
    assert "revisionId" not in again


def test_a_version_runs_its_own_definition_and_is_named_by_its_executions(
    local_cloud: LocalCloud, machine: str
):
    # Given version 1, and the machine changed since
    local_cloud.sfn.update_state_machine(stateMachineArn=machine, definition=definition("v2"))
    # When version 1 and the machine are each started
    of_version = local_cloud.run(f"{machine}:1", {})
    of_machine = local_cloud.run(machine, {})
    # Then each ran its own definition
    assert (of_version.output, of_machine.output) == ("v1", "v2")
    # And the version's execution names the machine and the version
    described = local_cloud.sfn.describe_execution(executionArn=of_version.arn)
    assert (described["stateMachineArn"], described["stateMachineVersionArn"]) == (machine, f"{machine}:1")
    # And the version lists only its own execution, the machine both
    listed = local_cloud.sfn.list_executions(stateMachineArn=f"{machine}:1")["executions"]
    assert [(e["executionArn"], e["stateMachineArn"], e["stateMachineVersionArn"]) for e in listed] == [
        (of_version.arn, machine, f"{machine}:1")
    ]
    assert set(local_cloud.executions(machine)) == {of_version.arn, of_machine.arn}


def test_an_alias_routes_by_weight_and_its_executions_name_it(local_cloud: LocalCloud, machine: str):
    sfn = local_cloud.sfn
    sfn.update_state_machine(stateMachineArn=machine, definition=definition("v2"), publish=True)
    # Given an alias sending every execution to version 2
    routes = [
        {"stateMachineVersionArn": f"{machine}:2", "weight": 100},
        {"stateMachineVersionArn": f"{machine}:1", "weight": 0},
    ]
    alias = sfn.create_state_machine_alias(name="live", routingConfiguration=routes)["stateMachineAliasArn"]
    # When it is started three times
    results = [local_cloud.run(alias, {}) for _ in range(3)]
    # Then version 2 ran each time, and each execution names the alias and the version
    assert [r.output for r in results] == ["v2"] * 3
    described = sfn.describe_execution(executionArn=results[0].arn)
    assert (described["stateMachineAliasArn"], described["stateMachineVersionArn"]) == (alias, f"{machine}:2")
    # And creating it again the same way answers it; differently is refused
    assert (
        sfn.create_state_machine_alias(name="live", routingConfiguration=routes)["stateMachineAliasArn"]
        == alias
    )
    with pytest.raises(ClientError) as refused:
        sfn.create_state_machine_alias(name="live", routingConfiguration=routes[:1], description="other")
    assert error_of(refused)[0] == "ConflictException"
    # And a version an alias routes to cannot be deleted; once the alias is gone, it can (twice)
    with pytest.raises(ClientError) as conflict:
        sfn.delete_state_machine_version(stateMachineVersionArn=f"{machine}:2")
    assert error_of(conflict) == (
        "ConflictException",
        "Version to be deleted must not be referenced by an alias. Current list of aliases referencing this version: [live]",
    )
    sfn.delete_state_machine_alias(stateMachineAliasArn=alias)
    sfn.delete_state_machine_alias(stateMachineAliasArn=alias)
    # And an update of the alias that is gone is refused in AWS's words (recorded)
    with pytest.raises(ClientError) as gone:
        sfn.update_state_machine_alias(stateMachineAliasArn=alias, description="updated")
    assert error_of(gone) == ("ResourceNotFound", "Request references a resource that does not exist.")
    sfn.delete_state_machine_version(stateMachineVersionArn=f"{machine}:2")
    sfn.delete_state_machine_version(stateMachineVersionArn=f"{machine}:2")
    # And version numbers are never reused
    sfn.update_state_machine(stateMachineArn=machine, definition=definition("v3"))
    assert (
        sfn.publish_state_machine_version(stateMachineArn=machine)["stateMachineVersionArn"] == f"{machine}:3"
    )


@pytest.mark.parametrize(
    ("routes", "message"),
    [
        (
            [(":1", 50), (":1", 50)],
            "Routing configuration must contain distinct state machine version ARNs. Received: [{m}:1, {m}:1]",
        ),
        (
            [("", 50), (":1", 50)],
            "Routing configuration must contain state machine version ARNs. Received: [{m}, {m}:1]",
        ),
        ([(":1", 70), (":2", 29)], "Sum of routing configuration weights must equal 100. Received: [70, 29]"),
        (
            [(":1", 50), (":2", 101)],
            "1 validation error detected: Value '101' at 'routingConfiguration.2.member.weight' failed to satisfy "
            "constraint: Member must have value less than or equal to 100",
        ),
    ],
)
def test_alias_routes_are_refused_in_aws_words(
    local_cloud: LocalCloud, machine: str, routes: list[tuple[str, int]], message: str
):
    local_cloud.sfn.update_state_machine(stateMachineArn=machine, definition=definition("v2"), publish=True)
    configuration = [
        {"stateMachineVersionArn": f"{machine}{suffix}", "weight": weight} for suffix, weight in routes
    ]
    with pytest.raises(ClientError) as refused:
        local_cloud.sfn.create_state_machine_alias(name="live", routingConfiguration=configuration)
    assert error_of(refused) == ("ValidationException", message.format(m=machine))


def test_an_alias_name_is_checked_against_the_apis_pattern(local_cloud: LocalCloud, machine: str):
    with pytest.raises(ClientError) as refused:
        local_cloud.sfn.create_state_machine_alias(
            name="123", routingConfiguration=[{"stateMachineVersionArn": f"{machine}:1", "weight": 100}]
        )
    assert error_of(refused)[1] == (
        "1 validation error detected: Value '123' at 'name' failed to satisfy constraint: Member must satisfy "
        "regular expression pattern: ^(?=.*[a-zA-Z_\\-\\.])[a-zA-Z0-9_\\-\\.]+$"
    )


def test_a_version_s_arn_is_not_a_machine_to_update(local_cloud: LocalCloud, machine: str):
    with pytest.raises(ClientError) as refused:
        local_cloud.sfn.update_state_machine(stateMachineArn=f"{machine}:1", definition=definition("v9"))
    assert error_of(refused) == ("StateMachineDoesNotExist", f"State Machine Does Not Exist: '{machine}:1'")


def test_describe_lists_each_states_variable_references(local_cloud: LocalCloud):
    # Given a machine whose states read workflow variables
    states = {
        "Remember": {"Type": "Pass", "Assign": {"greeting": "hi", "name": "you"}, "Next": "Greet"},
        "Greet": {
            "Type": "Pass",
            "Parameters": {"text.$": "States.Format('{} {}', $greeting, $name)"},
            "End": True,
        },
    }
    arn = local_cloud.sfn.create_state_machine(
        name="refs", definition=json.dumps({"StartAt": "Remember", "States": states}), roleArn=ROLE
    )["stateMachineArn"]
    execution = local_cloud.run(arn, {})
    # Then both descriptions name the variables each state reads
    expected = {"Greet": ["greeting", "name"]}
    assert local_cloud.sfn.describe_state_machine(stateMachineArn=arn)["variableReferences"] == expected
    assert (
        local_cloud.sfn.describe_state_machine_for_execution(executionArn=execution.arn)["variableReferences"]
        == expected
    )


def test_a_version_is_not_a_resource_to_tag(local_cloud: LocalCloud, machine: str):
    # When version 1 is tagged or untagged, then it is not found; the machine itself is tagged
    for operation, request in (
        ("tag_resource", {"tags": [{"key": "team", "value": "payments"}]}),
        ("untag_resource", {"tagKeys": ["team"]}),
    ):
        with pytest.raises(ClientError) as refused:
            getattr(local_cloud.sfn, operation)(resourceArn=f"{machine}:1", **request)
        assert error_of(refused) == ("ResourceNotFound", f"Resource not found: '{machine}:1'")
    local_cloud.sfn.tag_resource(resourceArn=machine, tags=[{"key": "team", "value": "payments"}])
    assert local_cloud.sfn.list_tags_for_resource(resourceArn=machine)["tags"] == [
        {"key": "team", "value": "payments"}
    ]
