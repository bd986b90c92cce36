"""What deploys a user's app into the engine, through moto's CloudFormation:

- ``cloud_assembly``: a CDK app, as ``cdk synth`` leaves it;
- ``sam_templates``: an AWS SAM or CloudFormation template, as ``sam build`` and ``sam deploy``
  package it, translated by aws-sam-translator;
- ``stand_ins``: resources the engine cannot run, stood in for on request.
"""
