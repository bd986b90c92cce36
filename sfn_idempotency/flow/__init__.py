"""What builds a flow: definitions and their checks, the redrive fence, the steps ``wrap_state``
made, the shipped data files, EventBridge patterns, what the demo's scenarios need of a run, the
example's inline workflows and HTTP front door, and a definition's graph. The public modules that
build one (``wrap``, ``replays``, ``metrics``) are at the package root."""
