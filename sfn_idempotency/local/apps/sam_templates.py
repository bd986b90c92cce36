"""An AWS SAM (or plain CloudFormation) template, locally: packaged as ``sam deploy`` packages it,
translated by AWS's own transform (aws-sam-translator, offline), then deployed through moto's
CloudFormation like a CDK stack (sfn_idempotency.local.apps.cloud_assembly).

What a deployment does, in the SAM CLI's order:
1. read the template (YAML with CloudFormation's short forms, or JSON); a folder means its
   ``template.yaml``, ``template.yml`` or ``template.json``;
2. package what names local paths, as ``sam package`` does: a function's ``CodeUri`` and a
   layer's ``ContentUri`` (folders zipped, a ``.zip`` as it is) go to an artifacts bucket; a state
   machine's ``DefinitionUri`` and an API's ``DefinitionUri`` are read into the template;
3. translate ``AWS::Serverless::*`` with the parameters (``--parameter-overrides``): ``Globals``,
   ``Events``, ``Policies`` and implicit APIs are the transform's own work;
4. deploy the result: what the engine cannot run is skipped or refused, as for a CDK app.

``transformed`` does 1 to 3 in one go, and answers what the deployment (4) needs: the stack's
name, the CloudFormation template, its parameter values and the artifacts to upload with it.

Run ``sam build`` first when a function needs its dependencies installed, and give the template it
writes (``.aws-sam/build/template.yaml``): its ``CodeUri`` folders are the built ones.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sfn_idempotency.local.languages.documents import YAMLError, parse_document

SAM_TRANSFORM = "AWS::Serverless-2016-10-31"
TEMPLATE_NAMES = ("template.yaml", "template.yml", "template.json")
ARTIFACTS_BUCKET = "sfn-local-sam-artifacts-{account}-{region}"
STACK_NAME_PATTERN = re.compile(r"[^A-Za-z0-9-]+")
DEFAULT_STACK_NAME = "sam-app"  # the SAM CLI's own default in `sam init`
# A parameter override as the SAM CLI spells it: `Key=Value` or `ParameterKey=Key,ParameterValue=Value`.
_LONG_FORM = re.compile(r"ParameterKey=([^,]+),ParameterValue=(.*)")
_SHORT_FORMS = re.compile(r"""([A-Za-z0-9]+)=("[^"]*"|'[^']*'|\S*)""")


class TemplateError(ValueError):
    """The template cannot be read, packaged or translated; the message says where."""


# -- reading ----------------------------------------------------------------------------------
def template_file(path: Path) -> Path:
    """The template a path names: the file, or a folder's ``template.yaml`` (or .yml, .json)."""
    path = Path(path)
    if path.is_dir():
        for name in TEMPLATE_NAMES:
            if (path / name).is_file():
                return path / name
        raise TemplateError(f"{path} has no template ({', '.join(TEMPLATE_NAMES)})")
    if not path.is_file():
        raise TemplateError(f"{path}: no such template")
    return path


def load_template(path: Path) -> dict[str, Any]:
    file = template_file(path)
    try:
        document = parse_document(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, YAMLError) as error:
        raise TemplateError(f"{file}: not a template: {error}") from None
    sections = document if isinstance(document, dict) else {}
    empty = next((name for name, value in sections.items() if value is None), None)
    if empty is not None:  # `Parameters:` with nothing under it: CloudFormation refuses the stack
        raise TemplateError(
            f"{file}: [/{empty}] 'null' values are not allowed in templates (give {empty} a value, "
            f"or leave it out)"
        )
    if not isinstance(document, dict) or not isinstance(document.get("Resources"), dict):
        raise TemplateError(f"{file}: not a template (it has no Resources)")
    return document


def is_sam(template: Mapping[str, Any]) -> bool:
    transform = template.get("Transform", [])
    return SAM_TRANSFORM in ([transform] if isinstance(transform, str) else list(transform))


def stack_name_for(file: Path) -> str:
    """The template's folder name, as a stack name (``sam deploy --guided`` proposes one so)."""
    name = STACK_NAME_PATTERN.sub("-", file.resolve().parent.name).strip("-")
    return name if name[:1].isalpha() else DEFAULT_STACK_NAME


