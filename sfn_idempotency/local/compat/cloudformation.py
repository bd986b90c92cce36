"""CloudFormation: what moto's stacks create is what the engine's APIs answer and run (fixes 38-40,
43, 69, 80, 89-92, 100, 137, 139).

AWS's CloudFormation creates a state machine with CreateStateMachine; moto's put it in a backend the
Step Functions API never reads, from ``DefinitionString`` alone. It skipped ``AWS::SQS::QueuePolicy``,
and created tables without their TTL or point-in-time recovery and could not update one in place.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import secrets
import string
import threading
import zipfile
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from sfn_idempotency.local.compat.patching import Patch, add, after_first_import, keep
from sfn_idempotency.local.languages.documents import YAMLError, parse_yaml

_SFN_MODELS = "moto.stepfunctions.models:StateMachine"
_TABLE = "moto.dynamodb.models.table:Table"
_FUNCTION = "moto.awslambda.models:LambdaFunction"
_LAYER = "moto.awslambda.models:LayerVersion"
_PARSING = "moto.cloudformation.parsing"
_model_lock = threading.Lock()
_MAX_NAME_LENGTH = 80
_NAME_SUFFIX_LENGTH = 12
_NAME_SUFFIX_CHARACTERS = string.ascii_letters + string.digits


# -- fix 38: state machines -------------------------------------------------------------------
def _parser_backend(account_id: str, region_name: str) -> Any:
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    return stepfunctions_parser_backends[account_id][region_name]


def definition_of(properties: Mapping[str, Any], account_id: str) -> str:
    """The definition a stack gives: ``Definition`` (an object), ``DefinitionString`` or the
    object at ``DefinitionS3Location``, with ``DefinitionSubstitutions`` put in for their
    ``${Name}`` placeholders as plain text (CloudFormation's substitution, not JSON escaping). As
    AWS's resource provider does, an S3 object's text is substituted first, then read as JSON, or
    else as YAML (written out as JSON): a YAML file's ``Seconds: ${Wait}`` becomes a number, and a
    JSON file reaches the parser as written, so its errors name the file's own lines."""
    if "Definition" in properties:
        text = json.dumps(properties["Definition"])
    elif "DefinitionS3Location" in properties:
        return _as_json_text(
            _substituted(_s3_object_text(properties["DefinitionS3Location"], account_id), properties)
        )
    else:
        text = str(properties.get("DefinitionString", ""))
    return _substituted(text, properties)


def _substituted(text: str, properties: Mapping[str, Any]) -> str:
    for name, value in (properties.get("DefinitionSubstitutions") or {}).items():
        text = text.replace(f"${{{name}}}", _substitution_text(value))
    return text


def _substitution_text(value: Any) -> str:
    """A substitution's value as the resource provider writes it (Java's: ``true``, not ``True``)."""
    return json.dumps(value) if isinstance(value, bool) else str(value)


def _as_json_text(text: str) -> str:
    """JSON text as it is (its lines are the user's); YAML written out as JSON; text that is
    neither goes on as it is, for the parser to refuse in its own words."""
    try:
        json.loads(text)
    except ValueError:
        try:
            return json.dumps(parse_yaml(text), indent=2)
        except YAMLError:
            return text
    return text


def _s3_object_text(location: Mapping[str, Any], account_id: str) -> str:
    from moto.s3.models import s3_backends

    bucket, key = str(location["Bucket"]), str(location["Key"])
    stored = s3_backends[account_id]["aws"].get_object(bucket, key, version_id=location.get("Version"))
    if stored is None:
        raise ValueError(f"DefinitionS3Location: no object s3://{bucket}/{key}")
    return bytes(stored.value).decode("utf-8")


def _camel(value: Any) -> Any:
    """A CloudFormation property (``Level``, ``CloudWatchLogsLogGroup``) in the API's camelCase."""
    if isinstance(value, dict):
        return {key[:1].lower() + key[1:]: _camel(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_camel(item) for item in value]
    return value


def _configurations(properties: Mapping[str, Any]) -> dict[str, Any]:
    cfn_to_api = {
        "LoggingConfiguration": "loggingConfiguration",
        "TracingConfiguration": "tracingConfiguration",
        "EncryptionConfiguration": "encryptionConfiguration",
    }
    return {api: _camel(properties[cfn]) for cfn, api in cfn_to_api.items() if properties.get(cfn)}


def _api_tags(properties: Mapping[str, Any]) -> list[dict[str, str]]:
    return [{"key": tag["Key"], "value": tag["Value"]} for tag in properties.get("Tags") or []]


def generated_name(logical_id: str) -> str:
    """The name CloudFormation gives a state machine without ``StateMachineName``: its logical id
    and 12 letters and digits (recorded ARNs: ``stateMachine:StateMachine2E01A3A5-IRAtzDIOzu0C``),
    within the 80 characters a name may have. moto prefixed the stack's name and overran them."""
    suffix = "".join(secrets.choice(_NAME_SUFFIX_CHARACTERS) for _ in range(_NAME_SUFFIX_LENGTH))
    return f"{logical_id[: _MAX_NAME_LENGTH - _NAME_SUFFIX_LENGTH - 1]}-{suffix}"


def _create_machine(
    resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
) -> Any:
    properties = cloudformation_json["Properties"]
    logical_id = kwargs.get("LogicalId")
    return _parser_backend(account_id, region_name).create_state_machine(
        name=properties.get("StateMachineName")
        or (generated_name(logical_id) if logical_id else resource_name),
        definition=definition_of(properties, account_id),
        roleArn=properties.get("RoleArn", ""),
        tags=_api_tags(properties),
        sm_type=properties.get("StateMachineType", "STANDARD"),
        **_configurations(properties),
    )


def _delete_machine(resource_name: str, cloudformation_json: Any, account_id: str, region_name: str) -> None:
    """moto calls this with the physical id, which for a state machine is its ARN."""
    _parser_backend(account_id, region_name).delete_state_machine(resource_name)


def _update_machine(
    original_resource: Any,
    new_resource_name: str,
    cloudformation_json: Any,
    account_id: str,
    region_name: str,
) -> Any:
    properties = cloudformation_json["Properties"]
    wanted_name = properties.get("StateMachineName", original_resource.name)
    wanted_type = properties.get("StateMachineType", "STANDARD")
    if wanted_name != original_resource.name or wanted_type != original_resource.type:
        replacement = _create_machine(  # a generated name: the replacement gets a fresh one
            wanted_name,
            cloudformation_json,
            account_id,
            region_name,
            LogicalId=original_resource.logical_resource_id,
        )
        _delete_machine(original_resource.arn, cloudformation_json, account_id, region_name)
        return replacement
    backend = _parser_backend(account_id, region_name)
    configurations = _configurations(properties)
    machine = backend.update_state_machine(
        original_resource.arn,
        definition=definition_of(properties, account_id),
        role_arn=properties.get("RoleArn"),
        logging_configuration=configurations.get("loggingConfiguration"),
        tracing_configuration=configurations.get("tracingConfiguration"),
        encryption_configuration=configurations.get("encryptionConfiguration"),
    )
    backend.tagger.tag_resource(machine.arn, _api_tags(properties))
    return machine


def _has_machine_attribute(attribute: str) -> bool:
    return attribute in {"Arn", "Name"}


def _machine_attribute(original: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """``Fn::GetAtt`` ``Arn`` (moto had only ``Name`` and the inputs)."""

    def get_cfn_attribute(self: Any, attribute_name: str) -> Any:
        return self.arn if attribute_name == "Arn" else original(self, attribute_name)

    return get_cfn_attribute


def _as_classmethod(function: Callable[..., Any]) -> Callable[[Any], Any]:
    """A patch build that replaces a classmethod with a plain function taking no ``cls``."""

    def build(_original: Any) -> Any:
        def method(cls: Any, *args: Any, **kwargs: Any) -> Any:
            return function(*args, **kwargs)

        return classmethod(method)

    return build


# -- resource types moto's CloudFormation lacks -------------------------------------------------
Apply = Callable[[str, Mapping[str, Any], str, str], None]  # (logical id, properties, account, region)


def resource_model(
    resource_type: str,
    apply: Apply,
    remove: Apply,
    physical_id: Callable[[Mapping[str, Any]], str] | None = None,
) -> type:
    """A CloudFormation model for a resource that only sets something up: ``apply`` on create,
    ``remove`` then ``apply`` on update, ``remove`` on delete. Its physical id (what ``Ref``
    answers) is ``physical_id`` of its properties, else its name; ``Id`` is its name."""
    from moto.core.common_models import CloudFormationModel

    class StackResource(CloudFormationModel):  # type: ignore[misc]
        def __init__(self, name: str, properties: Mapping[str, Any]) -> None:
            self.name = name
            self.properties = properties

        @property
        def physical_resource_id(self) -> str:
            return physical_id(self.properties) if physical_id is not None else self.name

        @staticmethod
        def cloudformation_name_type() -> str:
            return ""

        @staticmethod
        def cloudformation_type() -> str:
            return resource_type

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr == "Id"

        def get_cfn_attribute(self, attribute_name: str) -> Any:
            return self.name

        @classmethod
        def create_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **_: Any
        ) -> StackResource:
            properties = cloudformation_json.get("Properties", {})
            apply(resource_name, properties, account_id, region_name)
            return cls(resource_name, properties)

        @classmethod
        def update_from_cloudformation_json(
            cls,
            original_resource: Any,
            new_resource_name: str,
            cloudformation_json: Any,
            account_id: str,
            region_name: str,
        ) -> StackResource:
            remove(original_resource.name, original_resource.properties, account_id, region_name)
            return cls.create_from_cloudformation_json(
                original_resource.name, cloudformation_json, account_id, region_name
            )

        @classmethod
        def delete_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
        ) -> None:
            remove(resource_name, cloudformation_json.get("Properties", {}), account_id, region_name)

    StackResource.__name__ = StackResource.__qualname__ = resource_type.rsplit("::", 1)[-1]
    return StackResource


# -- fix 39: queue policies -------------------------------------------------------------------
def _set_queue_policy(document: Any) -> Apply:
    def set_policy(_name: str, properties: Mapping[str, Any], account_id: str, region_name: str) -> None:
        from moto.sqs.models import sqs_backends

        backend = sqs_backends[account_id][region_name]
        policy = json.dumps(properties.get("PolicyDocument")) if document is None else document
        for queue_url in properties.get("Queues", []):
            backend.set_queue_attributes(str(queue_url).rsplit("/", 1)[-1], {"Policy": policy})

    return set_policy


@cache
def _queue_policy_model() -> type:
    """``AWS::SQS::QueuePolicy``: sets ``Policy`` on each of its queues, as AWS does."""
    return resource_model(
        "AWS::SQS::QueuePolicy", apply=_set_queue_policy(None), remove=_set_queue_policy("")
    )


# -- fix 158: SNS subscriptions ----------------------------------------------------------------
# Set in this order: a FilterPolicy is checked against the FilterPolicyScope set before it.
_SUBSCRIPTION_ATTRIBUTES = (
    "FilterPolicyScope",
    "FilterPolicy",
    "RawMessageDelivery",
    "DeliveryPolicy",
    "RedrivePolicy",
    "SubscriptionRoleArn",
)


def _subscribe(_name: str, properties: Mapping[str, Any], account_id: str, region_name: str) -> None:
    from moto.sns.models import sns_backends

    backend = sns_backends[account_id][region_name]
    subscription = backend.subscribe(
        str(properties["TopicArn"]), str(properties.get("Endpoint", "")), str(properties["Protocol"])
    )
    for attribute in _SUBSCRIPTION_ATTRIBUTES:
        value = properties.get(attribute)
        if value is not None:
            text = json.dumps(value) if isinstance(value, dict | list) else str(value)
            backend.set_subscription_attributes(
                subscription.arn, attribute, text.lower() if isinstance(value, bool) else text
            )


def _unsubscribe(_name: str, properties: Mapping[str, Any], account_id: str, region_name: str) -> None:
    from moto.sns.models import sns_backends

    backend = sns_backends[account_id][region_name]
    for arn, subscription in list(backend.subscriptions.items()):
        if (subscription.topic.arn, subscription.endpoint, subscription.protocol) == (
            properties.get("TopicArn"),
            properties.get("Endpoint", ""),
            properties.get("Protocol"),
        ):
            backend.unsubscribe(arn)


@cache
def _subscription_model() -> type:
    """``AWS::SNS::Subscription``: subscribes its endpoint to its topic, with its attributes (filter
    policy, raw delivery...), as AWS does; deleting it unsubscribes. moto had no such model, so a
    stack's subscriptions were skipped and a topic delivered to nobody."""
    return resource_model("AWS::SNS::Subscription", apply=_subscribe, remove=_unsubscribe)


# -- fix 69: metric filters -------------------------------------------------------------------
def _put_metric_filter(name: str, properties: Mapping[str, Any], account_id: str, region_name: str) -> None:
    from moto.logs.models import logs_backends

    transformations = [
        {
            "metricName": item["MetricName"],
            "metricNamespace": item["MetricNamespace"],
            "metricValue": item["MetricValue"],
            **({"defaultValue": float(item["DefaultValue"])} if "DefaultValue" in item else {}),
            **({"unit": item["Unit"]} if "Unit" in item else {}),
            **(
                {"dimensions": {d["Key"]: d["Value"] for d in item["Dimensions"]}}
                if item.get("Dimensions")
                else {}
            ),
        }
        for item in properties.get("MetricTransformations", [])
    ]
    logs_backends[account_id][region_name].put_metric_filter(
        str(properties.get("FilterName") or name),
        str(properties.get("FilterPattern", "")),
        str(properties["LogGroupName"]),
        transformations,
    )


def _delete_metric_filter(
    name: str, properties: Mapping[str, Any], account_id: str, region_name: str
) -> None:
    """The filter of that name (in its group, when the template names the group as text: moto hands
    a deleted resource its template's properties, references unresolved)."""
    from moto.logs.models import logs_backends

    filters = logs_backends[account_id][region_name].filters
    filter_name = str(properties.get("FilterName") or name)
    group = properties.get("LogGroupName")
    for found in filters.get_matching_filters(prefix=filter_name):
        if found["filterName"] == filter_name and (
            not isinstance(group, str) or found["logGroupName"] == group
        ):
            filters.delete_filter(filter_name, found["logGroupName"])


def _put_alarm(name: str, properties: Mapping[str, Any], account_id: str, region_name: str) -> None:
    """An alarm as PutMetricAlarm makes it (moto keeps it; it evaluates no alarm)."""
    from moto.cloudwatch.models import Dimension, Metric, MetricDataQuery, MetricStat, cloudwatch_backends

    def dimensions(items: Any) -> list[Any]:
        return [Dimension(name=item["Name"], value=item["Value"]) for item in items or []]

    queries = []
    for query in properties.get("Metrics") or []:
        stat = query.get("MetricStat")
        metric_stat = None
        if stat:
            metric = stat["Metric"]
            metric_stat = MetricStat(
                metric=Metric(
                    metric["MetricName"], metric["Namespace"], dimensions(metric.get("Dimensions"))
                ),
                period=stat.get("Period"),
                stat=stat.get("Stat"),
                unit=stat.get("Unit"),
            )
        queries.append(
            MetricDataQuery(
                query_id=query["Id"],
                label=query.get("Label"),
                period=query.get("Period"),
                return_data=query.get("ReturnData"),
                expression=query.get("Expression"),
                metric_stat=metric_stat,
            )
        )
    cloudwatch_backends[account_id][region_name].put_metric_alarm(
        name=_alarm_name(name, properties),
        namespace=properties.get("Namespace"),
        metric_name=properties.get("MetricName"),
        metric_data_queries=queries or None,
        comparison_operator=properties["ComparisonOperator"],
        evaluation_periods=int(properties["EvaluationPeriods"]),
        datapoints_to_alarm=properties.get("DatapointsToAlarm"),
        period=properties.get("Period"),
        threshold=float(properties["Threshold"]),
        statistic=properties.get("Statistic"),
        description=properties.get("AlarmDescription", ""),
        dimensions=list(properties.get("Dimensions") or []),  # [{"Name", "Value"}], as PutMetricAlarm's
        alarm_actions=list(properties.get("AlarmActions") or []),
        ok_actions=list(properties.get("OKActions") or []),
        treat_missing_data=properties.get("TreatMissingData"),
    )


def _delete_alarm(name: str, properties: Mapping[str, Any], account_id: str, region_name: str) -> None:
    from moto.cloudwatch.models import cloudwatch_backends

    cloudwatch_backends[account_id][region_name].delete_alarms([_alarm_name(name, properties)])


def _alarm_name(name: str, properties: Mapping[str, Any]) -> str:
    return str(properties.get("AlarmName") or name)


@cache
def _metric_filter_model() -> type:
    """``AWS::Logs::MetricFilter``: a metric filter on its log group, as PutMetricFilter makes it."""
    return resource_model("AWS::Logs::MetricFilter", apply=_put_metric_filter, remove=_delete_metric_filter)


@cache
def _alarm_model() -> type:
    """``AWS::CloudWatch::Alarm``: an alarm, as PutMetricAlarm makes it."""
    return resource_model("AWS::CloudWatch::Alarm", apply=_put_alarm, remove=_delete_alarm)


# -- fix 89: activities -------------------------------------------------------------------------
def _activity_properties(resource_name: str, cloudformation_json: Any) -> dict[str, Any]:
    return {"Name": resource_name, **cloudformation_json.get("Properties", {})}


def _activity_arn(properties: Mapping[str, Any], account_id: str, region_name: str) -> str:
    return f"arn:aws:states:{region_name}:{account_id}:activity:{properties['Name']}"


def _delete_activity(properties: Mapping[str, Any], account_id: str, region_name: str) -> None:
    _parser_backend(account_id, region_name).delete_activity(
        _activity_arn(properties, account_id, region_name)
    )


@cache
def _activity_model() -> type:
    """``AWS::StepFunctions::Activity``: an activity, as CreateActivity makes it; its Ref and
    ``Fn::GetAtt`` ``Arn`` are its ARN, ``Name`` its name (moto's CloudFormation had no such type)."""
    from moto.core.common_models import CloudFormationModel

    class Activity(CloudFormationModel):  # type: ignore[misc]
        def __init__(self, properties: Mapping[str, Any], account_id: str, region_name: str) -> None:
            self.properties = properties
            self.name = str(properties["Name"])
            self.arn = _activity_arn(properties, account_id, region_name)

        @property
        def physical_resource_id(self) -> str:
            return self.arn

        @staticmethod
        def cloudformation_name_type() -> str:
            return "Name"

        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::StepFunctions::Activity"

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr in ("Arn", "Name")

        def get_cfn_attribute(self, attribute_name: str) -> Any:
            return self.arn if attribute_name == "Arn" else self.name

        @classmethod
        def create_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **_: Any
        ) -> Activity:
            properties = _activity_properties(resource_name, cloudformation_json)
            _parser_backend(account_id, region_name).create_activity(
                str(properties["Name"]), tags=list(properties.get("Tags") or []) or None
            )
            return cls(properties, account_id, region_name)

        @classmethod
        def delete_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
        ) -> None:
            _delete_activity(
                _activity_properties(resource_name, cloudformation_json), account_id, region_name
            )

        def delete(self, account_id: str, region_name: str) -> None:
            _delete_activity(self.properties, account_id, region_name)

    return Activity


