"""Step Functions capabilities moto lacks or the engine completes: activities, mock files, redrive,
retention, JSONata, TestState, the Distributed Map, versions and aliases, HTTP Tasks. Each keeps
its fix numbers; it applies its own patches or, where they must compose with compat's fixes of the
same attribute, lists them in compat's one table."""