def parameter_overrides(values: Sequence[str]) -> dict[str, str]:
    """``--parameter-overrides`` as the SAM CLI reads it: ``Key=Value`` pairs (several in one
    argument, space-separated, quotes allowed), or ``ParameterKey=Key,ParameterValue=Value``."""
    overrides: dict[str, str] = {}
    for value in values:
        long_form = _LONG_FORM.fullmatch(value.strip())
        if long_form:
            overrides[long_form.group(1)] = long_form.group(2)
            continue
        pairs = _SHORT_FORMS.findall(value)
        if not pairs:
            raise TemplateError(f"--parameter-overrides: {value!r} is not Key=Value")
        for key, text in pairs:
            overrides[key] = text[1:-1] if text[:1] in "\"'" and text[-1:] == text[:1] else text
    return overrides


# -- packaging --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Artifact:
    """What ``sam package`` uploads: a function's or layer's code, zipped, into the artifacts bucket."""

    bucket: str
    key: str
    data: bytes

    def body(self) -> bytes:
        return self.data


@dataclass(frozen=True)
class Packaged:
    template: dict[str, Any]
    artifacts: tuple[Artifact, ...]


# Where SAM resources name local code or documents: (resource type, property, how it is packaged).
# A state machine's definition file is uploaded as it is, as ``sam package`` uploads it: CloudFormation
# puts its ``DefinitionSubstitutions`` into the file's text before it reads the JSON or YAML, so
# ``Seconds: ${Timeout}`` in a YAML definition becomes a number.
_CODE = "code"
_FILE = "file"
_DOCUMENT = "document"
_LOCAL_PATHS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "AWS::Serverless::Function": (("CodeUri", "CodeUri", _CODE),),
    "AWS::Serverless::LayerVersion": (("ContentUri", "ContentUri", _CODE),),
    "AWS::Serverless::StateMachine": (("DefinitionUri", "DefinitionUri", _FILE),),
    "AWS::Serverless::Api": (("DefinitionUri", "DefinitionBody", _DOCUMENT),),
    "AWS::Serverless::HttpApi": (("DefinitionUri", "DefinitionBody", _DOCUMENT),),
}
_GLOBAL_SECTIONS = {"Function": "AWS::Serverless::Function"}


def package(template: Mapping[str, Any], base: Path, bucket: str) -> Packaged:
    """The template with its local paths replaced as ``sam package`` replaces them: code by an
    ``s3://`` URI in ``bucket``, a definition by the document itself, and each ``AWS::Include`` of
    a local file by the file's document, as CloudFormation's transform puts it in."""
    document: dict[str, Any] = _included(json.loads(json.dumps(template)), base, "")
    artifacts: dict[str, Artifact] = {}
    sections = [
        (f"Resources.{logical_id}", resource.get("Type"), resource.setdefault("Properties", {}))
        for logical_id, resource in document["Resources"].items()
        if isinstance(resource, dict)
    ]
    sections += [
        (f"Globals.{name}", resource_type, document.get("Globals", {}).get(name))
        for name, resource_type in _GLOBAL_SECTIONS.items()
        if isinstance(document.get("Globals", {}).get(name), dict)
    ]
    for where, resource_type, properties in sections:
        for source_property, target_property, kind in _LOCAL_PATHS.get(str(resource_type), ()):
            value = properties.get(source_property)
            if not isinstance(value, str) or value.startswith("s3://"):
                continue
            path = (base / value).resolve()
            if not path.exists():
                raise TemplateError(f"{where}.{source_property}: {value} does not exist (under {base})")
            if kind in (_CODE, _FILE):
                if kind == _FILE and not path.is_file():
                    raise TemplateError(f"{where}.{source_property}: {value} is not a file (under {base})")
                artifact = _code_artifact(path, bucket)
                artifacts[artifact.key] = artifact
                properties[source_property] = f"s3://{bucket}/{artifact.key}"
            else:
                properties.pop(source_property)
                properties[target_property] = _read_document(path, where)
    return Packaged(document, tuple(artifacts.values()))


