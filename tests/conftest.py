"""Session-wide settings for every test tier."""

import os

import tests.properties  # noqa: F401  (loads the hypothesis profile before any test module)

# jsii warns on every start that Node 20 (what CI has) is past end of life; the CDK still runs on it.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
