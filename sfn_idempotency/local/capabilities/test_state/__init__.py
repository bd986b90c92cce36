"""TestState, offline (fix 29): one state of a definition, run on moto's interpreter with the
request's input, variables and context, its Task answered by the request's mock, and the answer AWS
gives: output, error and cause, the next state, the status (SUCCEEDED, FAILED, CAUGHT_ERROR) and at
DEBUG or TRACE the state's data flow (``inspectionData``).

The state runs through moto's own TestState program (its parser decorates each step of the data
flow to record it); this package adds what AWS's API has and moto's lacks: ``stateName`` in a whole
definition, ``mock``, ``variables``, ``context``, a role that is optional with a mock, the Catch
decision, and AWS's refusals. ``request`` reads and checks a request, ``run`` runs it and writes the
answer, ``decisions`` holds what the interpreter does differently in a TestState run and the patches.
"""

from sfn_idempotency.local.capabilities.test_state.decisions import PATCHES, install_test_state

__all__ = ["PATCHES", "install_test_state"]