_INCLUDE = "AWS::Include"


def _included(value: Any, base: Path, where: str) -> Any:
    """``value`` with every ``Fn::Transform`` of ``AWS::Include`` whose ``Location`` is a local file
    replaced by that file's JSON or YAML document (an ``s3://`` location stays: nothing reads it)."""
    if isinstance(value, list):
        return [_included(item, base, f"{where}[{index}]") for index, item in enumerate(value)]
    if not isinstance(value, dict):
        return value
    transform = value.get("Fn::Transform") if len(value) == 1 else None
    if isinstance(transform, dict) and transform.get("Name") == _INCLUDE:
        location = (transform.get("Parameters") or {}).get("Location")
        if isinstance(location, str) and "://" not in location:
            path = (base / location).resolve()
            if not path.is_file():
                raise TemplateError(
                    f"{where}: the {_INCLUDE} location {location} does not exist (under {base})"
                )
            return _included(_read_document(path, where), path.parent, where)
    return {key: _included(item, base, f"{where}.{key}".lstrip(".")) for key, item in value.items()}


def _code_artifact(path: Path, bucket: str) -> Artifact:
    """A folder zipped (as the SAM CLI zips it), a file as it is; named by its content's hash."""
    if path.is_file():
        body = path.read_bytes()
    else:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for file in sorted(path.rglob("*")):
                if file.is_file():
                    archive.write(file, file.relative_to(path).as_posix())
        body = buffer.getvalue()
    return Artifact(bucket, key=hashlib.md5(body, usedforsecurity=False).hexdigest(), data=body)


def _read_document(path: Path, where: str) -> Any:
    try:
        return parse_document(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, YAMLError) as error:
        raise TemplateError(f"{where}: {path} cannot be read: {error}") from None


_NAME_PROPERTIES = {
    "AWS::Serverless::StateMachine": "Name",
    "AWS::StepFunctions::StateMachine": "StateMachineName",
}


