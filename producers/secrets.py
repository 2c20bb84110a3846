r"""Secrets never leave the producer (issue 19): files skipped by name, values redacted.

Two rule sets, both applied before an event is built, so that no topic, store, answer or
log holds what they match (docs/SECURITY.md lists them with the false positives measured
on the benchmark repositories):

* ``secret_name(path)``: a file that is a secret by its name (``.env*``, ``*.pem``,
  ``id_rsa*``, kube configs, ...) is recorded as skipped, ``secret_file``, never read.
* ``redact(data)``: inside any other file, each match of a rule in ``RULES`` is replaced
  by ``[REDACTED:<rule id>]`` plus the newlines it spanned, so every line keeps its
  number (a private key block becomes the label and as many empty lines).

No maintained detector fits as a library: detect-secrets (Yelp, PyPI 1.5.0) scans line
by line through ~25 plugins; its ``scan_line`` ran at 0.1 MB/s on flask, far below what
a scan reads (docs/SECURITY.md).
The rules are therefore our own, one compiled bytes regex each (fast: most open with a
literal prefix), with ids and patterns taken from gitleaks' ``config/gitleaks.toml``
(MIT) where a rule of the same id exists. The generic ``secret-assignment`` rule is the
only heuristic: a value assigned to a name holding ``password``/``secret``/``token``/...
that is at least 12 characters, not a placeholder, not identifier-like and of Shannon
entropy >= 3.5 bits per character (gitleaks' generic-api-key threshold).
"""

from __future__ import annotations

import math
import posixpath
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

REDACTED = b"[REDACTED:%s]"
REDACTED_MARK = b"[REDACTED:"  # what the worker counts to say a file was redacted


@dataclass(frozen=True, slots=True)
class Rule:
    """A secret format: ``pattern``'s group ``group`` is what is redacted."""

    id: str
    pattern: re.Pattern[bytes]
    group: int = 0
    min_entropy: float = 0.0  # of the redacted part, bits per character
    heuristic: bool = False  # a value of an assignment: placeholders are left alone
    bounded: bool = False  # the byte before the match is not a word character
    lowered: bool = False  # matched over the ASCII-lowercased bytes (same offsets)
    anchors: tuple[bytes, ...] = ()  # if any: matched only where one of these starts


def _rule(id: str, pattern: bytes, **kw: object) -> Rule:
    return Rule(id, re.compile(pattern), **kw)  # type: ignore[arg-type]


def _token(id: str, pattern: bytes, *anchors: bytes) -> Rule:
    """A service's token: a literal prefix, searched fast, that must start a word."""
    return _rule(id, pattern, bounded=True, anchors=anchors)


_KEYWORDS = (
    rb"passw(?:or)?d|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
    rb"|auth[_-]?key|credential"
)
# over lowercased bytes: a keyword, the name's tail, an optional closing quote, then
# `=`, `:=`, `=>`, `:` or `: type =`; the value quoted (group 2) or bare (group 3)
_ASSIGNMENT = (
    rb"(?:" + _KEYWORDS + rb")[\w.-]{0,40}[\"']?\s{0,4}"
    rb"(?::\s{0,4}[\w\[\]., |]{1,40}?\s{0,4}=(?!=)|:=|=>|=(?!=)|:(?!:))\s{0,4}"
    rb"(?:([\"'`])([^\"'`\s()]{12,200})\1|([a-z0-9+/_~=-]{12,200})(?=[\s,;]|\Z))"
)

# where a keyword of _KEYWORDS can start
_ANCHORS = (
    *(b"pass", b"pwd", b"secret", b"token", b"credential"),
    *(b"api", b"access", b"private", b"auth"),
)

RULES: tuple[Rule, ...] = (
    _rule(
        "private-key",
        rb"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
        rb"[A-Za-z0-9+/=\s:,.\\\"'-]{64,}?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----",
    ),
    _token("aws-access-token", rb"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b"),
    _token("github-pat", rb"gh[pousr]_[0-9A-Za-z]{36}\b", b"gh"),
    _token("github-fine-grained-pat", rb"github_pat_\w{82}\b"),
    _token("gitlab-pat", rb"glpat-[\w-]{20}\b"),
    _token("slack-token", rb"xox[abeoprs]-(?:[0-9]{10,13}-)+[0-9A-Za-z-]{8,}"),
    _rule(
        "slack-webhook-url",
        rb"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}",
    ),
    _token(
        "stripe-access-token", rb"[sr]k_(?:test|live|prod)_[0-9A-Za-z]{10,99}\b", b"sk_", b"rk_"
    ),
    _token("gcp-api-key", rb"AIza[\w-]{35}(?![\w-])"),
    _token(
        "openai-api-key",
        rb"sk-(?:(?:proj|svcacct|admin)-[\w-]{40,}|[\w-]{20,}T3BlbkFJ[\w-]{20,})",
    ),
    _token("anthropic-api-key", rb"sk-ant-(?:api03|admin01)-[\w-]{80,}"),
    _token("npm-access-token", rb"npm_[0-9A-Za-z]{36}\b"),
    _token("pypi-upload-token", rb"pypi-AgEIcHlwaS5vcmc[\w-]{50,}", b"pypi-AgEI"),
    _token("sendgrid-api-token", rb"SG\.[\w-]{22}\.[\w-]{43}(?![\w-])"),
    _token("twilio-api-key", rb"SK[0-9a-fA-F]{32}\b"),
    _token(
        "jwt", rb"eyJ[A-Za-z0-9_-]{17,}\.eyJ[A-Za-z0-9_-]{17,}\.[A-Za-z0-9_-]{10,}={0,2}", b"eyJ"
    ),
    _rule(
        "url-credentials",  # scheme://user:password@host: only the password
        rb"://[^\s:/@\"'<>]{1,64}:([^\s:/@\"'<>]{3,128})@[\w.-]+",
        group=1,
        heuristic=True,
    ),
    _rule(
        "authorization-bearer",  # an HTTP Authorization header's credentials
        rb"bearer\s{1,4}([a-z0-9._~+/-]{20,}=*)",
        group=1,
        min_entropy=3.5,
        heuristic=True,
        lowered=True,
    ),
    _rule(
        "secret-assignment",  # NAME = "value", NAME: value, "name": "value"
        _ASSIGNMENT,
        group=2,
        min_entropy=3.5,
        heuristic=True,
        lowered=True,
        anchors=_ANCHORS,
    ),
)
"""The redaction rules, in priority order: an earlier rule's match wins an overlap."""

