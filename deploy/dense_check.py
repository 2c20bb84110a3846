"""Whether the dense retrieval settings can work together: the check ``gazetteer``
makes before a dense verb runs (deploy/cli.py).

Apart from `deploy.dense_setup`, which builds the dense parts and imports their
machinery (the embedders, the vector stores, numpy): the check needs the settings
alone, and ``up``, which only supervises, made it too (issue 21: 0.1-0.2 s of its
start-up, before the broker starts).
"""

from __future__ import annotations

from deploy.settings import Settings


class DenseSetupError(ValueError):
    """Settings that cannot work together."""


def check_dense_settings(settings: Settings) -> None:
    """Raise DenseSetupError, saying what to set, for settings that cannot work."""
    if settings.embed_in == "worker" and settings.embedder != "none" and not settings.qdrant_url:
        raise DenseSetupError(
            "GAZETTEER_EMBED_IN=worker needs GAZETTEER_QDRANT_URL: the workers write the "
            "vectors the query services search, so they must share a Qdrant server "
            "(or leave GAZETTEER_EMBED_IN=query, where each query service embeds for itself)"
        )
