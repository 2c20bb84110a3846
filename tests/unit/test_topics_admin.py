"""What the operator is told when a topic has another partition count."""

from __future__ import annotations

from aiokafka.protocol.metadata import MetadataRequest, MetadataRequest_v4

from deploy.topics_admin import TopicMismatch, install_no_topic_auto_creation


def test_the_mismatch_names_each_topic_and_what_to_do() -> None:
    error = TopicMismatch({"g.sources.v1": (8, 4), "g.file-events.v1": (8, 4)})
    assert str(error) == (
        "topics with the wrong partition count: g.file-events.v1 has 4 partitions, 8 wanted;"
        " g.sources.v1 has 4 partitions, 8 wanted. Gazetteer does not repartition a keyed"
        " topic (it would move repositories between workers). Delete these topics (their"
        " events are replayed by a full scan) or set GAZETTEER_PARTITIONS to match (4)."
    )
    assert error.mismatches == {"g.sources.v1": (8, 4), "g.file-events.v1": (8, 4)}


def test_metadata_requests_no_longer_create_topics_unless_asked() -> None:
    install_no_topic_auto_creation()
    assert install_no_topic_auto_creation() is False  # idempotent
    asked = MetadataRequest(["t"]).build(MetadataRequest_v4)
    assert asked.allow_auto_topic_creation is False
    explicit = MetadataRequest(["t"], allow_auto_topic_creation=True).build(MetadataRequest_v4)
    assert explicit.allow_auto_topic_creation is True
