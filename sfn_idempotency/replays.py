"""What a replay tells its caller: the opt-in replay marker and the response hook. The public face
of ``sfn_idempotency.flow.replays``, where the flow is rewritten for them."""

from __future__ import annotations

from sfn_idempotency.flow.replays import (
    INTRINSIC_FUNCTIONS,
    MARK_REPLAY,
    MARKER_FIELDS,
    RECORD_FIELDS,
    RECORD_ITEM,
    REPLAY_HOOK,
    REPLAY_STATES,
    REPLAY_UNTRACKED,
    RESULT_FIELD,
    ReplayOptionError,
    ReplayOptions,
    check_hook,
    check_marker_place,
    checked_options,
    replay_options_applied,
    with_replay_options,
)

__all__ = [
    "INTRINSIC_FUNCTIONS",
    "MARKER_FIELDS",
    "MARK_REPLAY",
    "RECORD_FIELDS",
    "RECORD_ITEM",
    "REPLAY_HOOK",
    "REPLAY_STATES",
    "REPLAY_UNTRACKED",
    "RESULT_FIELD",
    "ReplayOptionError",
    "ReplayOptions",
    "check_hook",
    "check_marker_place",
    "checked_options",
    "replay_options_applied",
    "with_replay_options",
]
