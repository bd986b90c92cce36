"""The engine itself: ``LocalCloud`` and how it reads an execution, its clients and backends (in
process, or moto's server for ``serve``), the idempotent service, Lambda functions, the demo's
scenarios on it, and the parsed programs kept on disk for the next process."""
