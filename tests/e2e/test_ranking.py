"""``gazetteer ranking set``: weights stored with the index change what search answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.cli import Gazetteer, eventually, get, run_cli
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

FILES = {
    "shop/cart.py": "class Cart:\n    def total(self):\n        return sum(self.prices())\n",
    "shop/prices.py": (
        '"""Prices of the cart, totals and discounts: the cart total is computed here."""\n'
        "def discount(total):\n    return total * 0.9\n"
    ),
}


def test_a_stored_profile_reranks_search_on_the_running_service(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "shop", FILES)
    up = Gazetteer(
        ["up", str(repo.root), "--port", "0"], tmp_path / "data", GAZETTEER_LOG_FORMAT="json"
    )
    try:
        url = up.url()
        eventually(
            lambda: any(
                r["freshness"]["status"] == "fresh" for r in get(url, "/repositories")["items"]
            ),
            60,
            "the repository to be indexed",
        )
        rid = get(url, "/repositories")["items"][0]["repo"]
        broker = "kafka://" + up.log_events("broker_connected")[0]["bootstrap"]
        question = {"q": "cart total", "limit": 5}
        before = get(url, f"/repositories/{rid}/search", **question)
        assert before["ranking"]["source"] == "defaults"

        profile = tmp_path / "weights.json"
        only_symbols = {"text": 0, "symbol": 1, "filename": 0, "structural": 0, "source": 0}
        only_symbols |= {"dense_rrf": 0, "path": 0}
        profile.write_text(json.dumps({"weights": only_symbols, "source": "t"}))
        done = run_cli("--broker", broker, "ranking", "set", str(profile), "--repo", rid)
        assert done.returncode == 0, done.stderr
        eventually(
            lambda: get(url, f"/repositories/{rid}/ranking")["scope"] == rid, 30, "the profile"
        )
        after = get(url, f"/repositories/{rid}/search", **question)
        assert after["ranking"]["weights"]["text"] == 0.0 and after["ranking"]["source"] == "t"
        # Only the named symbol counts now: the file defining Cart first.
        assert after["items"][0]["path"] == "shop/cart.py"
        scores = [(hit["score"], hit["signals"].get("symbol", 0.0)) for hit in after["items"]]
        assert all(score == symbol for score, symbol in scores), scores

        profile.write_text(json.dumps({"weights": {"txet": 1.0}}))
        refused = run_cli("--broker", broker, "ranking", "set", str(profile))
        assert refused.returncode == 2 and "unknown ranking weights ['txet']" in refused.stderr
        assert run_cli("ranking", "set", str(profile)).returncode == 2  # no broker
        assert up.interrupt() == 0
    finally:
        up.kill()