# -- fix 90: attributes moto's models lacked ----------------------------------------------------
# Documented Fn::GetAtt attributes of types moto deploys: (model, attribute) -> what answers it.
_MORE_ATTRIBUTES: dict[str, dict[str, Callable[[Any], Any]]] = {
    "moto.s3.models:FakeBucket": {"BucketName": lambda bucket: bucket.name},
    "moto.sns.models:Topic": {"TopicArn": lambda topic: topic.arn},
    "moto.sqs.models:Queue": {"QueueUrl": lambda queue: queue.physical_resource_id},  # its Ref
}


def _more_attributes_known(owner: str) -> Callable[[Any], Any]:
    def build(original: Any) -> Any:
        def has_cfn_attr(cls: Any, attr: str) -> bool:
            return attr in _MORE_ATTRIBUTES[owner] or bool(original(attr))

        return classmethod(has_cfn_attr)

    return build


def _more_attributes_answered(owner: str) -> Callable[[Any], Any]:
    def build(original: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
        def get_cfn_attribute(self: Any, attribute_name: str) -> Any:
            answer = _MORE_ATTRIBUTES[owner].get(attribute_name)
            return answer(self) if answer is not None else original(self, attribute_name)

        return get_cfn_attribute

    return build


def install_models() -> None:
    """Register the queue policy's and the metric filter's models, and have moto list its models
    again: it lists them once (``lru_cache``), so models defined after that (here and in
    compat.apigateway) need it."""
    with _model_lock:
        _queue_policy_model()
        _subscription_model()
        _metric_filter_model()
        _alarm_model()
        _activity_model()
        # fix 80: a layer version's Ref is its ARN (moto's was empty)
        add(_LAYER, "physical_resource_id", property(lambda layer: layer.arn))
        # fix 92: an event bus's Ref is its name (moto's Ref was the bus object itself)
        add("moto.events.models:EventBus", "physical_resource_id", property(lambda bus: bus.name))
    # moto's CloudFormation loads on demand (patching.LOADED_ON_DEMAND): its lists, if made
    after_first_import(_PARSING, "list every model again", _list_models_again)


def _list_models_again() -> None:
    from moto.cloudformation import parsing

    with _model_lock:
        parsing.get_model_list.cache_clear()
        parsing.get_model_map.cache_clear()
        parsing.get_name_type_map.cache_clear()


# -- fix 100: inline code is the handler's module in every runtime the engine runs -------------
def _inline_code_for_node_too(original: Callable[[str], bytes]) -> Callable[[str], bytes]:
    """CloudFormation "places [inline ZipFile code] in a file named index" for Node.js as for Python
    (AWS::Lambda::Function Code docs); moto wrote ``index.py`` only, so a Node.js function's
    ``index.handler`` was ``Cannot find module 'index'``. Each runtime reads only its own file."""

    def zipped(code: str) -> bytes:
        archive = io.BytesIO()
        with (
            zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as rebuilt,
            zipfile.ZipFile(io.BytesIO(original(code))) as moto_s,
        ):
            for entry in moto_s.infolist():
                rebuilt.writestr(entry, moto_s.read(entry))
            rebuilt.writestr(_NODE_INLINE_MODULE, code)
        return archive.getvalue()

    return staticmethod(zipped)


_NODE_INLINE_MODULE = "index.js"


# -- fix 80: Lambda layers ----------------------------------------------------------------------
# A function's Layers, as the Lambda API's reference gives a layer version ARN (fix 156).
_LAYER_VERSION_ARN = re.compile(r"arn:[a-zA-Z0-9-]+:lambda:[a-zA-Z0-9-]+:\d{12}:layer:[a-zA-Z0-9-_]+:[0-9]+")
_LONGEST_ARN = 140


def _function_with_layers(original: Callable[..., Any]) -> Any:
    """moto's creation left out a function's ``Layers``, so its code ran without them. A layer
    of another account that is not here (AWS's public Powertools layer, say) is still left out:
    the function runs on the packages of the engine's environment instead."""

    def create(
        resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> Any:
        from moto.awslambda.exceptions import InvalidParameterValueException
        from moto.awslambda.models import lambda_backends

        layers = cloudformation_json["Properties"].get("Layers") or []
        for arn in layers:  # fix 156: moto's split of a value that is no layer ARN raised ValueError
            if not isinstance(arn, str) or not _LAYER_VERSION_ARN.fullmatch(arn) or len(arn) > _LONGEST_ARN:
                raise InvalidParameterValueException(
                    f"1 validation error detected: Value '{arn}' at 'layers' failed to satisfy constraint: "
                    f"Member must satisfy regular expression pattern: {_LAYER_VERSION_ARN.pattern}"
                )
        function = original(resource_name, cloudformation_json, account_id, region_name, **kwargs)
        backend = lambda_backends[account_id][region_name]
        here = [arn for arn in layers if backend.layers_versions_by_arn(arn)]
        if here:
            function.layers = function._get_layers_data(here)
        return function

    return _as_classmethod(create)(original)


# -- fix 40: tables ---------------------------------------------------------------------------
def _apply_table_settings(
    table: Any, properties: Mapping[str, Any], account_id: str, region_name: str
) -> None:
    """What moto's table ignored: TTL and point-in-time recovery."""
    from moto.dynamodb.models import dynamodb_backends

    backend = dynamodb_backends[account_id][region_name]
    if properties.get("TimeToLiveSpecification"):
        backend.update_time_to_live(table.name, dict(properties["TimeToLiveSpecification"]))
    recovery = properties.get("PointInTimeRecoverySpecification")
    if recovery is not None:
        enabled = bool(recovery.get("PointInTimeRecoveryEnabled", False))
        backend.update_continuous_backups(table.name, {"PointInTimeRecoveryEnabled": enabled})


def _table_with_settings(original: Callable[..., Any]) -> Any:
    def create(
        resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> Any:
        table = original(resource_name, cloudformation_json, account_id, region_name, **kwargs)
        _apply_table_settings(table, cloudformation_json["Properties"], account_id, region_name)
        return table

    return _as_classmethod(create)(original)


# -- fix 165: a queue's properties are CloudFormation's ----------------------------------------
# AWS::SQS::Queue's properties (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sqs-queue.html).
_QUEUE_PROPERTIES = frozenset(
    {
        "ContentBasedDeduplication",
        "DeduplicationScope",
        "DelaySeconds",
        "FifoQueue",
        "FifoThroughputLimit",
        "KmsDataKeyReusePeriodSeconds",
        "KmsMasterKeyId",
        "MaximumMessageSize",
        "MessageRetentionPeriod",
        "QueueName",
        "ReceiveMessageWaitTimeSeconds",
        "RedriveAllowPolicy",
        "RedrivePolicy",
        "SqsManagedSseEnabled",
        "Tags",
        "VisibilityTimeout",
    }
)


def _queue_of_its_properties(original: Callable[..., Any]) -> Any:
    """A queue with a property CloudFormation does not have fails to create, as it does on AWS:
    moto passed every property on to the queue as an attribute, so a ``Name`` (not a property:
    ``QueueName`` is) renamed the queue behind its own key, and what named the queue later (a
    queue policy) found none."""

    def create(
        resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> Any:
        unknown = sorted(set(cloudformation_json.get("Properties") or {}) - _QUEUE_PROPERTIES)
        if unknown:
            raise ValueError(f"Encountered unsupported property {unknown[0]}")
        return original(resource_name, cloudformation_json, account_id, region_name, **kwargs)

    return _as_classmethod(create)(original)


def _update_table(
    original_resource: Any,
    new_resource_name: str,
    cloudformation_json: Any,
    account_id: str,
    region_name: str,
) -> Any:
    """In place, items kept, unless the name or keys change: then a new table, as AWS replaces it
    (moto had no update: the stack lost the table). Index changes are not applied in place."""
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.table import Table

    properties = cloudformation_json["Properties"]
    backend = dynamodb_backends[account_id][region_name]
    replaced = (
        properties.get("TableName", original_resource.name) != original_resource.name
        or properties.get("KeySchema") != original_resource.schema
    )
    if replaced:
        name = properties.get("TableName", new_resource_name)
        replacement = Table.create_from_cloudformation_json(
            name, cloudformation_json, account_id, region_name
        )
        backend.delete_table(original_resource.name)
        return replacement
    backend.update_table(
        name=original_resource.name,
        attr_definitions=properties.get("AttributeDefinitions"),
        global_index=[],
        throughput=properties.get("ProvisionedThroughput"),
        billing_mode=properties.get("BillingMode", "PROVISIONED"),
        stream_spec=properties.get("StreamSpecification"),
        deletion_protection_enabled=properties.get("DeletionProtectionEnabled"),
        warm_throughput=None,
    )
    _apply_table_settings(original_resource, properties, account_id, region_name)
    return original_resource


# -- fix 43: a resource that fails to create ----------------------------------------------------
_FAILED = "_sfn_local_failed_resource"


def _named_failure(original: Callable[..., Any]) -> Callable[..., Any]:
    """``parse_and_create_resource``: an error remembers the resource it failed."""

    def parse_and_create_resource(logical_id: str, resource_json: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(logical_id, resource_json, *args, **kwargs)
        except Exception as error:
            if not hasattr(error, _FAILED):
                setattr(error, _FAILED, (logical_id, str(resource_json.get("Type", ""))))
            raise

    return parse_and_create_resource


def _rolled_back(original: Callable[[Any], None]) -> Callable[[Any], None]:
    """``Stack.create_resources``: a resource that fails fails the stack, not the CreateStack
    call (moto answered that call with the failing service's own error body, which no SDK could
    read as CloudFormation's). The resource's event is ``CREATE_FAILED`` with the error; what was
    made is deleted, and the stack is ``ROLLBACK_COMPLETE``, as AWS rolls a failed creation back."""

    def create_resources(self: Any) -> None:
        from moto.cloudformation.models import Event

        try:
            original(self)
        except Exception as error:
            logical_id, resource_type = getattr(error, _FAILED, (self.name, "AWS::CloudFormation::Stack"))
            reason = str(getattr(error, "message", "") or error)
            self.events.append(
                Event(
                    stack_id=self.stack_id,
                    stack_name=self.name,
                    logical_resource_id=logical_id,
                    physical_resource_id="",
                    resource_type=resource_type,
                    resource_status="CREATE_FAILED",
                    resource_status_reason=reason,
                    resource_properties=None,
                )
            )
            self._add_stack_event(
                "ROLLBACK_IN_PROGRESS",
                resource_status_reason=f"The following resource(s) failed to create: [{logical_id}]. ",
            )
            with contextlib.suppress(Exception):  # a rollback goes on past what it cannot delete,
                self.resource_map.delete()  # and the failure reported is the creation's own
            self.status = "ROLLBACK_COMPLETE"
            self._add_stack_event("ROLLBACK_COMPLETE")

    return create_resources


def _no_outputs_once_rolled_back(original: property) -> property:
    """``Stack.outputs``: a stack whose creation rolled back has no outputs. moto evaluated them
    anyway, each describe, and a reference to a resource it had not made made it then: a failure
    there reached DescribeStacks as that service's own JSON error, which no SDK could read as
    CloudFormation's (`serve --cdk-out` ended in a traceback)."""

    evaluate: Callable[[Any], Any] = original.fget  # type: ignore[assignment]

    def outputs(self: Any) -> Any:
        return [] if self.status == "ROLLBACK_COMPLETE" else evaluate(self)

    return property(outputs)


# -- fix 91: Fn::Sub as CloudFormation parses it ------------------------------------------------
_SUB_VARIABLE = re.compile(r"\$\{\s*([^!}\s][^}]*?)\s*\}")


def _sub_variables_trimmed(text: Any) -> Any:
    """``${ Name }`` is ``${Name}``: CloudFormation trims a variable's spaces (an AWS sample's
    included OpenAPI file writes ``${ RestApi}``); moto looked for a resource named " RestApi"."""
    return _SUB_VARIABLE.sub(r"${\1}", text) if isinstance(text, str) else text


def _clean_json_with_trimmed_subs(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def clean_json(resource_json: Any, resources_map: Any) -> Any:
        if isinstance(resource_json, dict) and "Fn::Sub" in resource_json:
            sub = resource_json["Fn::Sub"]
            trimmed = (
                [_sub_variables_trimmed(sub[0]), *sub[1:]]
                if isinstance(sub, list) and sub
                else _sub_variables_trimmed(sub)
            )
            resource_json = {**resource_json, "Fn::Sub": trimmed}
        return original(resource_json, resources_map)

    return clean_json


# -- fix 139: a managed policy's document given as JSON text ----------------------------------------
def _policy_text_read_as_json(original: Callable[..., Any]) -> Any:
    """``AWS::IAM::ManagedPolicy``'s ``PolicyDocument`` is JSON, given as an object or as its text
    (an AWS sample writes the text in a folded YAML string); moto wrote the text out as JSON again,
    a string, which IAM refused: "Syntax errors in policy." Text that is not JSON still goes to
    IAM as written, which refuses it so."""

    def create(
        resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> Any:
        properties = cloudformation_json.get("Properties", {})
        document = properties.get("PolicyDocument")
        if isinstance(document, str):
            with contextlib.suppress(ValueError):
                properties = {**properties, "PolicyDocument": json.loads(document)}
                cloudformation_json = {**cloudformation_json, "Properties": properties}
        return original(resource_name, cloudformation_json, account_id, region_name, **kwargs)

    return _as_classmethod(create)(original)


# -- fix 137: Fn::Select out of its list's range -------------------------------------------------
def _select_beyond_its_list_refused(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """An ``Fn::Select`` whose index is past its list's end fails the resource in CloudFormation's
    words ("Template error: Fn::Select cannot select nonexistent value at index 3"); moto's failure
    was Python's IndexError text, "list index out of range" (an AWS sample splits an empty
    parameter). moto's own function selects; only its IndexError is worded."""
    from moto.cloudformation.exceptions import ValidationError

    def clean_json(resource_json: Any, resources_map: Any) -> Any:
        try:
            return original(resource_json, resources_map)
        except IndexError:
            if not (isinstance(resource_json, dict) and "Fn::Select" in resource_json):
                raise
            index = resource_json["Fn::Select"][0]
            raise ValidationError(
                message=f"Template error: Fn::Select cannot select nonexistent value at index {index}"
            ) from None

    return clean_json


PATCHES: tuple[Patch, ...] = (
    Patch(38, _SFN_MODELS, "create_from_cloudformation_json", _as_classmethod(_create_machine)),
    Patch(38, _SFN_MODELS, "update_from_cloudformation_json", _as_classmethod(_update_machine)),
    Patch(38, _SFN_MODELS, "delete_from_cloudformation_json", _as_classmethod(_delete_machine)),
    Patch(38, _SFN_MODELS, "has_cfn_attr", _as_classmethod(_has_machine_attribute)),
    Patch(38, _SFN_MODELS, "get_cfn_attribute", _machine_attribute),
    Patch(39, _PARSING, "get_model_list", keep),
    Patch(39, "moto.sqs.models:SQSBackend", "set_queue_attributes", keep),
    Patch(69, _PARSING, "get_model_list", keep),
    Patch(69, "moto.logs.models:LogsBackend", "put_metric_filter", keep),
    Patch(69, "moto.logs.metric_filters:MetricFilters", "get_matching_filters", keep),
    Patch(69, "moto.logs.metric_filters:MetricFilters", "delete_filter", keep),
    Patch(69, "moto.cloudwatch.models:CloudWatchBackend", "put_metric_alarm", keep),
    Patch(40, _TABLE, "create_from_cloudformation_json", _table_with_settings),
    Patch(40, _TABLE, "update_from_cloudformation_json", _as_classmethod(_update_table)),
    Patch(165, "moto.sqs.models:Queue", "create_from_cloudformation_json", _queue_of_its_properties),
    Patch(80, _FUNCTION, "create_from_cloudformation_json", _function_with_layers),
    Patch(80, _FUNCTION, "_get_layers_data", keep),
    Patch(100, _FUNCTION, "_create_zipfile_from_plaintext_code", _inline_code_for_node_too),
    Patch(80, _LAYER, "arn", keep),
    Patch(43, _PARSING, "parse_and_create_resource", _named_failure),
    Patch(43, "moto.cloudformation.models:Stack", "create_resources", _rolled_back),
    Patch(43, "moto.cloudformation.models:Stack", "_add_stack_event", keep),
    Patch(43, "moto.cloudformation.models:Stack", "outputs", _no_outputs_once_rolled_back),
    Patch(89, "moto.stepfunctions.models:StepFunctionBackend", "create_activity", keep),
    Patch(91, _PARSING, "clean_json", _clean_json_with_trimmed_subs),
    Patch(137, _PARSING, "clean_json", _select_beyond_its_list_refused),
    Patch(139, "moto.iam.models:ManagedPolicy", "create_from_cloudformation_json", _policy_text_read_as_json),
    *(
        patch
        for owner in _MORE_ATTRIBUTES
        for patch in (
            Patch(90, owner, "has_cfn_attr", _more_attributes_known(owner)),
            Patch(90, owner, "get_cfn_attribute", _more_attributes_answered(owner)),
        )
    ),
)
