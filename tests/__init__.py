"""The test tiers: unit, local (state-machine runs), infra (CDK synth), installed (the built wheel)."""

from pathlib import Path

# The checkout the tests run from: its README, examples/, package.json and scripts/.
REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
