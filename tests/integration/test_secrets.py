"""Secrets are never indexed or served (issue 19), through the real path: a scan on a
real broker, the worker, the read side's HTTP answers, every topic's bytes, every file
the deployment keeps on disk and every log line, grepped for a secret of each rule."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest
import structlog

from producers.events import FileChanged, decode_file_event
from stores.delta_log import read_values
from tests.gitrepo import GitRepo
from tests.integration.stack import Stack
from tests.integration.test_streaming import fresh_repo
from tests.unit.test_secrets import CASES, KEY_BODY

pytestmark = pytest.mark.integration

# built by concatenation: this file must not look like a leaked credential itself
AWS = "AKIA" + "Z7Q3R5T2W4Y6U3P7"
GITHUB = "ghp_" + "Zq3rT9vLm2Xw8Ks4Pd7Hj1Nc6Bf5Gy0Ua3Ve"
DOTENV = "DOTENV_ONLY_" + "Hx9v2Lq7Zt4Wn8Pk"  # only in .env: no rule would redact it
KEY = "-----BEGIN RSA PRIVATE KEY-----\n" + KEY_BODY + "-----END RSA PRIVATE KEY-----"


def _secret_of(text: str, redacted: str) -> str:
    """What the redaction took out of ``text``: the text between the parts it kept."""
    head = 0
    while text[head] == redacted[head]:
        head += 1
    tail = 0
    while text[-1 - tail] == redacted[-1 - tail]:
        tail += 1
    return text[head : len(text) - tail]


# A file holding a secret of every rule (tests/unit/test_secrets.py pins each one's
# redaction), a private key block among them.
EVERY_FORMAT = (
    "\n".join(f"# {rule}\nVALUE_{n} = {text!r}" for n, (rule, text, _) in enumerate(CASES))
    + '\nKEY = """\n'
    + KEY
    + '\n"""\n\n\ndef settle_invoice(total):\n    return total\n'
)
FILES = {
    "billing/client.py": (
        "AWS_ACCESS_KEY_ID = '" + AWS + "'\n"
        "GITHUB_TOKEN = '" + GITHUB + "'\n\n"
        "def charge_invoice(amount):\n    return amount\n"
    ),
    "billing/every_format.py": EVERY_FORMAT,
    ".env": f"SETTING={DOTENV}\nAWS_ACCESS_KEY_ID={AWS}\n",
}
SECRETS = (
    AWS,
    GITHUB,
    DOTENV,
    *(_secret_of(text, redacted) for _, text, redacted in CASES),
    KEY_BODY.split("\n")[0],
)


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


def _file_texts(raw: bytes) -> list[bytes]:
    """A kept file's bytes, and its body inflated when it is framed (a magic line and a
    header line, then zlib: stores/framing.py) or zlib as a whole."""
    texts = [raw]
    after_magic = raw.partition(b"\n")[2]
    for candidate in (raw, after_magic, after_magic.partition(b"\n")[2]):
        try:
            texts.append(zlib.decompress(candidate))
        except zlib.error:
            pass
    return texts


async def test_secret_files_are_skipped_and_secret_values_never_reach_topics_or_answers(
    stack: Stack, tmp_path: Path
) -> None:
    assert len(SECRETS) == len(CASES) + 4 and all(len(s) >= 8 for s in SECRETS)
    repo = GitRepo.create(tmp_path / "billing", FILES)
    with structlog.testing.capture_logs() as logged:
        await stack.start_sources([repo.root])
        rid = (await fresh_repo(stack, commit=repo.head()))["repo"]
        await _answers_topics_and_files_hold_no_secret(stack, rid)
    assert len(logged) > 10
    assert [s for s in SECRETS if s in repr(logged)] == []


async def _answers_topics_and_files_hold_no_secret(stack: Stack, rid: str) -> None:
    files = await stack.get(f"/repositories/{rid}/files", limit=100)
    assert {f["path"]: f["skipped"] for f in files["items"]} == {
        ".env": "secret_file",
        "billing/client.py": None,
        "billing/every_format.py": None,
    }
    detail = await stack.get(f"/repositories/{rid}/files/billing/client.py")
    assert detail["problems"] == ["secrets_redacted:2"]
    assert [s["name"] for s in detail["symbols"]] == [
        "AWS_ACCESS_KEY_ID",
        "GITHUB_TOKEN",
        "charge_invoice",
    ]
    every = await stack.get(f"/repositories/{rid}/files/billing/every_format.py")
    assert every["problems"] == [f"secrets_redacted:{len(CASES) + 1}"]

    search = await stack.get(f"/repositories/{rid}/search", q="aws access key github token")
    assert [hit["path"] for hit in search["items"]][:1] == ["billing/client.py"]
    pack = await stack.get(f"/repositories/{rid}/context?path=billing/client.py")
    pack_text = json.dumps(pack)
    assert "[REDACTED:aws-access-token]" in pack_text
    assert "[REDACTED:github-pat]" in pack_text
    every_pack = await stack.get(f"/repositories/{rid}/context?path=billing/every_format.py")
    assert json.dumps(every_pack).count("[REDACTED:") >= len(CASES) + 1
    answers = json.dumps([files, detail, every, search, pack, every_pack])
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

    # Every file the deployment keeps (state snapshots, churn ledgers, run dirs).
    assert _secrets_on_disk(Path(stack.settings.data_dir)) == {}


def _secrets_on_disk(root: Path) -> dict[str, list[str]]:
    kept = [p for p in root.rglob("*") if p.is_file()]
    assert kept
    for snapshot in (p for p in kept if p.suffix == ".snap"):  # read inside, not only around
        assert any(b"settle_invoice" in t for t in _file_texts(snapshot.read_bytes()))
    on_disk = {
        str(p): [s for s in SECRETS for t in _file_texts(p.read_bytes()) if s.encode() in t]
        for p in kept
    }
    return {p: found for p, found in on_disk.items() if found}
