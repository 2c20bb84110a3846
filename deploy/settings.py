"""One settings object per process, read once from the environment (``GAZETTEER_*``).

No other module reads ``os.environ``: the composition root builds a Settings and passes
what each part needs down as plain values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from producers.topics import Topics
from query.addresses import is_loopback
from query.limits import MAX_BODY_BYTES, MAX_URL_BYTES, TIMEOUT_S, RequestLimits
from query.shard import Shard, parse_partitions, parse_shard
from query.token_bucket import Rate

DEFAULT_RATE_PER_S = 20.0


def is_loopback_bind(host: str) -> bool:
    """``localhost`` or a loopback address (``127.0.0.0/8``, ``::1``)."""
    host = host.strip().lower().strip("[]")
    return host == "localhost" or is_loopback(host)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GAZETTEER_", frozen=True, extra="ignore")

    broker: str = Field(
        "embedded",
        description="'embedded' (start Tansu on loopback) or kafka://host:port[,host:port]",
    )
    data_dir: Path = Field(Path.home() / ".gazetteer", description="run and cache directories")
    host: str = Field("127.0.0.1", description="the query service's bind address")
    port: int = Field(8765, ge=0, le=65535, description="0, or taken: pick a free port")
    allowed_hosts: str = Field(
        "",
        description="comma list of the names the query service is reached by, beside its "
        "bind address (Host header check, query/host_check.py); '*': any",
    )
    auth: bool = Field(
        False,
        description="ask a token of every request but /health (GAZETTEER_AUTH=on; tokens: "
        "`gazetteer token create`); off, the service is open to whoever reaches its port",
    )
    insecure: bool = Field(
        False,
        description="serve a non-loopback address without authentication (--insecure): "
        "refused otherwise",
    )
    token: SecretStr | None = Field(
        None, description="the bearer token `gazetteer mcp` sends to the query service"
    )
    max_request_bytes: int = Field(
        MAX_BODY_BYTES, ge=1, description="a larger request body is refused (413)"
    )
    max_url_bytes: int = Field(
        MAX_URL_BYTES, ge=1, description="a longer path and query string is refused (414)"
    )
    request_timeout_s: float = Field(
        TIMEOUT_S, ge=0, description="a request not answered by then is cancelled (503); 0: none"
    )
    rate_limit_per_s: float | None = Field(
        None,
        ge=0,
        description="requests a second per token (per client address when unauthenticated), "
        f"beyond the burst (429); 0: none; unset: {DEFAULT_RATE_PER_S:g}, or none when bound "
        "to loopback",
    )
    rate_limit_burst: int = Field(40, ge=1, description="requests at once per token")
    audit_log: bool = Field(True, description="one request_handled log line per request")
    partitions: int = Field(8, ge=1, le=1024)
    max_file_bytes: int = Field(1_000_000, ge=1, description="larger files carry no content")
    batch_size: int = Field(200, ge=1)
    scan_workers: int = Field(
        0,
        ge=0,
        description="processes beside a worker's own that parse a large scan's files "
        "(issue 21); 0, the default: every parse in the worker's process. On 2 cores a pool "
        "of one made sympy's build 14% faster with the other core idle (16.5-17.2 s against "
        "19.1-19.8), a whole `up` 3-8% (its other parts share that core), and slower on a "
        "loaded machine (71.9 s against 45.0 at a load of 5): worth it where the worker has "
        "cores of its own",
    )
    debounce_ms: int = Field(50, ge=0)
    poll_s: float = Field(0.25, gt=0, description="commit follower polling interval")
    heartbeat_s: float = Field(5.0, gt=0)
    session_timeout_s: float = Field(
        6.0, ge=6.0, description="a worker silent this long loses its partitions (Kafka's minimum)"
    )
    metrics_port: int = Field(
        0,
        ge=0,
        le=65535,
        description="serve Prometheus metrics of a worker or producers (no HTTP server of "
        "their own) on host:port; 0: not served (the query service has /metrics)",
    )
    serve_partitions: str = Field(
        "",
        description="the partitions a query replica serves, e.g. '0-3,8' (its shard: the "
        "repositories keyed there); '' every partition",
    )
    shard: str = Field(
        "",
        description="or the shard a query replica serves as 'INDEX/COUNT': the partitions "
        "p with p % COUNT == INDEX; '' every partition",
    )
    log_level: str = "info"
    log_format: Literal["console", "json"] = "console"
    app_id: str = Field("gazetteer-worker", description="the workers' consumer group")
    namespace: str = Field("gazetteer", pattern=r"^[A-Za-z0-9._-]+$", description="topic prefix")
    resolution: float = Field(
        1.0, gt=0, description="Leiden resolution of neighborhoods: higher, smaller ones"
    )
    recluster_quiet_ms: int = Field(
        500, ge=0, description="recluster a repository once its graph is quiet this long"
    )
    recluster_max_wait_ms: int = Field(
        5000, ge=0, description="... or once a change has waited this long"
    )
    embedder: str = Field(
        "none",
        description="dense retrieval, off by default (the packaged MiniLM did not earn its "
        "CPU on the benchmark's development splits: docs/RETRIEVAL_MULTILANG.md): 'none', "
        "'default' (the packaged MiniLM int8 ONNX, offline), 'hash:256', "
        "'onnx:MODEL:TOKENIZER', 'st:NAME', 'openai:http://host:port/v1:MODEL'",
    )
    embedder_api_key: SecretStr | None = Field(None, description="for an 'openai:' embedder")
    qdrant_url: str | None = Field(
        None, description="a Qdrant server for vectors (distributed mode); in memory when unset"
    )
    embed_in: Literal["query", "worker"] = Field(
        "query",
        description="who embeds chunks: 'query' (each query service, its own store) or "
        "'worker' (the worker owning the repository, once per deployment, into the shared "
        "Qdrant: needs GAZETTEER_QDRANT_URL)",
    )

    snapshots_on_broker: bool | None = Field(
        None,
        description="publish the worker's state snapshots on the state-snapshots topic too, "
        "where replicas and workers on other machines start from them; unset: on Apache "
        "Kafka, not on the embedded broker (it keeps every message in memory, and `up`'s "
        "query side reads the data dir's files)",
    )

    @field_validator("broker")
    @classmethod
    def _broker_url(cls, value: str) -> str:
        if value != "embedded" and not value.startswith("kafka://"):
            raise ValueError("broker must be 'embedded' or kafka://host:port[,host:port]")
        return value

    @field_validator("serve_partitions")
    @classmethod
    def _partitions_spec(cls, value: str) -> str:
        if value.strip():
            parse_partitions(value)
        return value.strip()

    @field_validator("shard")
    @classmethod
    def _shard_spec(cls, value: str) -> str:
        if value.strip():
            parse_shard(value)
        return value.strip()

    @property
    def query_shard(self) -> Shard:
        """The partitions this query replica serves (`query.shard`)."""
        if self.serve_partitions and self.shard:
            raise ValueError("name a query replica's partitions or its shard, not both")
        if self.serve_partitions:
            return Shard(partitions=parse_partitions(self.serve_partitions))
        return parse_shard(self.shard) if self.shard else Shard()

    @property
    def exposure_refused(self) -> str | None:
        """Why the query service (or the router) must not start as set, or None: bound
        beyond loopback, it asks for authentication or an explicit ``--insecure``."""
        if self.auth or self.insecure or is_loopback_bind(self.host):
            return None
        return (
            f"bound to {self.host}, beyond loopback, without authentication: set "
            "GAZETTEER_AUTH=on (tokens: `gazetteer token create`), or pass --insecure "
            "to serve every repository to whoever reaches the port"
        )

    @property
    def allowed_host_names(self) -> tuple[str, ...]:
        return tuple(n.strip() for n in self.allowed_hosts.split(",") if n.strip())

    @property
    def request_limits(self) -> RequestLimits:
        """The query service's and the router's limits (query/request_limits.py)."""
        per_s = self.rate_limit_per_s
        if per_s is None:  # one developer on loopback, as `up` runs: no rate to keep
            local = is_loopback_bind(self.host)
            per_s = 0.0 if local else DEFAULT_RATE_PER_S
        return RequestLimits(
            max_body_bytes=self.max_request_bytes,
            max_url_bytes=self.max_url_bytes,
            timeout_s=self.request_timeout_s or None,
            rate=Rate(per_s, self.rate_limit_burst) if per_s else None,
            audit=self.audit_log,
        )

    @property
    def topics(self) -> Topics:
        return Topics(self.namespace)

    @property
    def bootstrap(self) -> str | None:
        """host:port list of an external broker; None for the embedded one."""
        return None if self.broker == "embedded" else self.broker.removeprefix("kafka://")
