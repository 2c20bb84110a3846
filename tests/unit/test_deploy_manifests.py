"""The deployment artifacts (deploy/): Kubernetes manifests, compose file, Dockerfile.

The manifests are checked against the API schemas kubernetes-validate bundles; the
compose file against the compose specification's schema, taken from the compose-go
module through the Go module proxy (cached in ~/.cache/gazetteer); the settings they
set against deploy/settings.py itself, and the commands they run against the CLI.
"""

from __future__ import annotations

import argparse
import copy
import fcntl
import fnmatch
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from deploy.cli import _parser
from deploy.container import probe
from deploy.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
COMPOSE = ROOT / "deploy" / "compose.yaml"
DOCKERFILE = ROOT / "deploy" / "container" / "Dockerfile"
CACHE_DIR = Path.home() / ".cache" / "gazetteer"

KUBERNETES_VERSION = kubernetes_validate.latest_version()
COMPOSE_GO = "github.com/compose-spec/compose-go/v2"
COMPOSE_GO_VERSION = "v2.16.2"
SCHEMA_IN_MODULE = "schema/compose-spec.json"
IMAGE = "gazetteer"

Doc = dict[str, Any]


def k8s_files() -> list[Path]:
    return sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


def k8s_docs() -> list[tuple[str, Doc]]:
    return [
        (f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc)
        for path in k8s_files()
        for doc in yaml.safe_load_all(path.read_text())
        if doc is not None
    ]


DOCS = k8s_docs()


def of_kind(kind: str) -> list[Doc]:
    return [doc for _, doc in DOCS if doc["kind"] == kind]


def pod_containers() -> Iterator[tuple[str, Doc]]:
    for _, doc in DOCS:
        template = doc.get("spec", {}).get("template")
        if template is not None:
            for container in template["spec"]["containers"]:
                yield f"{doc['kind']}/{doc['metadata']['name']}", container


def runs_gazetteer(image: str) -> bool:
    return image.split(":")[0].rsplit("/", 1)[-1] == IMAGE


def configmap() -> dict[str, str]:
    (config,) = [doc for doc in of_kind("ConfigMap") if doc["metadata"]["name"] == "gazetteer"]
    data: dict[str, str] = config["data"]
    return data


def setting_names() -> dict[str, str]:
    """GAZETTEER_* variable -> field name, from the Settings class itself."""
    prefix = Settings.model_config.get("env_prefix", "")
    return {f"{prefix}{name}".upper(): name for name in Settings.model_fields}


