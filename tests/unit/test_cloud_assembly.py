"""Reading a cloud assembly and planning what the engine deploys of a template (issue 29)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from sfn_idempotency.local.apps.cloud_assembly import FileAsset, read_assembly, select
from sfn_idempotency.local.apps.deployed import CloudAssemblyError, DeploymentError
from sfn_idempotency.local.apps.deployment_plan import needs, plan


def function(runtime: str = "python3.12", **properties: Any) -> dict[str, Any]:
    return {
        "Type": "AWS::Lambda::Function",
        "Properties": {"Runtime": runtime, "Handler": "index.handler", **properties},
    }


def machine_using(logical_id: str) -> dict[str, Any]:
    definition = {"Fn::Join": ["", ['{"Resource":"', {"Fn::GetAtt": [logical_id, "Arn"]}, '"}']]}
    return {"Type": "AWS::StepFunctions::StateMachine", "Properties": {"DefinitionString": definition}}


def test_references_are_found_in_every_intrinsic():
    resource = {
        "Properties": {
            "A": {"Ref": "Table"},
            "B": {"Fn::GetAtt": ["Function", "Arn"]},
            "C": {"Fn::GetAtt": "Queue.Arn"},
            "D": {"Fn::Sub": "${Topic}-${Bucket.Arn}-${AWS::Region}-${!Literal}"},
            "E": {"Fn::Sub": ["${Local}-${Role}", {"Local": {"Ref": "Key"}}]},
        },
        "DependsOn": ["Policy"],
    }
    assert needs(resource) == {
        "Table",
        "Function",
        "Queue",
        "Topic",
        "Bucket",
        "AWS::Region",
        "Role",
        "Key",
        "Policy",
    }


def test_what_the_engine_cannot_run_is_skipped_with_its_reason():
    # Given a template with a custom resource, an ECS cluster and CDK's metadata
    template = {
        "Resources": {
            "Charge": function(),
            "Retention": {
                "Type": "Custom::LogRetention",
                "Properties": {"ServiceToken": {"Fn::GetAtt": ["Provider", "Arn"]}},
            },
            "Provider": function("java21"),
            "Cluster": {"Type": "AWS::ECS::Cluster"},
            "CDKMetadata": {"Type": "AWS::CDK::Metadata"},
        }
    }
    # When it is planned
    planned = plan(template)
    # Then each is skipped once, with why; the metadata silently; the Python function kept
    reasons = {skipped.logical_id: (skipped.resource_type, skipped.reason) for skipped in planned.skipped}
    assert reasons == {
        "Retention": ("Custom::LogRetention", "custom resources' providers are not run by the engine"),
        "Provider": (
            "AWS::Lambda::Function",
            "runtime java21: only Python and Node.js zip functions run in the engine",
        ),
        "Cluster": ("AWS::ECS::Cluster", "the engine does not run this resource type"),
    }
    assert list(planned.template["Resources"]) == ["Charge"]


def test_a_resource_that_needs_a_skipped_one_fails_naming_both():
    template = {"Resources": {"Java": function("java21"), "Flow": machine_using("Java")}}
    with pytest.raises(DeploymentError) as refused:
        plan(template)
    assert str(refused.value) == (
        "Flow (AWS::StepFunctions::StateMachine) needs Java (AWS::Lambda::Function), which the engine "
        "cannot deploy: runtime java21: only Python and Node.js zip functions run in the engine"
    )


def test_an_image_function_is_refused_by_name():
    template = {
        "Resources": {
            "Image": {"Type": "AWS::Lambda::Function", "Properties": {"PackageType": "Image"}},
            "Flow": machine_using("Image"),
        }
    }
    with pytest.raises(DeploymentError, match=r"Image .*container image function"):
        plan(template)


def test_permissions_about_a_skipped_resource_go_with_it_and_so_does_the_order():
    # Given a policy that grants access to a skipped service, and a function ordered after it
    template = {
        "Resources": {
            "Service": {"Type": "AWS::ECS::Service"},
            "Grant": {
                "Type": "AWS::IAM::Policy",
                "Properties": {"PolicyDocument": {"Resource": {"Ref": "Service"}}},
            },
            "Permission": {
                "Type": "AWS::Lambda::Permission",
                "Properties": {"FunctionName": {"Ref": "Grant"}},
            },
            "Charge": {**function(), "DependsOn": ["Grant", "Role"]},
            "Role": {"Type": "AWS::IAM::Role"},
        },
        "Outputs": {"ServiceName": {"Value": {"Ref": "Service"}}, "RoleName": {"Value": {"Ref": "Role"}}},
    }
    planned = plan(template)
    # Then the policy and the permission on it are skipped, and the function no longer waits for them
    assert [s.logical_id for s in planned.skipped][:3] == ["Service", "Grant", "Permission"]
    assert planned.template["Resources"]["Charge"]["DependsOn"] == ["Role"]
    # And an output about the skipped service goes too, with a line of its own
    assert list(planned.template["Outputs"]) == ["RoleName"]
    (output,) = planned.skipped[3:]
    assert output.line("Shop") == "Shop: skipped ServiceName (Output): it refers to Service, which is skipped"


def test_ordered_after_a_skipped_resource_that_is_not_a_permission_fails():
    template = {
        "Resources": {
            "Cluster": {"Type": "AWS::ECS::Cluster"},
            "Charge": {**function(), "DependsOn": "Cluster"},
        }
    }
    with pytest.raises(
        DeploymentError, match=r"^Charge \(AWS::Lambda::Function\) needs Cluster \(AWS::ECS::Cluster\)"
    ):
        plan(template)


# -- the assembly ---------------------------------------------------------------------------
def write_assembly(root: Path, artifacts: dict[str, Any], templates: dict[str, Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "manifest.json").write_text(json.dumps({"version": "55.0.0", "artifacts": artifacts}))
    for name, template in templates.items():
        (root / name).write_text(json.dumps(template))
    return root


def stack(template_file: str, *dependencies: str, **properties: Any) -> dict[str, Any]:
    return {
        "type": "aws:cloudformation:stack",
        "properties": {"templateFile": template_file, **properties},
        "dependencies": list(dependencies),
    }


def test_stacks_come_after_the_stacks_they_depend_on_nested_stages_included(tmp_path: Path):
    # Given an app whose Api stack depends on Data, and a stage with its own assembly
    write_assembly(
        tmp_path / "assembly-Prod",
        {"ProdWorker": {**stack("ProdWorker.template.json"), "displayName": "Prod/Worker"}},
        {"ProdWorker.template.json": {"Resources": {}}},
    )
    write_assembly(
        tmp_path,
        {
            "Api": stack("Api.template.json", "Data", "Api.assets"),
            "Api.assets": {"type": "cdk:asset-manifest", "properties": {"file": "Api.assets.json"}},
            "Data": stack("Data.template.json", stackName="data-stack"),
            "Prod": {"type": "cdk:cloud-assembly", "properties": {"directoryName": "assembly-Prod"}},
            "Tree": {"type": "cdk:tree", "properties": {"file": "tree.json"}},
        },
        {"Api.template.json": {"Resources": {}}, "Data.template.json": {"Resources": {}}},
    )
    # When it is read
    stacks = read_assembly(tmp_path)
    # Then every stack is there, each after its dependencies, under its own stack name
    assert [s.stack_name for s in stacks] == ["data-stack", "Api", "ProdWorker"]
    api = stacks[1]
    assert api.asset_manifests == (tmp_path / "Api.assets.json",)
    # And a selection brings the stacks it depends on, and takes globs and display paths
    assert [s.stack_name for s in select(stacks, ["Api"])] == ["data-stack", "Api"]
    assert [s.stack_name for s in select(stacks, ["Prod/*"])] == ["ProdWorker"]
    assert len(select(stacks, [])) == 3


def test_a_selection_that_names_nothing_lists_the_stacks(tmp_path: Path):
    write_assembly(tmp_path, {"Api": stack("Api.template.json")}, {"Api.template.json": {"Resources": {}}})
    with pytest.raises(CloudAssemblyError, match=r"^no stack matches Web \(the assembly has: Api\)$"):
        select(read_assembly(tmp_path), ["Web"])


def test_a_folder_without_a_manifest_says_to_synth(tmp_path: Path):
    with pytest.raises(CloudAssemblyError, match=r"has no manifest.json \(run cdk synth\)"):
        read_assembly(tmp_path)


def test_construct_paths_come_from_the_stacks_metadata(tmp_path: Path):
    metadata = {"/Api/Orders/Table/Resource": [{"type": "aws:cdk:logicalId", "data": "OrdersTable1A2B"}]}
    (tmp_path / "Api.metadata.json").write_text(json.dumps(metadata))
    artifact = {**stack("Api.template.json"), "additionalMetadataFile": "Api.metadata.json"}
    write_assembly(tmp_path, {"Api": artifact}, {"Api.template.json": {"Resources": {}}})
    (api,) = read_assembly(tmp_path)
    assert api.paths == {"OrdersTable1A2B": "Api/Orders/Table/Resource"}


def test_a_folder_asset_is_zipped_with_paths_relative_to_it(tmp_path: Path):
    (tmp_path / "asset" / "billing").mkdir(parents=True)
    (tmp_path / "asset" / "billing" / "charge.py").write_text("def handler(e, c): return 1\n")
    asset = FileAsset(tmp_path / "asset", "zip", "bucket", "key.zip")
    names = zipfile.ZipFile(io.BytesIO(asset.body())).namelist()
    assert names == ["billing/charge.py"]
