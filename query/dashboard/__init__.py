"""The dashboard served by the query service (issue 6): churn, neighborhoods, hubs, freshness."""

from query.dashboard.routes import create_dashboard_routes

__all__ = ["create_dashboard_routes"]
