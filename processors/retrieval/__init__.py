"""Retrieval for agents: chunks, sparse and dense search, graph expansion, context packs."""
