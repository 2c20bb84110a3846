"""The dashboard served by the query service (issue 6): churn, neighborhoods, hubs, freshness.

Its routes are in query/dashboard/routes.py; this package imports no web framework, so
the query service can build the dashboard's data without one.
"""
