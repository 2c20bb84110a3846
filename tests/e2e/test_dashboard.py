"""The dashboard in a real browser (Debian's chromium through Playwright) on ``gazetteer up``,
and its event stream under a real uvicorn: it ends with its client and with the service."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from deploy.parts import STOP_DEADLINE_S
from query.api import create_api
from query.read_model import ReadModel
from tests.e2e.cli import Gazetteer, eventually, get
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

CHROMIUM = Path("/usr/bin/chromium")
PNG = b"\x89PNG\r\n\x1a\n"

FILES: dict[str, str | bytes] = {
    "app/models.py": "class User:\n    name = ''\n",
    "app/store.py": "from app.models import User\n\ndef save(user: User) -> None:\n    pass\n",
    "app/service.py": (
        "from app.models import User\nfrom app.store import save\n\n"
        "def register(name):\n    save(User())\n"
    ),
    "app/main.py": (
        "from app.service import register\nfrom lib.fmt import title\n\n"
        "def main():\n    register(title('x'))\n"
    ),
    "lib/text.py": "def slug(s):\n    return s.lower()\n",
    "lib/fmt.py": "from lib.text import slug\n\ndef title(s):\n    return slug(s).title()\n",
}
AUDIT = "from app.models import User\n\ndef audit(user: User) -> str:\n    return user.name\n"
SERVICE = (
    "from app.audit import audit\nfrom app.models import User\nfrom app.store import save\n\n"
    "def register(name):\n    user = User()\n    audit(user)\n    save(user)\n"
)

NODES = (
    "() => { const d = document.getElementById('neighborhood-map').data;"
    " const t = d && d.find(t => t.name === 'neighborhoods'); return t ? t.x.length : -1; }"
)
CHURN_HAS = (
    "sha => { const d = document.getElementById('churn-chart').data;"
    " return !!d && d.some(t => (t.x || []).includes(sha)); }"
)
CHURN_AT = (
    "([name, sha]) => { const t = document.getElementById('churn-chart').data"
    ".find(t => t.name === name); return t.y[t.x.indexOf(sha)]; }"
)
HUBS_HAVE = (
    "path => { const d = document.getElementById('hubs-chart').data;"
    " return !!d && d.some(t => (t.y || []).includes(path)); }"
)
FRESH_ROW = (
    "([repo, sha]) => {"
    " const row = document.querySelector(`#freshness-table tr[data-repo='${repo}']`);"
    " return !!row && row.cells[1].textContent === 'fresh' && row.cells[4].textContent === sha; }"
)


def clustered_at(url: str, rid: str, commit: str) -> bool:
    fresh = get(url, f"/repositories/{rid}/freshness")
    stamp = get(url, f"/repositories/{rid}/neighborhoods")["snapshot"]
    return (
        fresh["status"] == "fresh"
        and fresh["indexed_commit"] == commit
        and stamp["seq"] is not None
        and not stamp["stale"]
        and stamp["indexed_commit"] == commit
    )


def churn_served(url: str, rid: str) -> bool:
    return httpx.get(f"{url}/repositories/{rid}/churn", timeout=10).status_code == 200


def save_screenshot(page, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    shot = tmp_path / "dashboard.png"
    page.screenshot(path=str(shot), full_page=True)
    data = shot.read_bytes()
    assert data.startswith(PNG) and len(data) > 10_000, "not a PNG of a drawn page"
    target = os.environ.get("GAZETTEER_SCREENSHOT_DIR")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(target) / shot.name)
    return shot


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")
def test_the_dashboard_draws_the_repository_and_follows_a_commit_live(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    repo = GitRepo.create(tmp_path / "shop", FILES)
    other = GitRepo.create(tmp_path / "notes", {"notes/todo.py": "ITEMS = []\n"})
    up = Gazetteer(["up", str(repo.root), str(other.root), "--port", "0"], tmp_path / "data")
    playwright = sync_playwright().start()
    try:
        url = up.url()
        eventually(lambda: len(get(url, "/repositories")["items"]) == 2, 60, "the repositories")
        ids = {r["name"]: r["repo"] for r in get(url, "/repositories")["items"]}
        rid, other_rid = ids[repo.root.name], ids[other.root.name]
        eventually(lambda: clustered_at(url, rid, repo.head()), 60, "the first neighborhoods")
        expected_nodes = get(url, f"/repositories/{rid}/neighborhoods")["total"]
        assert expected_nodes >= 2

        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(f"{url}/dashboard?repo={rid}")
        page.wait_for_function(f"() => ({NODES})() === {expected_nodes}", timeout=15_000)
        page.wait_for_function(
            "() => document.getElementById('live-status').textContent === 'live'"
        )
        # A refresh stamps the page once all its charts are drawn (the churn last).
        page.wait_for_function(f"() => document.body.dataset.repo === {rid!r}")
        page.evaluate("() => { window.notReloaded = true; }")

        repo.write("app/audit.py", AUDIT)
        repo.write("app/service.py", SERVICE)
        head = repo.commit("audit registrations")
        page.wait_for_function(FRESH_ROW, arg=[rid, head[:7]], timeout=30_000)
        churn = churn_served(url, rid)
        if churn:
            page.wait_for_function(CHURN_HAS, arg=head[:7], timeout=30_000)
            assert page.evaluate(CHURN_AT, ["files added", head[:7]]) == 1
            assert page.evaluate(CHURN_AT, ["files removed", head[:7]]) == 0
            assert page.evaluate(CHURN_AT, ["dependencies added", head[:7]]) >= 1
        else:
            # Without the churn ledger the charts say so, and the map still follows.
            assert page.is_visible("#churn-empty")
            page.wait_for_function(HUBS_HAVE, arg="app/audit.py", timeout=30_000)
        eventually(lambda: clustered_at(url, rid, head), 30, "the neighborhoods after the commit")
        nodes_now = get(url, f"/repositories/{rid}/neighborhoods")["total"]
        page.wait_for_function(f"() => ({NODES})() === {nodes_now}", timeout=15_000)
        assert page.evaluate("() => window.notReloaded === true"), "the page was reloaded"

        node = page.locator("#neighborhood-map .scatterlayer .trace:last-child .point").first
        node.scroll_into_view_if_needed()
        point = node.bounding_box()
        assert point is not None
        x, y = point["x"] + point["width"] / 2, point["y"] + point["height"] / 2
        page.mouse.move(x, y)
        page.wait_for_selector("#neighborhood-map .hoverlayer .hovertext")
        page.mouse.click(x, y)
        page.wait_for_function("() => document.querySelectorAll('#members-table tbody tr').length")
        save_screenshot(page, tmp_path)

        # The picker switches the charts to the other repository.
        eventually(lambda: clustered_at(url, other_rid, other.head()), 30, "the other repository")
        page.select_option("#repo-picker", other_rid)
        page.wait_for_function(
            f"() => ({NODES})() === 1 && document.body.dataset.repo === '{other_rid}'"
        )
        assert page.locator("#freshness-table tbody tr").count() == 2
        # Without the churn routes, the browser logs their 404s; nothing else may fail.
        assert [e for e in errors if churn or "404" not in e] == []

        # An open event stream does not hold up the shutdown.
        started = time.monotonic()
        assert up.interrupt() == 0
        print(f"shutdown with the dashboard open took {time.monotonic() - started:.1f} s")
        # Held up, the stop would end at the deadline, saying what was still running.
        assert time.monotonic() - started < STOP_DEADLINE_S
        assert "stop_overdue" not in up.log_text()
        browser.close()
    finally:
        playwright.stop()
        up.kill()


class QuietServer(uvicorn.Server):
    """As in deploy.query_part: the test, not uvicorn, owns the signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def serving(
    stop: asyncio.Event,
) -> AsyncIterator[tuple[QuietServer, asyncio.Task[None], str]]:
    api = create_api(ReadModel(), ready=lambda: True)
    api.state.stopping = stop  # as run_query hands the service's stop event over
    server = QuietServer(uvicorn.Config(api, host="127.0.0.1", port=0, log_config=None))
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            await asyncio.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield server, task, f"http://127.0.0.1:{port}/dashboard/events"
    finally:
        stop.set()
        server.should_exit = True
        await asyncio.wait_for(task, 5.0)


async def first_line(events: httpx.Response) -> str:
    assert events.headers["content-type"].startswith("text/event-stream")
    return await anext(events.aiter_lines())


async def test_an_open_event_stream_ends_when_the_service_stops() -> None:
    stop = asyncio.Event()
    async with serving(stop) as (server, task, url), httpx.AsyncClient(timeout=10) as client:
        async with client.stream("GET", url) as events:
            assert await first_line(events) == "retry: 500"
            started = time.monotonic()
            stop.set()
            server.should_exit = True
            await asyncio.wait_for(asyncio.shield(task), 5.0)
            assert time.monotonic() - started < 2.0, "the stream held up the shutdown"


async def test_an_event_stream_ends_when_its_client_goes_away() -> None:
    stop = asyncio.Event()
    async with serving(stop) as (server, _, url), httpx.AsyncClient(timeout=10) as client:
        async with client.stream("GET", url) as events:
            assert await first_line(events) == "retry: 500"
            assert len(server.server_state.tasks) == 1
        started = time.monotonic()
        while server.server_state.tasks:
            assert time.monotonic() - started < 2.0, "the stream outlived its client"
            await asyncio.sleep(0.05)
