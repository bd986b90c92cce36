"""The redrive fence of the flow's business state.

RedriveExecution resumes an execution at the state that did not succeed, with the input that state
had: for an execution stopped, timed out or failed in its business step, that is the business state
itself, whether its claim still stands, was released, or was taken over and completed by another
execution. The business call must then not happen. Only the business state's own evaluation runs
before its call, and what differs in a redriven run is the context's ``Execution.RedriveCount``:
the claim remembers the run that made it (``$sfnIdempotencyClaimRun``), and the business state's
``FunctionName`` is the business function only in that run. In any other it is the key Lambda's
``$LATEST`` qualifier, which ComputeKey never uses: the key Lambda, invoked by that ARN, answers
``IdempotencyRedriveFenceError`` without touching anything, and the flow releases the stale claim
and claims the key again (docs/concepts/flow.md, "Redrive").

The flow files hold the fence (the single source of truth); a business step given in their place
gets the same expression with its own function. The fence needs a Lambda: any other business Task
cannot be kept from running by its own evaluation, and is left as it is, with a warning.
"""

from __future__ import annotations

import copy
import json
import re
import warnings
from typing import Any

from sfn_idempotency.lambdas.compute_key.errors import FENCE_QUALIFIER

FENCE_ERROR = "IdempotencyRedriveFenceError"
LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
# How the flow files name the business function inside the fence's expression.
BUSINESS_FUNCTION = "'${BusinessFunctionArn}'"
# The partition, region and account may be CDK tokens (``arn:${Token[AWS.Partition.3]}:…``).
_LAMBDA_INVOKE = re.compile(r"^arn:[^:]+:states:::lambda:invoke(\.waitForTaskToken)?$")
_LAMBDA_FUNCTION_ARN = re.compile(r"^arn:[^:]+:lambda:[^:]*:[^:]*:function:")
_PLACEHOLDER = re.compile(r"^\$\{[A-Za-z][A-Za-z0-9_]*\}$")
_SUBSTITUTED = re.compile(r"(\$\{[^{}]*\})")  # a placeholder or a CDK token, kept whole
_STATES_RESULT = re.compile(r"\$states\.result\b")
# A JSONPath path (``$``, ``$.a``, ``$[0]``) where a value or an intrinsic's argument begins; not
# ``$$`` (the context) and not ``$name`` (a variable).
_PATH_START = re.compile(r"(?<![\w$])\$(?![\w$])")


class RedriveFenceWarning(UserWarning):
    """A business step the fence cannot guard (not a Lambda): a redrive can run it without a claim."""


# The run of the execution, as a JSONPath flow reads it from the context object.
RUN_PATH = "$$.Execution.RedriveCount"
_CHOICE_PATH_COMPARATORS = ("NumericEqualsPath",)


def for_express(definition: str) -> str:
    """A JSONPath flow for an Express workflow: every reading of the run is 0.

    An Express execution is never redriven, so its run is always the first; and a synchronous one
    (StartSyncExecution, the HTTP front door) has no ``RedriveCount`` in its context at all
    (recorded: ``$$.Execution`` of StartSyncExecution lacks it, of StartExecution has it), so a
    JSONPath reading of it fails the execution with States.Runtime. JSONPath has no default for an
    absent path, hence this build step for machines known to be Express (the JSONata flow reads
    the run with a default instead, and needs none)."""
    document = json.loads(definition)
    read_run_as_first(document)
    return json.dumps(document, indent=2)


