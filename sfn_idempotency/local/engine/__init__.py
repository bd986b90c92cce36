"""The engine itself: the cloud, its backends, the idempotent service, Lambda functions, targets, and the parsed programs kept on disk."""
