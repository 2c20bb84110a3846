"""The code graph: ids, lookups with dependency recording, resolution, per-file subgraphs."""
