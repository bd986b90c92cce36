"""The Python examples of the documentation, found in its Markdown: each fenced ``python`` block is
one example, run as it stands unless the line before it says why not (``<!-- not run: reason -->``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests import REPOSITORY_ROOT

DOCS = REPOSITORY_ROOT / "docs"
PAGES = sorted([REPOSITORY_ROOT / "README.md", *DOCS.rglob("*.md")])
FENCE = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\s*$")


@dataclass(frozen=True)
class Example:
    page: Path
    line: int
    code: str
    not_run_because: str | None

    @property
    def name(self) -> str:
        relative = self.page.relative_to(REPOSITORY_ROOT).with_suffix("")
        return f"{'_'.join(relative.parts)}_line{self.line}".replace("-", "_")

    @property
    def is_test_module(self) -> bool:
        """Blocks that define pytest tests run as test modules; the rest run as scripts."""
        return re.search(r"^def test_", self.code, re.MULTILINE) is not None


def examples() -> list[Example]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            reason = NOT_RUN.search(before)
            line = text.count("\n", 0, match.start()) + 1
            found.append(Example(page, line, match.group(1), reason.group(1) if reason else None))
    return found