def named(template: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """The template with its state machines named as ``names`` says (logical id -> name), as their
    ``Name`` property would name them: how a mock file's ``StateMachines`` entry finds its machine."""
    document: dict[str, Any] = json.loads(json.dumps(template))
    resources = document["Resources"]
    for logical_id, name in names.items():
        resource = resources.get(logical_id)
        prop = _NAME_PROPERTIES.get(str((resource or {}).get("Type")))
        if prop is None:
            machines = [key for key, value in resources.items() if value.get("Type") in _NAME_PROPERTIES]
            raise TemplateError(
                f"{logical_id} is not a state machine of the template (it has: {', '.join(machines) or 'none'})"
            )
        resource.setdefault("Properties", {})[prop] = name
    return document


def parse_names(values: Sequence[str]) -> dict[str, str]:
    """``LOGICAL_ID=NAME`` pairs."""
    names = {}
    for value in values:
        logical_id, sep, name = value.partition("=")
        if not sep or not logical_id or not name:
            raise TemplateError(f"{value!r} is not LOGICAL_ID=NAME")
        names[logical_id] = name
    return names


def undeclared(template: Mapping[str, Any], parameters: Mapping[str, str]) -> None:
    """Refuse overrides the template does not declare (CloudFormation would refuse the stack)."""
    declared = set(template.get("Parameters", {}))
    unknown = sorted(set(parameters) - declared)
    if unknown:
        raise TemplateError(
            f"--parameter-overrides names {', '.join(unknown)}, which the template does not declare "
            f"(it declares: {', '.join(sorted(declared)) or 'none'})"
        )


def unset(template: Mapping[str, Any], parameters: Mapping[str, str]) -> None:
    """Refuse, naming every one, parameters without a default that no override gives a value
    (CloudFormation refuses the stack at the first: "Missing parameter X")."""
    declared = template.get("Parameters") or {}
    missing = sorted(
        name
        for name, parameter in declared.items()
        if name not in parameters and not (isinstance(parameter, dict) and "Default" in parameter)
    )
    if missing:
        example = " ".join(f"{name}=VALUE" for name in missing)
        raise TemplateError(
            f"the template's parameter{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"{'have' if len(missing) > 1 else 'has'} no default and no value: give "
            f"{'them' if len(missing) > 1 else 'it'} one with --parameter-overrides {example} "
            "(parameters= in deploy_template)"
        )


def fingerprint(template: Path) -> tuple[tuple[str, int, int], ...]:
    """What changes when the template or its code does: every file under the template's folder,
    but hidden folders (``.aws-sam``, ``.git``) and ``node_modules`` (``--watch`` compares these)."""
    base = template.parent
    files = [
        path
        for path in sorted(base.rglob("*"))
        if path.is_file()
        and not any(
            part.startswith(".") or part == "node_modules" for part in path.relative_to(base).parts[:-1]
        )
    ]
    return tuple(
        (str(path.relative_to(base)), path.stat().st_mtime_ns, path.stat().st_size) for path in files
    )


# -- translating ------------------------------------------------------------------------------
def translate(
    template: dict[str, Any], parameters: Mapping[str, str], region: str, iam: Any
) -> dict[str, Any]:
    """``AWS::Serverless::*`` as CloudFormation, by aws-sam-translator; a template without the SAM
    transform as it is. ``iam``: a client whose ListPolicies names AWS's managed policies."""
    if not is_sam(template):
        return template
    import boto3
    from samtranslator.model.exceptions import InvalidDocumentException
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.managed_policy_translator import ManagedPolicyLoader
    from samtranslator.translator.translator import Translator
    from samtranslator.utils.py27hash_fix import (
        to_py27_compatible_template,
        undo_mark_unicode_str_in_template,
    )

    for chatter in _TRANSLATOR_CHATTER:  # its notes to AWS's own operators, not to the user
        logging.getLogger(chatter).setLevel(logging.ERROR)
    values = dict(parameters)
    to_py27_compatible_template(template, values)
    translator = Translator(None, Parser(), boto_session=boto3.Session(region_name=region))
    policies = ManagedPolicyLoader(iam)
    try:
        translated = translator.translate(
            template, parameter_values=values, get_managed_policy_map=policies.load
        )
    except InvalidDocumentException as error:
        causes = "; ".join(cause.message for cause in error.causes)
        raise TemplateError(f"the SAM transform refused the template: {causes}") from None
    result: dict[str, Any] = undo_mark_unicode_str_in_template(translated)
    return result


# The transform's loggers that warn of its own configuration (a feature toggle it has no config
# for, metrics nobody publishes): not the template's problem, so not printed beside serve's lines.
_TRANSLATOR_CHATTER = ("samtranslator.feature_toggle", "samtranslator.metrics")


def artifacts_bucket(account: str, region: str) -> str:
    return ARTIFACTS_BUCKET.format(account=account, region=region)


@dataclass(frozen=True)
class TransformedTemplate:
    """A template read, packaged and transformed: what ``sam deploy`` hands CloudFormation."""

    stack_name: str
    template: dict[str, Any]  # CloudFormation, after the SAM transform
    parameters: dict[str, str]
    artifacts: tuple[Artifact, ...]  # to upload before the stack is made


def transformed(
    path: Path,
    *,
    account: str,
    region: str,
    iam: Any,
    stack_name: str | None = None,
    parameters: Mapping[str, str] | None = None,
    state_machine_names: Mapping[str, str] | None = None,
) -> TransformedTemplate:
    """Read the template ``path`` names, package it into the account's artifacts bucket and apply
    the SAM transform with ``parameters``; every refusal (a missing file, an undeclared or unset
    parameter, an invalid SAM resource) before anything is made. The stack is ``stack_name``, or
    the template's folder; ``state_machine_names`` names state machines (logical id -> name)."""
    file = template_file(Path(path))
    values = dict(parameters or {})
    document = named(load_template(file), state_machine_names or {})
    packaged = package(document, file.parent, artifacts_bucket(account, region))
    undeclared(packaged.template, values)
    unset(packaged.template, values)
    return TransformedTemplate(
        stack_name=stack_name or stack_name_for(file),
        template=translate(packaged.template, values, region, iam),
        parameters=values,
        artifacts=packaged.artifacts,
    )
