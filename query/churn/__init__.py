"""The churn ledger and the structural diff: how the code graph changed, per
commit and between two commits, folded from the graph deltas and neighborhood snapshots."""
