"""The ``sfn-idempotency`` command: run the demo, serve the local engine, start executions, inspect
and forget records, wrap a Task, check a workflow, draw the state machine. One module per command;
what they share is in ``options``, the parser and the dispatch in ``main``."""

from sfn_idempotency.cli.main import build_parser, main, run

__all__ = ["build_parser", "main", "run"]
