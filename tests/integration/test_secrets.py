"""Secrets are never indexed or served (issue 19), through the real path: a scan on a
real broker, the worker, the read side's HTTP answers and every topic's bytes."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from producers.events import FileChanged, decode_file_event
from stores.delta_log import read_values
from tests.gitrepo import GitRepo
from tests.integration.stack import Stack
from tests.integration.test_streaming import fresh_repo

pytestmark = pytest.mark.integration

# built by concatenation: this file must not look like a leaked credential itself
AWS = "AKIA" + "Z7Q3R5T2W4Y6U3P7"
GITHUB = "ghp_" + "Zq3rT9vLm2Xw8Ks4Pd7Hj1Nc6Bf5Gy0Ua3Ve"
DOTENV = "DOTENV_ONLY_" + "Hx9v2Lq7Zt4Wn8Pk"  # only in .env: no rule would redact it
FILES = {
    "billing/client.py": (
        "AWS_ACCESS_KEY_ID = '" + AWS + "'\n"
        "GITHUB_TOKEN = '" + GITHUB + "'\n\n"
        "def charge_invoice(amount):\n    return amount\n"
    ),
    ".env": f"SETTING={DOTENV}\nAWS_ACCESS_KEY_ID={AWS}\n",
}
SECRETS = (AWS, GITHUB, DOTENV)


def _texts(topic: str, value: bytes) -> list[bytes]:
    """What a value holds in the clear: itself, inflated if it is zlib, and a file event's
    (base64) contents decoded."""
    texts = [value]
    try:
        texts.append(zlib.decompress(value))
    except zlib.error:
        pass
    if topic.endswith("file-events.v1"):
        event = decode_file_event(value)
        if isinstance(event, FileChanged) and event.content is not None:
            texts.append(event.content)
    return texts


async def test_secret_files_are_skipped_and_secret_values_never_reach_topics_or_answers(
    stack: Stack, tmp_path: Path
) -> None:
    repo = GitRepo.create(tmp_path / "billing", FILES)
    await stack.start_sources([repo.root])
    rid = (await fresh_repo(stack, commit=repo.head()))["repo"]

    files = await stack.get(f"/repositories/{rid}/files", limit=100)
    assert {f["path"]: f["skipped"] for f in files["items"]} == {
        ".env": "secret_file",
        "billing/client.py": None,
    }
    detail = await stack.get(f"/repositories/{rid}/files/billing/client.py")
    assert detail["problems"] == ["secrets_redacted:2"]
    assert [s["name"] for s in detail["symbols"]] == [
        "AWS_ACCESS_KEY_ID",
        "GITHUB_TOKEN",
        "charge_invoice",
    ]

    search = await stack.get(f"/repositories/{rid}/search", q="aws access key github token")
    assert [hit["path"] for hit in search["items"]][:1] == ["billing/client.py"]
    pack = await stack.get(f"/repositories/{rid}/context?path=billing/client.py")
    pack_text = json.dumps(pack)
    assert "[REDACTED:aws-access-token]" in pack_text
    assert "[REDACTED:github-pat]" in pack_text
    answers = json.dumps([files, detail, search, pack])
    assert [s for s in SECRETS if s in answers] == []

    leaked: dict[str, int] = {}
    read = 0
    for spec in stack.settings.topics.specs(stack.settings.partitions):
        for p in range(spec.partitions):
            for value in await read_values(
                stack.cluster.bootstrap, spec.name, p, stack.cluster.end_offsets
            ):
                read += 1
                for text in _texts(spec.name, value):
                    for secret in SECRETS:
                        if secret.encode() in text:
                            leaked[spec.name] = leaked.get(spec.name, 0) + 1
    assert read > 5
    assert leaked == {}
