"""The languages AWS reads, as AWS reads them, below everything that reads them: JSON and YAML
documents with CloudFormation's short forms (``documents``), and JSONata with the functions Step
Functions adds (``jsonata``). They know nothing of the engine."""
