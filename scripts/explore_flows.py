"""`make prove` and `make fuzz`: the exactly-once explorer over every form of the project's flow.

``--schedules N`` runs N schedules per form from a fixed seed (``make prove``: ten times the
default budget); ``--budget SECONDS`` runs as many as fit per form, from ``--seed`` or a random one
(``make fuzz``). Prints one line per form, and the counterexample of any that fails (exit 1); the
image of the explorer guide is ``--image`` (the redrive-unsafe design's counterexample).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

from sfn_idempotency.local import LocalCloud
from sfn_idempotency.local.explorer import DEFAULT_SCHEDULES, explore
from tests.local.exactly_once import forms, known_bad

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
GUIDE_IMAGE = REPOSITORY_ROOT / "docs" / "guides" / "exactly-once-counterexample.svg"


def prove(schedules: int | None, budget: float | None, seed: int) -> bool:
    passed = True
    for form, language in forms.EVERY_FORM:
        with LocalCloud() as cloud:
            report = explore(
                forms.FORMS[form](cloud, language),
                schedules_to_run=schedules or DEFAULT_SCHEDULES,
                budget_seconds=budget,
                seed=seed,
            )
        verdict = "passed" if report.passed else "FAILED"
        print(
            f"{form} {language}: {verdict}, {report.schedules} schedules in {report.seconds:.0f} s "
            f"(seed {seed}), {report.at_least_once} at least once by nature",
            flush=True,
        )
        if report.counterexample is not None:
            print(report.counterexample.text(), flush=True)
            passed = False
    return passed


def draw_the_guide_image() -> None:
    with LocalCloud() as cloud, tempfile.TemporaryDirectory() as folder:
        report = explore(known_bad.redrive_unsafe_design(cloud, Path(folder)))
    assert report.counterexample is not None, "the redrive-unsafe design passed: the explorer lost its bite"
    GUIDE_IMAGE.write_text(report.counterexample.svg(), encoding="utf-8")
    print(report.counterexample.text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, help=f"per form (default: {DEFAULT_SCHEDULES})")
    parser.add_argument("--budget", type=float, metavar="SECONDS", help="per form, instead of a count")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--random-seed", action="store_true", help="a seed drawn now (printed)")
    parser.add_argument("--image", action="store_true", help="draw the guide's counterexample image")
    arguments = parser.parse_args()
    if arguments.image:
        draw_the_guide_image()
        return 0
    seed = random.randrange(2**32) if arguments.random_seed else arguments.seed
    return 0 if prove(arguments.schedules, arguments.budget, seed) else 1


if __name__ == "__main__":
    sys.exit(main())
