"""The query service: every answer the read side gives, as plain methods.

`QueryService` is what the HTTP routes (query/api.py and the route modules), the MCP
tools (query/mcp_tools.py) and the tests call; it imports no web framework. Its
methods are named as the MCP tools are and take the HTTP API's parameters under the
same names, so each transport is a few lines over it. A refusal is a `QueryRefused`
(query/service/errors.py), which each transport turns into its own kind of error.
"""

from __future__ import annotations

from query.dashboard.payload import DashboardData, dashboard_data
from query.service.churn import ChurnAnswers
from query.service.errors import (
    BadRequest,
    InvalidArguments,
    NotFound,
    NotReady,
    QueryRefused,
    Warming,
)
from query.service.graph_search import GraphSearchAnswers
from query.service.impact import ImpactAnswers
from query.service.navigation import NavigationAnswers
from query.service.neighborhoods import NeighborhoodAnswers
from query.service.org_answers import OrgAnswers
from query.service.org_graph_search import OrgGraphSearchAnswers
from query.service.repositories import RepositoryAnswers
from query.service.retrieval import RetrievalAnswers

__all__ = [
    "BadRequest",
    "InvalidArguments",
    "NotFound",
    "NotReady",
    "QueryRefused",
    "QueryService",
    "Warming",
]


class QueryService(
    RepositoryAnswers,
    OrgAnswers,
    OrgGraphSearchAnswers,
    RetrievalAnswers,
    GraphSearchAnswers,
    NavigationAnswers,
    ImpactAnswers,
    NeighborhoodAnswers,
    ChurnAnswers,
):
    """The answers over one read model (``QueryService(model, ready=...)``).

    The methods are synchronous: an answer is CPU work on the read model as it stands,
    and the caller runs it on the loop that folds the model, so no answer sees a delta
    half applied. Admission (how many compute at once) is the transports' compute gate.
    """

    def dashboard(self, repo: str) -> DashboardData:
        """One repository's neighborhood map, hubs, sizes and freshness, for the page."""
        view = self.view(repo)
        return dashboard_data(view, self.model.freshness(view.state.repo))
