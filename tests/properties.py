"""Hypothesis profiles: ``make test`` is deterministic, ``make fuzz`` explores.

- ``suite`` (the default): derandomized, so every run draws the same examples from each test's own
  seed; a property test cannot fail CI for a bug nobody touched. What ``make fuzz`` finds is pinned
  in the suite as an explicit example.
- ``fuzz`` (``HYPOTHESIS_PROFILE=fuzz``, ``make fuzz``): random seeds, ``FUZZ_SCALE`` times the
  examples of each property test.
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILE_VARIABLE = "HYPOTHESIS_PROFILE"
FUZZ_SCALE = 10

settings.register_profile("suite", derandomize=True, deadline=None, print_blob=True, database=None)
settings.register_profile("fuzz", derandomize=False, deadline=None, print_blob=True)
PROFILE = os.environ.get(PROFILE_VARIABLE, "suite")
settings.load_profile(PROFILE)


def examples(in_the_suite: int) -> int:
    """How many examples a property test draws: its own count in the suite, more when fuzzing."""
    return in_the_suite * FUZZ_SCALE if PROFILE == "fuzz" else in_the_suite
