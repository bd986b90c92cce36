"""EventBridge patterns from events/, shared by the CDK rules and the local engine."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def load_pattern(path: Path, detail: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The pattern in ``path``, with ``detail`` fields added (e.g. the one state machine to watch)."""
    pattern: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if detail:
        pattern["detail"] = {**pattern.get("detail", {}), **detail}
    return pattern
