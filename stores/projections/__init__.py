"""Projections both the worker and the query service fold from the graph deltas: the file
graph and its state, hubs, importance, node ids and folders."""
