"""Rendering an ASL file's ``${Name}`` placeholders, with CDK's definition_substitutions semantics."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

PLACEHOLDER = re.compile(r"\$\{([A-Za-z][A-Za-z0-9_]*)\}")


class DefinitionError(ValueError):
    """The ASL file and its substitutions do not fit together."""


def placeholders(definition: str) -> set[str]:
    return set(PLACEHOLDER.findall(definition))


def render(asl_path: Path, substitutions: Mapping[str, str]) -> str:
    """The definition with every placeholder replaced; a missing or unused name is an error."""
    template = asl_path.read_text(encoding="utf-8")
    needed = placeholders(template)
    missing = sorted(needed - substitutions.keys())
    unused = sorted(substitutions.keys() - needed)
    if missing or unused:
        raise DefinitionError(
            f"{asl_path.name}: missing substitutions {missing}, unused substitutions {unused}"
        )
    # Values land inside JSON strings: escape them as JSON would.
    rendered = PLACEHOLDER.sub(lambda match: json.dumps(substitutions[match[1]])[1:-1], template)
    json.loads(rendered)
    return rendered