_PLACEHOLDER = re.compile(
    rb"(?i)[${}<>%*]|\.\.\.|xxxx|example|changeme|placeholder|your[_-]|dummy|redacted|://"
)
_WORD = re.compile(rb"\w")
_IDENTIFIER_LIKE = re.compile(rb"[A-Za-z_.-]+|[a-z_.-]+[0-9]*|[A-Z_.-]+[0-9]*|/[\w./-]*")


def entropy(value: bytes) -> float:
    """Shannon entropy of ``value`` in bits per character (0.0 for empty)."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


def _kept(rule: Rule, value: bytes) -> bool:
    """False when a heuristic match is a placeholder or ordinary code, not a secret."""
    if not rule.heuristic:
        return True
    if _PLACEHOLDER.search(value) or _IDENTIFIER_LIKE.fullmatch(value):
        return False
    return entropy(value) >= rule.min_entropy


@dataclass(frozen=True, slots=True)
class Redaction:
    """``data`` with its secrets replaced, and how many of each rule were."""

    content: bytes
    counts: tuple[tuple[str, int], ...] = ()  # (rule id, count), sorted by id

    @property
    def total(self) -> int:
        return sum(n for _, n in self.counts)


def _first_group(m: re.Match[bytes], first: int) -> int | None:
    """The group to redact: ``first`` or, for alternatives, the first later one that
    matched (0: the whole match)."""
    for group in range(first, (m.re.groups if first else 0) + 1):
        if m.group(group) is not None:
            return group
    return None


def _matches(rule: Rule, text: bytes) -> Iterator[re.Match[bytes]]:
    """``rule``'s matches: a regex scan, or one ``match`` where each anchor occurs (a
    ``bytes.find`` is ten times faster than a regex opening with an alternation)."""
    if not rule.anchors:
        yield from rule.pattern.finditer(text)
        return
    for anchor in rule.anchors:
        at = text.find(anchor)
        while at >= 0:
            m = rule.pattern.match(text, at)
            if m:
                yield m
            at = text.find(anchor, at + 1)


def find(data: bytes) -> list[tuple[int, int, str]]:
    """The spans to redact, ``(start, end, rule id)``, sorted and non-overlapping."""
    spans: list[tuple[int, int, int, str]] = []
    lowered = data.lower()  # ASCII only: every offset stays the same
    for priority, rule in enumerate(RULES):
        for m in _matches(rule, lowered if rule.lowered else data):
            group = _first_group(m, rule.group)
            if group is None:
                continue
            start, end = m.span(group)
            if rule.bounded and start and _WORD.fullmatch(data, start - 1, start):
                continue
            if _kept(rule, data[start:end]):
                spans.append((start, priority, end, rule.id))
    spans.sort()
    kept: list[tuple[int, int, str]] = []
    for start, _, end, rule_id in spans:
        if kept and start < kept[-1][1]:
            continue  # overlaps an earlier (or higher-priority) span
        kept.append((start, end, rule_id))
    return kept


def redact(data: bytes) -> Redaction:
    """``data`` with every secret span replaced by its label and the newlines it held."""
    spans = find(data)
    if not spans:
        return Redaction(data)
    parts, at = [], 0
    for start, end, rule_id in spans:
        newlines = b"\n" * data.count(b"\n", start, end)  # every line keeps its number
        parts += [data[at:start], REDACTED % rule_id.encode(), newlines]
        at = end
    parts.append(data[at:])
    counts = Counter(rule_id for _, _, rule_id in spans)
    return Redaction(b"".join(parts), tuple(sorted(counts.items())))


_SECRET_NAMES = re.compile(
    r"""(?x)
      \.env.*              # .env, .env.local, .envrc (dotenv, direnv)
    | .*\.env
    | .*\.(?:pem|key|p12|pfx|jks|keystore|ppk|kdbx|keytab|tfstate(?:\.backup)?|tfvars)
    | id_(?:rsa|dsa|ecdsa|ed25519)(?:\..*)?   # ssh keys, .pub included
    | \.?(?:credentials|secrets)(?:\.(?:json|ya?ml|xml|ini|toml|csv|txt|cfg|conf))?
    | kubeconfig(?:\..*)? | .*\.kubeconfig
    | \.netrc | _netrc | \.pgpass | \.pypirc | \.git-credentials | \.htpasswd
    """
)
_SECRET_PATHS = ("/.kube/config", "/.docker/config.json", "/.aws/config", "/.ssh/")


def secret_name(path: str) -> bool:
    """True when ``path`` (a repository path) names a file that is a secret by its name.

    ``credentials.py`` or ``secrets.go`` are code, and are read (and redacted) as any
    other file; ``credentials``, ``credentials.json`` or ``secrets.yml`` are not.
    """
    if _SECRET_NAMES.fullmatch(posixpath.basename(path)):
        return True
    slashed = "/" + path
    return any(slashed.endswith(p) or (p.endswith("/") and p in slashed) for p in _SECRET_PATHS)
