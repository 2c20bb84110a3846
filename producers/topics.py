"""Versioned topic names: the wire between the producers, the processors and the readers.

A breaking change to a message contract gets a new topic version (``.v2``) so that
old and new consumers never read each other's messages.
"""

from __future__ import annotations

from dataclasses import dataclass

FILE_EVENTS = "gazetteer.file-events.v1"
"""FileChanged, FileDeleted, CommitObserved and the scan/commit barriers, keyed by repo."""

SOURCES = "gazetteer.sources.v1"
"""SourceStatus heartbeats of the producers, keyed by repo: what has been emitted."""

GRAPH_DELTAS = "gazetteer.graph-deltas.v1"
"""GraphDelta records of the processors, keyed by repo: the materialized state's log."""

DEAD_LETTERS = "gazetteer.dead-letters.v1"
"""Events that could not be processed, with the reason, keyed by the original key."""


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int


def all_topics(partitions: int) -> tuple[TopicSpec, ...]:
    """Every topic of the pipeline.

    The keyed topics share one partition count so that a repository's file events and
    its graph deltas land on the same partition number: the worker that owns a
    repository's input partition restores that repository from the same partition of
    the delta log.
    """
    return (
        TopicSpec(FILE_EVENTS, partitions),
        TopicSpec(SOURCES, partitions),
        TopicSpec(GRAPH_DELTAS, partitions),
        TopicSpec(DEAD_LETTERS, partitions),
    )
