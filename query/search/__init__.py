"""The read side's search: ranking, sparse index, adjacency and traversal, graph search,
expansion, context packs, session memory and the ranking's tuning."""
