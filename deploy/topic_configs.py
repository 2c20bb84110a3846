"""Converging an existing topic's configs to the ones Gazetteer wants (Apache Kafka).

A topic created before its config was chosen (``retention.ms=-1`` everywhere before
issue 16) keeps the old config: CreateTopics does nothing for a topic that exists. So
`converge` describes each existing topic's configs, and sets the ones that differ from
what its `TopicSpec` wants with IncrementalAlterConfigs (SET, one key at a time), which
leaves every other config of the topic as the operator set it. The plain AlterConfigs
would replace the topic's whole set of overrides, resetting any the request does not
repeat. aiokafka 0.14 has no IncrementalAlterConfigs, so its request is declared here
(API key 44, version 0: the one that is not "flexible", in every Kafka since 2.3).

A change is logged (``topic_config_converged``, with the old and new values). A broker
that refuses (no ``DescribeConfigs`` or ``AlterConfigs`` permission on the topic, an
invalid value) is logged as an error (``topic_config_not_converged``) and the topic is
used as it is: it works, it only keeps more or less history than chosen.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

import structlog
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaError, for_code
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import Array, Boolean, Int8, Int16, Int32, Schema, String

log = structlog.get_logger(__name__)

Drift = dict[str, tuple[str | None, str]]
"""config name -> (the value the topic has, or None; the value wanted)."""

_SET = 0  # IncrementalAlterConfigs' config_operation: SET (1 DELETE, 2 APPEND, 3 SUBTRACT)
_LISTS = frozenset({"cleanup.policy"})  # comma lists whose order does not matter


def config_drift(wanted: Mapping[str, str], actual: Mapping[str, str | None]) -> Drift:
    """The configs of ``wanted`` whose value the topic (``actual``, as described) does not
    have, in name order. A list config (``cleanup.policy``) matches in any order."""
    drift: Drift = {}
    for name, value in sorted(wanted.items()):
        have = actual.get(name)
        if have is None or _normal(name, have) != _normal(name, value):
            drift[name] = (have, value)
    return drift


def _normal(name: str, value: str) -> str:
    if name in _LISTS:
        return ",".join(sorted(part.strip() for part in value.split(",") if part.strip()))
    return value


class IncrementalAlterConfigsResponse_v0(Response):
    API_KEY = 44
    API_VERSION = 0
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        (
            "responses",
            Array(
                ("error_code", Int16),
                ("error_message", String("utf-8")),
                ("resource_type", Int8),
                ("resource_name", String("utf-8")),
            ),
        ),
    )


class IncrementalAlterConfigsRequest_v0(RequestStruct):
    API_KEY = 44
    API_VERSION = 0
    RESPONSE_TYPE = IncrementalAlterConfigsResponse_v0
    SCHEMA = Schema(
        (
            "resources",
            Array(
                ("resource_type", Int8),
                ("resource_name", String("utf-8")),
                (
                    "configs",
                    Array(
                        ("name", String("utf-8")),
                        ("config_operation", Int8),
                        ("value", String("utf-8")),
                    ),
                ),
            ),
        ),
        ("validate_only", Boolean),
    )


IncrementalAlterConfigsStruct: TypeAlias = IncrementalAlterConfigsRequest_v0


class IncrementalAlterConfigsRequest(Request[IncrementalAlterConfigsStruct]):
    """SET the given configs of the given topics, leaving their other configs alone."""

    API_KEY = 44

    def __init__(self, topics: Mapping[str, Mapping[str, str]]) -> None:
        self._resources = [
            (
                int(ConfigResourceType.TOPIC),
                topic,
                [(name, _SET, value) for name, value in sorted(configs.items())],
            )
            for topic, configs in sorted(topics.items())
        ]

    def build(
        self, request_struct_class: type[IncrementalAlterConfigsStruct]
    ) -> IncrementalAlterConfigsStruct:
        return request_struct_class(self._resources, False)


async def describe_topic_configs(
    admin: AIOKafkaAdminClient, topics: Iterable[str]
) -> dict[str, dict[str, str | None]]:
    """Every config of each topic as the broker describes it (defaults included)."""
    names = sorted(topics)
    if not names:
        return {}
    responses = await admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, name) for name in names]
    )
    described: dict[str, dict[str, str | None]] = {}
    for response in responses:
        for error_code, message, _, name, entries, *_ in response.resources:
            if error_code:
                raise for_code(error_code)(f"describing the configs of {name}: {message}")
            described[name] = {entry[0]: entry[1] for entry in entries}
    return described


async def converge(
    admin: AIOKafkaAdminClient, wanted: Mapping[str, Mapping[str, str]]
) -> dict[str, Drift]:
    """Set, on each topic of ``wanted`` (name -> configs), the configs it does not have;
    return what was changed, per topic (the topics the broker refused left out)."""
    wanted = {topic: configs for topic, configs in wanted.items() if configs}
    try:
        actual = await describe_topic_configs(admin, wanted)
    except KafkaError as exc:  # no DescribeConfigs ACL, say: the topics work as they are
        log.error("topic_config_not_converged", topics=sorted(wanted), error=repr(exc))
        return {}
    drifts = {
        topic: drift
        for topic in sorted(wanted)
        if (drift := config_drift(wanted[topic], actual.get(topic, {})))
    }
    if not drifts:
        return {}
    request = IncrementalAlterConfigsRequest(
        {topic: {name: new for name, (_, new) in drift.items()} for topic, drift in drifts.items()}
    )
    try:
        response = await admin._send_request(request)  # aiokafka: no public way (above)
    except KafkaError as exc:
        log.error("topic_config_not_converged", topics=sorted(drifts), error=repr(exc))
        return {}
    return alter_outcome(response, drifts)


def alter_outcome(response: Any, drifts: Mapping[str, Drift]) -> dict[str, Drift]:
    """What an IncrementalAlterConfigs ``response`` to ``drifts`` changed, logged per
    topic: converged, or refused with the broker's reason (left out)."""
    converged: dict[str, Drift] = {}
    for error_code, message, _, topic, *_ in response.responses:
        drift = drifts.get(topic)
        if drift is None:
            continue
        changes = {name: [old, new] for name, (old, new) in drift.items()}
        if error_code:
            error = for_code(error_code)
            log.error(
                "topic_config_not_converged",
                topic=topic,
                wanted=changes,
                error=f"{error.__name__}: {message}",
            )
            continue
        log.info("topic_config_converged", topic=topic, changed=changes)
        converged[topic] = drift
    return converged
