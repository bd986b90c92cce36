"""The conformance scores in the README and on the score page, written from harness runs, never by hand.

    python -m scripts.conformance_scores --run        # run every group of ../shared/conformance, then write
    python -m scripts.conformance_scores              # write from the runs already under --work

Each group runs the harness (``run.sh``) in one work folder, ``--work``/harness (its installs are
made once), and its per-test results (``results-engine.jsonl``) are kept as ``--work``/<group>.jsonl,
counted as the harness counts them: a test passes when its whole snapshot verifies
(``superseded``: every difference is a recording that a later one contradicts).
The table replaces what stands between the markers below, in README.md and docs/fidelity/conformance.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT.parent / "shared" / "conformance" / "run.sh"
PAGES = (ROOT / "README.md", ROOT / "docs" / "fidelity" / "conformance.md")
START, END = "<!-- conformance-scores:start -->", "<!-- conformance-scores:end -->"
PASSING = frozenset({"passed", "superseded"})
COUNTED = PASSING | {"failed", "error"}


@dataclass(frozen=True)
class Group:
    label: str
    categories: str  # run.sh's arguments
    strict: bool = False

    @property
    def folder(self) -> str:
        return f"{self.categories.replace(' ', '-')}{'-strict' if self.strict else ''}"


GROUPS = (
    Group("default categories", "default"),
    Group("default categories, strict", "default", strict=True),
    Group("testing categories", "testing"),
    Group("testing categories, strict", "testing", strict=True),
    Group("API categories", "api"),
    Group("API categories, strict", "api", strict=True),
    Group("TestState", "test_state"),
    Group("TestState, strict", "test_state", strict=True),
)


@dataclass(frozen=True)
class Score:
    passed: int
    counted: int

    @property
    def percent(self) -> float:
        return 100.0 * self.passed / self.counted if self.counted else 0.0


def score(results: Path) -> Score:
    outcomes = [json.loads(line)["outcome"] for line in results.read_text().splitlines() if line.strip()]
    return Score(sum(o in PASSING for o in outcomes), sum(o in COUNTED for o in outcomes))


def run(group: Group, work: Path) -> None:
    harness_work = work / "harness"
    environment = {
        **os.environ,
        "CONF_WORK": str(harness_work),
        "CONF_STRICT": "1" if group.strict else "0",
        "CONF_RESULTS_MD": "",
    }
    print(f"conformance-scores: running {group.label}", file=sys.stderr, flush=True)
    subprocess.run(["bash", str(HARNESS), *group.categories.split()], cwd=ROOT, env=environment, check=False)
    results = harness_work / "results-engine.jsonl"
    (work / f"{group.folder}.jsonl").write_text(results.read_text() if results.exists() else "")


def table(scores: dict[Group, Score], measured: str) -> str:
    rows = [f"| {g.label} | {s.passed} of {s.counted} | {s.percent:.1f} % |" for g, s in scores.items()]
    return "\n".join(
        [
            START,
            f"Measured {measured} by `python -m scripts.conformance_scores --run` (strict: LocalStack's own",
            "`skip_snapshot_verify` exemptions ignored, every recorded path compared).",
            "",
            "| harness group | tests passing | |",
            "|---|---|---|",
            *rows,
            END,
        ]
    )


def write(page: Path, block: str) -> None:
    text = page.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise SystemExit(f"conformance-scores: {page} has no {START} … {END} block")
    before, _, rest = text.partition(START)
    _, _, after = rest.partition(END)
    page.write_text(before + block + after, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--run", action="store_true", help="run every group first (about half an hour)")
    parser.add_argument(
        "--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "sfn-conformance-scores"
    )
    arguments = parser.parse_args(argv)
    if arguments.run:
        for group in GROUPS:
            run(group, arguments.work)
    scores = {}
    for group in GROUPS:
        results = arguments.work / f"{group.folder}.jsonl"
        if not results.exists():
            raise SystemExit(f"conformance-scores: no results for {group.label} at {results} (use --run)")
        scores[group] = score(results)
    block = table(scores, datetime.date.today().isoformat())
    for page in PAGES:
        write(page, block)
    print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
