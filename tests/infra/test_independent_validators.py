"""Independent judges of what our own tests cannot see: asl-validator (npm) over every definition,
and cfn-lint (PyPI) over the synthesized templates with the definitions inlined (CDK uploads them
to S3, where cfn-lint would never look). Each has a plant: a deliberate mistake it must catch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sfn_idempotency.flow import inline_workflows, provable_key
from sfn_idempotency.flow.definitions import placeholders, render, with_business_step
from sfn_idempotency.flow.resources import IDEMPOTENCY_ASL, STATEMACHINES_DIR
from sfn_idempotency.settings import example_settings
from tests import REPOSITORY_ROOT
from tests.business_steps import SQS_SEND_STEP
from tests.infra.conftest import Synthesized

ASL_VALIDATOR = REPOSITORY_ROOT / "node_modules" / ".bin" / "asl-validator"
CFN_LINT = Path(sys.executable).parent / "cfn-lint"  # installed by the dev extra
CFN_LINT_DEADLINE_SECONDS = 300
# cfn-lint warnings reviewed and accepted, with the reason; any other warning fails the test.
REVIEWED_CFN_LINT_WARNINGS = {
    "W3005": "CDK adds a DependsOn on a role that the resource's GetAtt already implies; CloudFormation "
    "treats the duplicate dependency as one, and the order it enforces is the one we want.",
}


def dummy_value(placeholder: str) -> str:
    """A value of the right shape for each placeholder the ASL files use (the provable key's: the
    example's own)."""
    provable = provable_key.substitutions(
        example_settings(),
        f"${{{provable_key.PLACEHOLDER}}} ${{{provable_key.ENDED_EXECUTION_PLACEHOLDER}}}",
    )
    if placeholder in provable:
        return provable[placeholder]
    if placeholder.endswith("TableName"):
        return "idempotency-table"
    if placeholder.endswith("StateMachineArn"):
        return f"arn:aws:states:us-east-1:123456789012:stateMachine:{placeholder}"
    if placeholder.endswith("QueueUrl"):
        return f"https://sqs.us-east-1.amazonaws.com/123456789012/{placeholder}"
    return f"arn:aws:lambda:us-east-1:123456789012:function:{placeholder}"


def render_provable_key(text: str) -> str:
    return provable_key.written_in(text, example_settings())


def rendered(text: str) -> str:
    return render(text, {name: dummy_value(name) for name in placeholders(text)})


def every_definition() -> dict[str, str]:
    """Each ASL file as committed and as rendered, and the flow around a non-Lambda business step."""
    definitions: dict[str, str] = {}
    for path in sorted(STATEMACHINES_DIR.glob("*.asl.json")):
        text = path.read_text(encoding="utf-8")
        # As committed, but for the provable key's placeholders, which stand inside JSONata
        # expressions (no JSONata reader takes them): the build writes the settings in there.
        definitions[path.name] = render_provable_key(text)
        definitions[f"rendered-{path.name}"] = rendered(text)
    around_sqs = with_business_step(IDEMPOTENCY_ASL.read_text(encoding="utf-8"), SQS_SEND_STEP)
    definitions["rendered-idempotency-around-sqs.asl.json"] = rendered(around_sqs)
    settings = example_settings({})
    for name, wrapped in (
        ("order-pipeline-inline", inline_workflows.order_pipeline(settings)),
        ("sqs-batch", inline_workflows.sqs_batch(settings)),
    ):
        definitions[f"wrapped-{name}.asl.json"] = wrapped
        definitions[f"rendered-wrapped-{name}.asl.json"] = rendered(wrapped)
    return definitions


def asl_validator(definitions: dict[str, str], folder: Path) -> subprocess.CompletedProcess[str]:
    assert ASL_VALIDATOR.is_file(), "asl-validator is not installed: run `npm ci` (make test does)"
    arguments: list[str] = []
    for name, text in definitions.items():
        (folder / name).write_text(text, encoding="utf-8")
        arguments += ["--json-path", str(folder / name)]
    return subprocess.run(
        [str(ASL_VALIDATOR), *arguments], capture_output=True, text=True, check=False, timeout=120
    )


def test_asl_validator_accepts_every_definition(tmp_path: Path):
    definitions = every_definition()
    assert len(definitions) == 2 * len(list(STATEMACHINES_DIR.glob("*.asl.json"))) + 1 + 4
    result = asl_validator(definitions, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("is valid") == len(definitions)


def test_asl_validator_catches_a_planted_mistake(tmp_path: Path):
    # Given the flow with Claim pointing at a state that does not exist
    document = json.loads(rendered(IDEMPOTENCY_ASL.read_text(encoding="utf-8")))
    document["States"]["Claim"]["Next"] = "Nowhere"
    # Then the validator refuses it (so its silence above means something)
    result = asl_validator({"planted.asl.json": json.dumps(document)}, tmp_path)
    assert result.returncode != 0
    assert "Nowhere" in result.stdout + result.stderr


def inline_definitions(template: dict[str, Any], assembly_dir: Path) -> tuple[dict[str, Any], int]:
    """The template with every state machine's S3-staged definition put in DefinitionString (its
    DefinitionSubstitutions apply to either), as CloudFormation would read it; and how many moved."""
    inlined = json.loads(json.dumps(template))
    moved = 0
    for resource in inlined["Resources"].values():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::StepFunctions::StateMachine" and "DefinitionS3Location" in properties:
            key = properties.pop("DefinitionS3Location")["Key"]
            properties["DefinitionString"] = (assembly_dir / f"asset.{key}").read_text(encoding="utf-8")
            moved += 1
    return inlined, moved


def cfn_lint(paths: list[Path]) -> list[dict[str, Any]]:
    result = subprocess.run(
        [str(CFN_LINT), "--format", "json", *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
        timeout=CFN_LINT_DEADLINE_SECONDS,
    )
    assert result.stdout.strip(), result.stderr
    matches: list[dict[str, Any]] = json.loads(result.stdout)
    return matches


@pytest.fixture(scope="module")
def inlined_templates(synthesized: Synthesized, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("inlined")
    paths = []
    for name, template in (
        ("service", synthesized.service),
        ("shared", synthesized.shared),
        ("inline", synthesized.inline),
    ):
        inlined, moved = inline_definitions(template.to_json(), synthesized.assembly_dir)
        # The inline stack's definitions are chains (DefinitionString already); the others' are files
        assert moved > 0 or name == "inline", f"{name}: no definition was staged in S3; nothing was inlined"
        path = folder / f"{name}.template.json"
        path.write_text(json.dumps(inlined), encoding="utf-8")
        paths.append(path)
    return paths


def test_cfn_lint_finds_no_error_and_no_unreviewed_warning(inlined_templates: list[Path]):
    matches = cfn_lint(inlined_templates)
    errors = [m for m in matches if m["Level"] == "Error"]
    unreviewed = [
        m for m in matches if m["Level"] != "Error" and m["Rule"]["Id"] not in REVIEWED_CFN_LINT_WARNINGS
    ]
    assert errors == []
    assert unreviewed == []


def test_cfn_lint_reads_the_inlined_definitions(inlined_templates: list[Path], tmp_path: Path):
    # Given the shared stack with one inlined definition broken (a state type that does not exist)
    template = json.loads(inlined_templates[1].read_text(encoding="utf-8"))
    machine = next(
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::StepFunctions::StateMachine"
        and isinstance(r["Properties"].get("DefinitionString"), str)
    )
    definition = json.loads(machine["Properties"]["DefinitionString"])
    definition["States"]["Claim"]["Type"] = "Tusk"
    machine["Properties"]["DefinitionString"] = json.dumps(definition)
    planted = tmp_path / "planted.template.json"
    planted.write_text(json.dumps(template), encoding="utf-8")
    # Then cfn-lint reports it as an error
    errors = [m for m in cfn_lint([planted]) if m["Level"] == "Error"]
    assert any("Tusk" in m["Message"] for m in errors), errors