def read_run_as_first(node: Any) -> None:
    """``node`` (states, or a whole definition) with every JSONPath reading of the run made 0."""
    if isinstance(node, list):
        for item in node:
            read_run_as_first(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("Variable") == RUN_PATH:
        # A Choice rule comparing the run with a path: the path compared with 0 instead.
        comparator = next((c for c in _CHOICE_PATH_COMPARATORS if c in node), None)
        if comparator is not None:
            node["Variable"] = node.pop(comparator)
            node[comparator.removesuffix("Path")] = 0
    for key in list(node):
        value = node[key]
        if key.endswith(".$") and value == RUN_PATH:
            del node[key]
            node[key[:-2]] = 0
        elif key.endswith(".$") and isinstance(value, str) and RUN_PATH in value:
            node[key] = value.replace(RUN_PATH, "0")
        else:
            read_run_as_first(value)


def fence_arn(key_function_arn: str) -> str:
    """The key Lambda as the fence calls it (a role that runs the flow may invoke exactly this)."""
    return f"{key_function_arn}:{FENCE_QUALIFIER}"


def is_invoke(resource: str) -> bool:
    """``lambda:invoke`` (optionally ``.waitForTaskToken``), in any partition."""
    return bool(_LAMBDA_INVOKE.match(resource))


def is_function(resource: str) -> bool:
    """A Lambda function as the Resource itself: its ARN, or a ``${Name}`` placeholder (the flow's
    definitions name functions by placeholder; an activity is named by its ARN)."""
    return bool(_LAMBDA_FUNCTION_ARN.match(resource) or _PLACEHOLDER.match(resource))


def fence_jsonpath(state: dict[str, Any], flow_execute: dict[str, Any]) -> None:
    """``state`` (a JSONPath business state of the flow, the user's Task in it) fenced as
    ``flow_execute``, the flow file's Execute, is. A Lambda function given as the Resource is
    called through ``lambda:invoke`` instead, with the same payload and result."""
    template = flow_execute["Parameters"]["FunctionName.$"]
    resource = str(state.get("Resource", ""))
    if is_invoke(resource):
        parameters = state.setdefault("Parameters", {})
        if "FunctionName.$" in parameters:
            function = parameters.pop("FunctionName.$")
        else:
            function = _intrinsic_string(str(parameters.pop("FunctionName", "")))
        parameters["FunctionName.$"] = template.replace(BUSINESS_FUNCTION, function)
        return
    if not is_function(resource):
        _warn_unfenced(resource)
        return
    payload = state.pop("Parameters", None)
    state["Resource"] = LAMBDA_INVOKE
    state["Parameters"] = {
        "FunctionName.$": template.replace(BUSINESS_FUNCTION, _intrinsic_string(resource)),
        **({"Payload.$": "$"} if payload is None else {"Payload": payload}),
    }


def payload_selector(selector: Any) -> Any:
    """A ResultSelector written for a Lambda function's own result, for ``lambda:invoke``'s answer
    (the result is its ``Payload``): every path it reads starts at ``$.Payload``."""
    if selector is None:
        return {"value.$": "$.Payload"}
    return {"value": _under_payload(selector)}


def fence_jsonata(state: dict[str, Any], flow_execute: dict[str, Any]) -> None:
    """As ``fence_jsonpath``, for the JSONata flow's business state."""
    template = str(flow_execute["Arguments"]["FunctionName"])
    resource = str(state.get("Resource", ""))
    if is_invoke(resource):
        arguments = state.setdefault("Arguments", {})
        if not isinstance(arguments, dict):
            _warn_unfenced(resource)  # Arguments as one expression: its FunctionName is not ours to see
            return
        arguments["FunctionName"] = template.replace(
            BUSINESS_FUNCTION, _jsonata_operand(arguments.get("FunctionName", ""))
        )
        return
    if not is_function(resource):
        _warn_unfenced(resource)
        return
    payload = state.pop("Arguments", "{% $states.input %}")
    state["Resource"] = LAMBDA_INVOKE
    state["Arguments"] = {
        "FunctionName": template.replace(BUSINESS_FUNCTION, _jsonata_operand(resource)),
        "Payload": payload,
    }
    output = state.get("Output")
    state["Output"] = "{% $states.result.Payload %}" if output is None else _result_is_the_payload(output)


def _intrinsic_string(text: str) -> str:
    """``text`` as an intrinsic function's string literal: its reserved characters escaped, except
    within ``${...}`` (a placeholder, or a CDK token), which is substituted away before Step
    Functions sees it."""
    parts = _SUBSTITUTED.split(text)
    escaped = [
        part if _SUBSTITUTED.fullmatch(part) else re.sub(r"([\\'{}])", r"\\\1", part) for part in parts
    ]
    return "'" + "".join(escaped) + "'"


def _jsonata_operand(value: Any) -> str:
    """A JSONata Arguments value (a literal, or ``{% expression %}``) as an operand of the fence."""
    text = str(value)
    if text.startswith("{%") and text.endswith("%}"):
        return f"({text[2:-2].strip()})"
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _under_payload(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: _PATH_START.sub("$.Payload", item)
            if key.endswith(".$") and isinstance(item, str)
            else _under_payload(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_under_payload(item) for item in value]
    return copy.deepcopy(value)


def _result_is_the_payload(value: Any) -> Any:
    """A JSONata Output written for a function's own result: ``$states.result`` is its Payload."""
    if isinstance(value, dict):
        return {key: _result_is_the_payload(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_result_is_the_payload(item) for item in value]
    if isinstance(value, str) and value.startswith("{%"):
        return _STATES_RESULT.sub("$states.result.Payload", value)
    return value


def _warn_unfenced(resource: str) -> None:
    warnings.warn(
        f"the business step {resource!r} is not a Lambda function: the redrive fence cannot keep a "
        "redriven execution from calling it without a claim (an execution stopped in it and then "
        "redriven calls it again). Run it from a Lambda, or in an Express machine, which cannot be "
        "redriven (docs/operations/redrive.md)",
        RedriveFenceWarning,
        stacklevel=3,
    )
