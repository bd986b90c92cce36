"""JSON or YAML documents as AWS's tools read them: templates, state machine definitions and
included files. The SAM CLI (its ``yamlhelper``) and CloudFormation's Step Functions resource
provider both try JSON first, then YAML; CloudFormation's short forms (``!Ref X`` is
``{"Ref": "X"}``) are YAML tags, and a timestamp stays the text it was written as, so an IAM
policy's unquoted ``Version: 2012-10-17`` is the string CloudFormation sees, not a date."""

from __future__ import annotations

import json
from typing import Any

import yaml

YAMLError = yaml.YAMLError


class _Loader(yaml.SafeLoader):  # type: ignore[misc]
    """YAML with CloudFormation's short forms; timestamps as text."""


def _short_form(loader: yaml.SafeLoader, name: str, node: yaml.Node) -> dict[str, Any]:
    """``name``: the tag after its ``!``."""
    key = "Ref" if name == "Ref" else "Condition" if name == "Condition" else f"Fn::{name}"
    value: Any
    if isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    elif isinstance(node, yaml.MappingNode):
        value = loader.construct_mapping(node, deep=True)
    else:
        value = loader.construct_scalar(node)
        if name == "GetAtt":
            value = str(value).split(".", 1)
    return {key: value}


def _timestamp_as_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


_Loader.add_multi_constructor("!", _short_form)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)


def parse_yaml(text: str) -> Any:
    """YAML with CloudFormation's short forms; raises ``YAMLError``."""
    return yaml.load(text, Loader=_Loader)


def parse_document(text: str) -> Any:
    """JSON first (a tab is fine in JSON, never in YAML), then YAML; raises ``YAMLError``."""
    try:
        return json.loads(text)
    except ValueError:
        return parse_yaml(text)
