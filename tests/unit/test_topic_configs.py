"""Each topic's broker config, the sources topic's keys, and how configs converge."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from aiokafka.admin.config_resource import ConfigResource
from aiokafka.errors import ClusterAuthorizationFailedError
from aiokafka.partitioner import DefaultPartitioner
from structlog.testing import capture_logs

from deploy.topic_configs import (
    Drift,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsRequest_v0,
    alter_outcome,
    config_drift,
    converge,
)
from deploy.topics_admin import topic_configs
from producers.kafka_sink import KafkaSink, by_repository
from producers.topics import Topics, TopicSpec, partition_key, status_key
from query.materializer import partition_of
from tests.factories import source_status


def test_every_topic_has_its_own_retention_and_cleanup_policy() -> None:
    configs = {spec.name: dict(spec.config) for spec in Topics("g").specs(8)}
    assert configs == {
        "g.file-events.v1": {"cleanup.policy": "delete", "retention.ms": "604800000"},
        "g.sources.v1": {
            "cleanup.policy": "compact,delete",
            "retention.ms": "2592000000",
            "min.compaction.lag.ms": "600000",
            "segment.ms": "600000",
        },
        "g.graph-deltas.v1": {"cleanup.policy": "delete", "retention.ms": "-1"},
        "g.dead-letters.v1": {"cleanup.policy": "delete", "retention.ms": "2592000000"},
        "g.neighborhoods.v1": {"cleanup.policy": "delete", "retention.ms": "-1"},
        "g.ranking.v1": {"cleanup.policy": "compact", "retention.ms": "-1"},
        "g.tokens.v1": {"cleanup.policy": "compact", "retention.ms": "-1"},
        "g.state-snapshots.v1": {
            "cleanup.policy": "compact",
            "retention.ms": "-1",
            "segment.ms": "600000",
        },
    }
    assert {spec.partitions for spec in Topics("g").specs(8)} == {8}


def test_a_spec_config_is_read_only_and_a_plain_spec_has_none() -> None:
    (spec, *_) = Topics().specs(1)
    with pytest.raises(TypeError):
        spec.config["retention.ms"] = "1"  # type: ignore[index]
    assert dict(TopicSpec("t", 1).config) == {}


def test_a_topic_gets_the_common_config_updated_by_its_own() -> None:
    specs = [TopicSpec("a", 1, {"retention.ms": "5"}), TopicSpec("b", 1)]
    common = {"retention.ms": "-1", "max.message.bytes": "9"}
    assert topic_configs(specs, common) == {
        "a": {"retention.ms": "5", "max.message.bytes": "9"},
        "b": {"retention.ms": "-1", "max.message.bytes": "9"},
    }


def test_a_status_is_keyed_by_session_on_its_repositorys_partition() -> None:
    key = status_key("app-1a2b3c4d", "host-12-abcdef01")
    assert key == b"app-1a2b3c4d\x00host-12-abcdef01"
    assert partition_key(key) == b"app-1a2b3c4d"
    assert partition_key(b"app-1a2b3c4d") == b"app-1a2b3c4d"
    for repo in ("app-1a2b3c4d", "django-0f1e2d3c", "r", "sympy-99999999"):
        for count in (1, 3, 8, 64):
            partitions = list(range(count))
            # Where the read side looks for the repository's statuses (probe_sources),
            # and where its file events go (a repository key, partitioned by default).
            expected = partition_of(repo, count)
            assert by_repository(status_key(repo, "p9"), partitions, partitions) == expected
            assert by_repository(repo.encode(), partitions, partitions) == expected
            assert DefaultPartitioner()(repo.encode(), partitions, partitions) == expected
    assert by_repository(None, [0, 1], [1]) == 1  # no key: an available partition


class Recording:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, bytes]] = []

    async def send_and_wait(self, topic: str, key: bytes, value: bytes) -> None:
        self.sent.append((topic, key, value))


async def test_the_sink_sends_a_status_under_its_session_key() -> None:
    producer = Recording()
    sink = KafkaSink("unused:0", producer=producer)  # type: ignore[arg-type]
    await sink.publish_status(source_status(3, repo="app-1", producer="p7"))
    ((topic, key, _),) = producer.sent
    assert (topic, key) == ("gazetteer.sources.v1", b"app-1\x00p7")


def test_drift_is_what_the_topic_lacks_a_policy_list_in_any_order() -> None:
    wanted = {"cleanup.policy": "compact,delete", "retention.ms": "5", "segment.ms": "7"}
    actual = {"cleanup.policy": "delete, compact", "retention.ms": "-1", "x": "1"}
    assert config_drift(wanted, actual) == {"retention.ms": ("-1", "5"), "segment.ms": (None, "7")}
    assert config_drift({"retention.ms": "5"}, {"retention.ms": "5"}) == {}
    assert config_drift({"cleanup.policy": "compact"}, {"cleanup.policy": "delete"}) == {
        "cleanup.policy": ("delete", "compact")
    }


def test_the_alter_request_sets_only_the_drifted_keys_of_each_topic() -> None:
    request = IncrementalAlterConfigsRequest(
        {"t2": {"segment.ms": "7", "cleanup.policy": "compact"}, "t1": {"retention.ms": "5"}}
    )
    built = request.build(IncrementalAlterConfigsRequest_v0)
    assert built.to_object() == {
        "resources": [
            {
                "resource_type": 2,
                "resource_name": "t1",
                "configs": [{"name": "retention.ms", "config_operation": 0, "value": "5"}],
            },
            {
                "resource_type": 2,
                "resource_name": "t2",
                "configs": [
                    {"name": "cleanup.policy", "config_operation": 0, "value": "compact"},
                    {"name": "segment.ms", "config_operation": 0, "value": "7"},
                ],
            },
        ],
        "validate_only": False,
    }
    assert len(built.encode()) > 0


def test_a_refused_topic_is_logged_as_not_converged_and_left_out() -> None:
    drift: Drift = {"retention.ms": ("-1", "5")}
    drifts = {"ok": drift, "no": drift}
    response = SimpleNamespace(
        responses=[(0, None, 2, "ok"), (29, "denied", 2, "no")]  # 29: TopicAuthorizationFailed
    )
    with capture_logs() as logs:
        converged = alter_outcome(response, drifts)
    assert converged == {"ok": {"retention.ms": ("-1", "5")}}
    assert [(e["event"], e["topic"], e["log_level"]) for e in logs] == [
        ("topic_config_converged", "ok", "info"),
        ("topic_config_not_converged", "no", "error"),
    ]
    assert logs[0]["changed"] == {"retention.ms": ["-1", "5"]}
    assert logs[1]["error"] == "TopicAuthorizationFailedError: denied"


class FakeAdmin:
    """The two admin calls `converge` makes, answered from ``topics`` (name -> configs)
    as a Kafka broker would; ``denied`` makes DescribeConfigs fail."""

    def __init__(self, topics: dict[str, dict[str, str]], denied: bool = False) -> None:
        self.topics, self.denied = topics, denied
        self.altered: list[dict[str, object]] = []

    async def describe_configs(self, resources: list[ConfigResource]) -> list[object]:
        if self.denied:
            raise ClusterAuthorizationFailedError("no DescribeConfigs")
        rows: list[tuple[object, ...]] = [
            (
                0,
                None,
                2,
                r.name,
                [(k, v, False, 1, False, []) for k, v in self.topics[r.name].items()],
            )
            for r in resources
        ]
        return [SimpleNamespace(resources=rows)]

    async def _send_request(self, request: IncrementalAlterConfigsRequest) -> object:
        built = request.build(IncrementalAlterConfigsRequest_v0).to_object()
        self.altered.append(built)
        answers = []
        for resource in built["resources"]:
            for config in resource["configs"]:
                self.topics[resource["resource_name"]][config["name"]] = config["value"]
            answers.append((0, None, 2, resource["resource_name"]))
        return SimpleNamespace(responses=answers)


async def test_converge_sets_what_differs_and_nothing_the_second_time() -> None:
    admin = FakeAdmin({"s": {"retention.ms": "-1", "cleanup.policy": "delete", "x": "1"}})
    wanted = {"s": {"retention.ms": "5", "cleanup.policy": "delete"}, "empty": {}}
    changed = await converge(admin, wanted)  # type: ignore[arg-type]
    assert changed == {"s": {"retention.ms": ("-1", "5")}}
    assert admin.topics == {"s": {"retention.ms": "5", "cleanup.policy": "delete", "x": "1"}}
    assert await converge(admin, wanted) == {}  # type: ignore[arg-type]
    assert len(admin.altered) == 1


async def test_converge_without_describe_rights_logs_and_leaves_the_topics() -> None:
    admin = FakeAdmin({"s": {"retention.ms": "-1"}}, denied=True)
    with capture_logs() as logs:
        assert await converge(admin, {"s": {"retention.ms": "5"}}) == {}  # type: ignore[arg-type]
    assert [(e["event"], e["topics"]) for e in logs] == [("topic_config_not_converged", ["s"])]
    assert admin.altered == []
