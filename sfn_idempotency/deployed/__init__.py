"""What talks to a deployed flow on AWS: its executions, its records, and the remote commands
(``start``, ``record``, ``forget``)."""
