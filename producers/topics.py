"""Versioned topic names: the wire between the producers, the processors and the readers.

A breaking change to a message contract gets a new topic version (``.v2``) so that
old and new consumers never read each other's messages. A namespace prefixes every
name, so that several deployments (or test runs) can share one cluster.

- ``file-events``: FileChanged, FileDeleted, CommitObserved and the scan/commit
  barriers, keyed by repository;
- ``sources``: SourceStatus heartbeats of the producers, keyed by repository;
- ``graph-deltas``: GraphDelta records of the processors, keyed by repository: the
  materialized state's log;
- ``dead-letters``: events that could not be processed, with the reason, keyed by the
  original key;
- ``neighborhoods``: NeighborhoodSnapshot records of the reclusterer, keyed by
  repository: each recluster's neighborhoods, file standings and changes;
- ``ranking``: RankingProfile records (the search weights), keyed by repository or
  ``*``: stored with the index, so every query replica ranks with the same weights.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_NAMESPACE = "gazetteer"


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int


@dataclass(frozen=True, slots=True)
class Topics:
    namespace: str = DEFAULT_NAMESPACE

    @property
    def file_events(self) -> str:
        return f"{self.namespace}.file-events.v1"

    @property
    def sources(self) -> str:
        return f"{self.namespace}.sources.v1"

    @property
    def graph_deltas(self) -> str:
        return f"{self.namespace}.graph-deltas.v1"

    @property
    def dead_letters(self) -> str:
        return f"{self.namespace}.dead-letters.v1"

    @property
    def neighborhoods(self) -> str:
        return f"{self.namespace}.neighborhoods.v1"

    @property
    def ranking(self) -> str:
        return f"{self.namespace}.ranking.v1"

    def specs(self, partitions: int) -> tuple[TopicSpec, ...]:
        """Every topic of the pipeline.

        The keyed topics share one partition count so that a repository's file events
        and its graph deltas land on the same partition number: the worker that owns a
        repository's input partition restores it from the same partition of the log.
        """
        names = (
            self.file_events,
            self.sources,
            self.graph_deltas,
            self.dead_letters,
            self.neighborhoods,
            self.ranking,
        )
        return tuple(TopicSpec(name, partitions) for name in names)


DEFAULT_TOPICS = Topics()


def all_topics(partitions: int, topics: Topics = DEFAULT_TOPICS) -> tuple[TopicSpec, ...]:
    return topics.specs(partitions)
