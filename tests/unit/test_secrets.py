"""Secrets by name and by format (issue 19): exact redacted outputs, and what is left alone.

The fake secrets are built by concatenation so that this file does not itself look like
a leaked credential to other scanners (Gazetteer redacts them all the same).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import structlog

from producers.events import content_hash
from producers.file_reader import FileRead, classify, read_work_file, skip
from producers.secrets import RULES, entropy, find, redact, secret_name

ALNUM36 = "Zq3rT9vLm2Xw8Ks4Pd7Hj1Nc6Bf5Gy0Ua3Ve"  # 36 characters, mixed
AWS = "AKIA" + "Z7Q3R5T2W4Y6U3P7"
GITHUB = "ghp_" + ALNUM36
GITHUB_FINE = "github_pat_" + ("11ABCDEFG0" + "a1B2c3D4e5" * 7 + "xyz9")[:82]
GITLAB = "glpat-" + "Ab3dE6gH9jK2mN5pQ8sT"
SLACK = "xoxb-" + "1234567890123-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_HOOK = "hooks.slack.com/services/" + "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
STRIPE = "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc"
GCP = "AIza" + "SyD8x7Vb3Qw9Er2Ty5Ui1Op4As6Df0Gh3Jk"
OPENAI = "sk-" + "proj-" + "Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0Ef3Hi6Kl9No2Qr5"
ANTHROPIC = "sk-ant-" + "api03-" + ("Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0E" * 3)[:93] + "AA"
NPM = "npm_" + ALNUM36
PYPI = "pypi-" + "AgEIcHlwaS5vcmc" + "CJDk2ZDUxNjAtNTc0Ni00YzQ5LWJhNjAtZTQ1YjM3ZmQ0NTdhAAIqWzMsImZk"
SENDGRID = "SG." + "ngeVfQFYQlKU0ufo8x5d1A" + "." + "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr"
TWILIO = "SK" + "0123456789abcdef0123456789abcdef"
JWT = (
    "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
KEY_BODY = "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgwMbRvI0MBZhpF\n" * 3


CASES: list[tuple[str, str, str]] = [
    ("aws-access-token", f"key = {AWS}\n", "key = [REDACTED:aws-access-token]\n"),
    ("github-pat", f"GH={GITHUB} x", "GH=[REDACTED:github-pat] x"),
    ("github-fine-grained-pat", f"t {GITHUB_FINE}.", "t [REDACTED:github-fine-grained-pat]."),
    ("gitlab-pat", f"'{GITLAB}'", "'[REDACTED:gitlab-pat]'"),
    ("slack-token", f"({SLACK})", "([REDACTED:slack-token])"),
    ("slack-webhook-url", f"https://{SLACK_HOOK}", "https://[REDACTED:slack-webhook-url]"),
    ("stripe-access-token", f'"{STRIPE}"', '"[REDACTED:stripe-access-token]"'),
    ("gcp-api-key", f"k={GCP};", "k=[REDACTED:gcp-api-key];"),
    ("openai-api-key", f"{OPENAI}\n", "[REDACTED:openai-api-key]\n"),
    ("anthropic-api-key", f"{ANTHROPIC} ", "[REDACTED:anthropic-api-key] "),
    ("npm-access-token", f"//r/:_auth={NPM}", "//r/:_auth=[REDACTED:npm-access-token]"),
    ("pypi-upload-token", f"u {PYPI}", "u [REDACTED:pypi-upload-token]"),
    ("sendgrid-api-token", f"{SENDGRID}", "[REDACTED:sendgrid-api-token]"),
    ("twilio-api-key", f"sid {TWILIO}", "sid [REDACTED:twilio-api-key]"),
    ("jwt", f"Cookie: s={JWT}", "Cookie: s=[REDACTED:jwt]"),
    (
        "url-credentials",
        "DSN = 'postgres://app:Hx9v2Lq7Zt@db.internal:5432/app'",
        "DSN = 'postgres://app:[REDACTED:url-credentials]@db.internal:5432/app'",
    ),
    (
        "authorization-bearer",
        "-H 'Authorization: Bearer 8f3Kd92LmQz7Xw1Vb5Nc'",
        "-H 'Authorization: Bearer [REDACTED:authorization-bearer]'",
    ),
    (
        "secret-assignment",
        'DB_PASSWORD = "s3cR3t-P4ss!w0rd"\n',
        'DB_PASSWORD = "[REDACTED:secret-assignment]"\n',
    ),
]
"""A text holding a secret of each rule, and exactly what it is redacted to."""


@pytest.mark.parametrize(("rule", "text", "redacted"), CASES)
def test_each_rule_redacts_exactly_the_secret(rule: str, text: str, redacted: str):
    assert redact(text.encode()).content == redacted.encode()
    assert redact(text.encode()).counts == ((rule, 1),)


def test_every_rule_is_pinned_by_a_case_above():
    assert len(RULES) == 19
    assert len({r.id for r in RULES}) == len(RULES)


def test_a_private_key_block_keeps_its_line_count():
    begin, end = "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----"
    text = f'KEY = """\n{begin}\n{KEY_BODY}{end}\n"""\nx = 1\n'.encode()
    out = redact(text)
    assert out.content == b'KEY = """\n[REDACTED:private-key]\n\n\n\n\n"""\nx = 1\n'
    assert out.content.count(b"\n") == text.count(b"\n")
    assert out.counts == (("private-key", 1),)


def test_secret_assignment_forms():
    cases = {
        b'api_key: str = "Zx81Lq0Pw7Tv3Ns6"': b'api_key: str = "[REDACTED:secret-assignment]"',
        b'{"app_secret": "Zx81Lq0Pw7Tv3Ns6"}': b'{"app_secret": "[REDACTED:secret-assignment]"}',
        b"AUTH_TOKEN=Zx81Lq0Pw7Tv3Ns6\n": b"AUTH_TOKEN=[REDACTED:secret-assignment]\n",
        b"password: Zx81Lq0Pw7Tv3Ns6\n": b"password: [REDACTED:secret-assignment]\n",
        b'Password := "Zx81Lq0Pw7Tv3Ns6"': b'Password := "[REDACTED:secret-assignment]"',
        b"'secret' => 'Zx81Lq0Pw7Tv3Ns6',": b"'secret' => '[REDACTED:secret-assignment]',",
    }
    for text, redacted in cases.items():
        assert redact(text).content == redacted, text


@pytest.mark.parametrize(
    "text",
    [
        'password = "changeme"',  # too short, no entropy
        'token = "NAME_OF_THE_TOKEN_TYPE"',  # identifier-like
        'secret_key = os.environ["SECRET_KEY"]',
        "api_key = settings.API_KEY_2024_OVERRIDE",
        'password = "${DB_PASSWORD}"',  # a placeholder
        'password = "<your-password-here>"',
        'token_url = "https://oauth2.example.com/token"',
        "token = tokenize(line12345678, pos)",
        'if token == "Zx81Lq0Pw7Tv3Ns6":',  # a comparison, not an assignment
        'url = "https://user:password@host/"',  # a placeholder password
        'sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"',
        'id = "123e4567-e89b-12d3-a456-426614174000"',
        'FIXTURE = "aGVsbG8gd29ybGQgdGhpcyBpcyBhIGJhc2U2NCB0ZXN0IGZpeHR1cmU="',
        "def get_access_token_for_the_current_user_session(self): ...",
        'BEGIN = b"-----BEGIN RSA PRIVATE KEY-----"\nEND = b"-----END RSA PRIVATE KEY-----"',
        "XAKIA" + "Z7Q3R5T2W4Y6U3P7",  # inside a word: not a token
        "Task.sk_test_helper_function_name()",
    ],
)
def test_ordinary_code_is_left_alone(text: str):
    assert find(text.encode()) == []
    assert redact(text.encode()).content == text.encode()


def test_overlapping_matches_redact_once_the_higher_priority_rule():
    text = f'aws_secret_token = "{AWS}"'.encode()
    assert redact(text).content == b'aws_secret_token = "[REDACTED:aws-access-token]"'


def test_counts_are_per_rule_sorted():
    text = f"{AWS} {AWS}\n{GITHUB}\n".encode()
    assert redact(text).counts == (("aws-access-token", 2), ("github-pat", 1))
    assert redact(text).total == 3


def test_entropy():
    assert entropy(b"") == 0.0
    assert entropy(b"aaaa") == 0.0
    assert entropy(b"abcd") == 2.0


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        "app/.env.local",
        ".envrc",
        "deploy/prod.env",
        "certs/server.pem",
        "tls/server.key",
        "client.p12",
        "id_rsa",
        "home/.ssh/id_ed25519.pub",
        "credentials",
        "gcp/credentials.json",
        "config/secrets.yml",
        "kubeconfig",
        "ops/cluster.kubeconfig",
        "home/.kube/config",
        ".docker/config.json",
        ".netrc",
        ".pypirc",
        ".git-credentials",
        "infra/terraform.tfstate",
        "home/.ssh/known_hosts",
    ],
)
def test_secret_names(path: str):
    assert secret_name(path)


@pytest.mark.parametrize(
    "path",
    [
        "google/auth/credentials.py",  # code about credentials is code
        "pkg/secrets.go",
        "environment.py",
        "docs/env.md",
        "keys.py",
        "config.json",
        "kube/config.go",
        "src/token.rs",
    ],
)
def test_code_about_secrets_is_not_a_secret_name(path: str):
    assert not secret_name(path)


def test_classify_sends_and_hashes_the_redacted_bytes():
    data = f"AWS = '{AWS}'\n".encode()
    sent = b"AWS = '[REDACTED:aws-access-token]'\n"
    read = classify(data, max_bytes=1000)
    assert read == FileRead(
        sent, content_hash(sent), len(data), redactions=(("aws-access-token", 1),)
    )


def test_a_secret_file_is_skipped_unread(tmp_path: Path):
    (tmp_path / ".env").write_text(f"AWS={AWS}\n")
    (tmp_path / "link.txt").symlink_to(".env")
    assert read_work_file(tmp_path, ".env", max_bytes=1000) == skip("secret_file", 25)
    assert read_work_file(tmp_path, "link.txt", max_bytes=1000) == skip("secret_file")


def test_a_redacted_file_is_logged_without_its_secrets():
    read = classify(f"{AWS}\n{GITHUB}\n".encode(), max_bytes=1000)
    with structlog.testing.capture_logs() as logs:
        read.changed("a.py", origin="scan", commit=None, working_tree=True)
    assert logs == [
        {
            "event": "secrets_redacted",
            "path": "a.py",
            "count": 2,
            "rules": {"aws-access-token": 1, "github-pat": 1},
            "log_level": "info",
        }
    ]
    assert AWS not in repr(logs)