def settings_from(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The Settings a process whose only GAZETTEER_* variables are ``env`` builds."""
    for name in setting_names():
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, str(value))
    nothing_but_the_environment: dict[str, Any] = {}
    return Settings(**nothing_but_the_environment)


def verbs() -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


# -- Kubernetes -------------------------------------------------------------------------


@pytest.mark.parametrize(("where", "doc"), DOCS, ids=[where for where, _ in DOCS])
def test_every_manifest_validates_strictly(where: str, doc: Doc) -> None:
    assert kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_strict_validation_refuses_an_unknown_field() -> None:
    (worker,) = [d for d in of_kind("Deployment") if d["metadata"]["name"] == "worker"]
    typo = copy.deepcopy(worker)
    typo["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {"exec": {}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(typo, KUBERNETES_VERSION, strict=True)


def test_the_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == [p.name for p in k8s_files()]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kustomize_renders_every_manifest_into_the_namespace() -> None:
    out = subprocess.run(
        ["kubectl", "kustomize", str(K8S)], capture_output=True, check=True, timeout=60
    ).stdout
    rendered = [d for d in yaml.safe_load_all(out) if d is not None]
    (namespace,) = of_kind("Namespace")
    assert sorted((d["kind"], d["metadata"]["name"]) for d in rendered) == sorted(
        (d["kind"], d["metadata"]["name"]) for _, d in DOCS
    )
    for doc in rendered:
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == namespace["metadata"]["name"]
        assert kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_every_container_has_resource_requests_and_limits() -> None:
    containers = list(pod_containers())
    assert len(containers) == 7
    for where, container in containers:
        resources = container.get("resources", {})
        for bound in ("requests", "limits"):
            assert set(resources.get(bound, {})) >= {"cpu", "memory"}, (where, bound)


def test_every_gazetteer_container_has_probes_the_image_can_run() -> None:
    gazetteer = [(w, c) for w, c in pod_containers() if runs_gazetteer(c["image"])]
    assert sorted(w for w, _ in gazetteer) == [
        "Deployment/query",
        "Deployment/query-0",
        "Deployment/query-1",
        "Deployment/worker",
        "StatefulSet/watcher",
    ]
    for where, container in gazetteer:
        assert {"readinessProbe", "livenessProbe"} <= set(container), where
        for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
            command = container.get(kind, {}).get("exec", {}).get("command")
            if command is not None:
                assert command[0] == "gazetteer-probe", (where, kind)
                assert command[1:] in ([role] for role in probe.ROLES), (where, kind)


def test_query_replicas_are_ready_only_once_the_read_side_caught_up() -> None:
    (query,) = [d for d in of_kind("Deployment") if d["metadata"]["name"] == "query"]
    (container,) = query["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["exec"]["command"] == ["gazetteer-probe", "ready"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    (port,) = container["ports"]
    (service,) = [d for d in of_kind("Service") if d["metadata"]["name"] == "query"]
    assert service["spec"]["selector"] == query["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"][0]["targetPort"] == port["name"]
    assert port["containerPort"] == int(configmap()["GAZETTEER_PORT"])


def test_the_router_covers_every_partition_with_the_shard_services() -> None:
    """Service "query" is the router; each --shard names a shard's Service, whose
    Deployment serves exactly that shard and accepts the Host the router sends."""
    from query.router import check_cover, parse_shard_spec

    (router,) = [d for d in of_kind("Deployment") if d["metadata"]["name"] == "query"]
    (container,) = router["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    assert args[0] == "route"
    specs = [parse_shard_spec(a) for a in _parser().parse_args(args).shards]
    check_cover(specs, int(configmap()["GAZETTEER_PARTITIONS"]))
    services = {d["metadata"]["name"]: d for d in of_kind("Service")}
    for spec in specs:
        (url,) = spec.replicas
        name, port = url.removeprefix("http://").split(":")
        (shard,) = [d for d in of_kind("Deployment") if d["metadata"]["name"] == name]
        (served,) = shard["spec"]["template"]["spec"]["containers"]
        assert served["args"] == ["serve", "--shard", spec.shard.describe()], name
        env = {e["name"]: e["value"] for e in served["env"]}
        assert name in env["GAZETTEER_ALLOWED_HOSTS"].split(","), name
        assert services[name]["spec"]["selector"] == shard["spec"]["selector"]["matchLabels"]
        assert int(port) == services[name]["spec"]["ports"][0]["port"]


def test_the_worker_autoscaler_stops_at_the_partition_count() -> None:
    (hpa,) = of_kind("HorizontalPodAutoscaler")
    target = hpa["spec"]["scaleTargetRef"]
    (worker,) = [d for d in of_kind(target["kind"]) if d["metadata"]["name"] == target["name"]]
    (container,) = worker["spec"]["template"]["spec"]["containers"]
    partitions = int(configmap()["GAZETTEER_PARTITIONS"])
    assert container["args"] == ["worker"]
    assert hpa["spec"]["maxReplicas"] == partitions
    assert hpa["spec"]["minReplicas"] <= worker["spec"]["replicas"] <= partitions


def test_the_configmap_sets_only_real_settings_with_valid_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = configmap()
    assert set(data) <= set(setting_names())
    settings = settings_from(data, monkeypatch)
    assert settings.bootstrap == "kafka:9092"
    assert settings.host == "0.0.0.0"
    assert settings.auth and settings.exposure_refused is None  # issue 19


def test_the_containers_set_only_real_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for where, container in pod_containers():
        if runs_gazetteer(container["image"]):
            env = {e["name"]: e["value"] for e in container.get("env", [])}
            assert set(env) <= set(setting_names()), where
            settings_from({**configmap(), **env}, monkeypatch)


def test_the_gazetteer_containers_run_real_cli_verbs() -> None:
    known = verbs()
    for where, container in pod_containers():
        if not runs_gazetteer(container["image"]):
            continue
        argv = container.get("args") or shell_argv(container["command"])
        assert argv[0] in known, where
        _parser().parse_args(argv)


def shell_argv(command: list[str]) -> list[str]:
    """The gazetteer arguments of ``[tini, --, sh, -c, 'exec gazetteer VERB ...']``."""
    assert command[:2] == ["tini", "--"]
    if command[2:4] == ["sh", "-c"]:
        words = shlex.split(command[4])
        assert words[:2] == ["exec", "gazetteer"]
        return words[2:]
    assert command[2] == "gazetteer"
    return command[3:]


# -- Compose ----------------------------------------------------------------------------


def compose() -> Doc:
    loaded: Doc = yaml.safe_load(COMPOSE.read_text())
    return loaded


def gazetteer_services() -> dict[str, Doc]:
    return {n: s for n, s in compose()["services"].items() if runs_gazetteer(s["image"])}


@pytest.fixture(scope="session")
def compose_schema() -> Doc:
    """The compose specification's JSON schema, from the compose-go module (cached)."""
    target = CACHE_DIR / f"compose-spec-{COMPOSE_GO_VERSION}.json"
    go = shutil.which("go")
    if not target.exists() and go is None:
        pytest.skip("`go` is not installed: cannot fetch the compose-spec schema")
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with (CACHE_DIR / ".compose-spec.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.exists():
            assert go is not None
            with tempfile.TemporaryDirectory() as modcache:
                # -modcacherw: go leaves the module cache read-only, which the cleanup can't remove.
                flags = f"{os.environ.get('GOFLAGS', '')} -modcacherw".strip()
                env = {**os.environ, "GOMODCACHE": modcache, "GOFLAGS": flags}
                done = subprocess.run(
                    [go, "mod", "download", "-json", f"{COMPOSE_GO}@{COMPOSE_GO_VERSION}"],
                    cwd=modcache,
                    env=env,
                    capture_output=True,
                    timeout=300,
                    check=False,
                )
                assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
                schema = Path(json.loads(done.stdout)["Dir"]) / SCHEMA_IN_MODULE
                partial = target.with_suffix(".part")
                shutil.copyfile(schema, partial)
                partial.replace(target)
    loaded: Doc = json.loads(target.read_text())
    return loaded


def test_the_compose_file_follows_the_compose_specification(compose_schema: Doc) -> None:
    validator = jsonschema.Draft202012Validator(compose_schema)
    assert [e.message for e in validator.iter_errors(compose())] == []
    typo = compose()
    typo["services"]["worker"]["healthcheck"]["intervall"] = "15s"
    assert not validator.is_valid(typo)


def test_compose_runs_kafka_in_kraft_mode_qdrant_workers_replicas_and_a_watcher() -> None:
    services = compose()["services"]
    kafka = services["kafka"]
    assert kafka["image"].startswith("apache/kafka:")
    assert kafka["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert services["qdrant"]["image"].startswith("qdrant/qdrant:")
    assert sorted(gazetteer_services()) == ["query-0", "query-1", "router", "watcher", "worker"]
    partitions = int(services["worker"]["environment"]["GAZETTEER_PARTITIONS"])
    assert 1 <= services["worker"]["deploy"]["replicas"] <= partitions
    assert all(services[f"query-{i}"]["deploy"]["replicas"] >= 2 for i in range(2))
    router = _parser().parse_args(services["router"]["command"])
    from query.router import check_cover, parse_shard_spec

    check_cover([parse_shard_spec(s) for s in router.shards], partitions)
    (repos,) = services["watcher"]["volumes"]
    assert (repos["target"], repos["read_only"]) == ("/repos", True)


def test_every_compose_service_has_a_healthcheck_and_resources() -> None:
    services = compose()["services"]
    for name, service in services.items():
        assert service["healthcheck"]["test"], name
        limits = service["deploy"]["resources"]["limits"]
        assert set(limits) == {"cpus", "memory"}, name
        for dependency, condition in service.get("depends_on", {}).items():
            assert dependency in services, name
            if "healthcheck" in services[dependency]:
                assert condition["condition"] in ("service_healthy", "service_started")


def test_compose_sets_only_real_settings_with_valid_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = setting_names()
    for name, service in gazetteer_services().items():
        env = service["environment"]
        assert set(env) <= set(names), (name, sorted(set(env) - set(names)))
        settings = settings_from(env, monkeypatch)
        assert settings.bootstrap == "kafka:9092", name
        assert settings.qdrant_url == "http://qdrant:6333", name


def test_compose_services_run_real_cli_verbs_and_probes() -> None:
    known = verbs()
    for name, service in gazetteer_services().items():
        argv = service["command"] or shell_argv(service["entrypoint"])
        assert argv[0] in known, name
        _parser().parse_args(argv)
        check = service["healthcheck"]["test"]
        assert check[:2] == ["CMD", "gazetteer-probe"], name
        assert check[2] in probe.ROLES, name


def test_docker_compose_accepts_the_file() -> None:
    if shutil.which("docker") is None:
        pytest.skip("docker is not installed")
    has_compose = subprocess.run(
        ["docker", "compose", "version"], capture_output=True, timeout=30, check=False
    )
    if has_compose.returncode != 0:
        pytest.skip("docker has no compose plugin: `docker compose config` cannot run")
    done = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE), "config", "-q"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()


# -- Dockerfile -------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the final stage, continuation lines joined."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    final = max(i for i, ln in enumerate(lines) if ln.upper().startswith("FROM "))
    return [(ln.split(None, 1)[0].upper(), ln.split(None, 1)[1]) for ln in lines[final:]]


def instruction(name: str) -> str:
    (found,) = [args for instr, args in dockerfile_instructions() if instr == name]
    return found


def test_the_image_runs_a_real_cli_verb_by_default() -> None:
    entrypoint = json.loads(instruction("ENTRYPOINT"))
    cmd = json.loads(instruction("CMD"))
    assert entrypoint[-1] == "gazetteer"
    assert cmd[0] in verbs()
    _parser().parse_args(cmd)


def test_the_image_is_slim_python_311_non_root_with_a_healthcheck() -> None:
    assert instruction("FROM") == "python:3.11-slim"
    user = instruction("USER").split(":")[0]
    assert user not in ("root", "0")
    env = instruction("ENV")
    port = next(w.split("=")[1] for w in shlex.split(env) if w.startswith("GAZETTEER_PORT="))
    assert instruction("EXPOSE") == port
    healthcheck = instruction("HEALTHCHECK")
    assert json.loads(healthcheck.split("CMD", 1)[1]) == ["gazetteer-probe", "ready"]
    assert "deploy/container/probe.py /usr/local/bin/gazetteer-probe" in instruction("COPY")
    for word in shlex.split(env):
        name = word.split("=")[0]
        if name.startswith("GAZETTEER_"):
            assert name in setting_names(), name


NOT_IN_THE_IMAGE = ("deploy/kafka_dist/", "deploy/container/", "deploy/k8s/", "deploy/compose.yaml")


def test_the_package_carries_every_file_the_image_runs_on() -> None:
    """The image installs the wheel: a non-Python file of a package reaches it only
    when pyproject.toml declares it as package data."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    setuptools = pyproject["tool"]["setuptools"]
    declared = setuptools.get("package-data", {})
    roots = [p.rstrip("*") for p in setuptools["packages"]["find"]["include"] if "*" in p]
    missing = []
    for root in roots:
        for path in sorted((ROOT / root).rglob("*")):
            rel = path.relative_to(ROOT).as_posix()
            if (
                not path.is_file()
                or path.suffix in (".py", ".pyc", ".md")
                or rel.startswith(NOT_IN_THE_IMAGE)
            ):
                continue
            package = path.parent
            while not (package / "__init__.py").exists():
                package = package.parent
            inside = path.relative_to(package).as_posix()
            patterns = declared.get(package.relative_to(ROOT).as_posix().replace("/", "."), [])
            if not any(fnmatch.fnmatch(inside, pattern) for pattern in patterns):
                missing.append(rel)
    assert missing == []
