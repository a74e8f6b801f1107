"""Structural checks of the compose files, without a Docker daemon.

Usage: compose_check.py THROTTLE_GOVERNOR_BINARY COMPOSE_FILE...

For each compose file:
  - every build context holds its Dockerfile, and every bind-mounted file or
    folder exists;
  - every service's listening ports are known (from its command, its config
    file or its image's default) and every published port is one of them,
    on an address other containers can reach;
  - every address one service uses to reach another (controller signal and
    control URLs, Prometheus scrape targets, Grafana data sources, exporter
    URIs) names a service of the file (or localhost in a shared network
    namespace) and a port that service listens on;
  - the files the services read at start-up exist where they look for them:
    the controller's config (validated with `throttle-governor check`),
    Prometheus's config and rule files, Grafana's provisioning and dashboards;
  - no host port is published twice, and depends_on names real services.

The compose schema itself is checked separately (`docker-compose config -q`).
Exit status 1 with every problem listed, 0 when there are none.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from urllib.parse import urlparse

import yaml

LOOPBACK = {"localhost", "127.0.0.1", "::1"}
UNSPECIFIED = {"0.0.0.0", "::", ""}
CONTROLLER_CONFIG = "/etc/throttle-governor/config.toml"


@dataclass
class Service:
    name: str
    spec: dict
    group: str = ""
    # container path -> host path
    mounts: dict[str, str] = field(default_factory=dict)
    # port -> listening host address
    listens: dict[int, str] = field(default_factory=dict)
    # (what, host, port) this service connects to
    reaches: list[tuple[str, str, int]] = field(default_factory=list)


class Checker:
    def __init__(self, binary: str, path: str):
        self.binary = binary
        self.path = path
        self.base = os.path.dirname(os.path.abspath(path))
        self.problems: list[str] = []
        self.notes: list[str] = []

    def problem(self, service: str | None, text: str) -> None:
        where = f"services.{service}: " if service else ""
        self.problems.append(f"{self.path}: {where}{text}")

    # ---- files -------------------------------------------------------------

    def resolve(self, svc: Service, container_path: str) -> str | None:
        """The host path behind a container path, through the longest mount."""
        best = None
        for dst, src in svc.mounts.items():
            if container_path == dst or container_path.startswith(dst.rstrip("/") + "/"):
                if best is None or len(dst) > len(best[0]):
                    best = (dst, src)
        if best is None:
            return None
        dst, src = best
        return os.path.join(src, os.path.relpath(container_path, dst)) if container_path != dst else src

    def must_resolve(self, svc: Service, container_path: str, what: str) -> str | None:
        host = self.resolve(svc, container_path)
        if host is None:
            self.problem(svc.name, f"{what} {container_path} is not mounted from the host")
        elif not os.path.exists(host):
            self.problem(svc.name, f"{what} {container_path} is mounted from {host}, which does not exist")
            return None
        return host

    def mounts(self, svc: Service) -> None:
        build = svc.spec.get("build")
        if build is not None:
            context = build if isinstance(build, str) else build.get("context", ".")
            dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
            context = os.path.normpath(os.path.join(self.base, context))
            if not os.path.isfile(os.path.join(context, dockerfile)):
                self.problem(svc.name, f"build context {context} has no {dockerfile}")
        elif "image" not in svc.spec:
            self.problem(svc.name, "has neither image nor build")
        for volume in svc.spec.get("volumes", []):
            if isinstance(volume, dict):
                if volume.get("type") != "bind":
                    continue
                src, dst = volume["source"], volume["target"]
            else:
                parts = volume.split(":")
                if len(parts) < 2:
                    continue
                src, dst = parts[0], parts[1]
                if not (src.startswith(".") or src.startswith("/")):
                    continue  # a named volume
            host = os.path.normpath(os.path.join(self.base, src))
            if not os.path.exists(host):
                self.problem(svc.name, f"bind mount source {src} ({host}) does not exist")
            svc.mounts[dst] = host

    # ---- what each service listens on and reaches ---------------------------

    @staticmethod
    def command(svc: Service) -> list[str]:
        command = svc.spec.get("command") or []
        return command.split() if isinstance(command, str) else [str(c) for c in command]

    @staticmethod
    def flag(args: list[str], name: str) -> str | None:
        for i, arg in enumerate(args):
            if arg == name and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
        return None

    def listen(self, svc: Service, address: str, what: str) -> None:
        host, _, port = address.rpartition(":")
        host = host.strip("[]")
        try:
            svc.listens[int(port)] = host
        except ValueError:
            self.problem(svc.name, f"{what} {address!r} has no port")

    def reach(self, svc: Service, what: str, url_or_hostport: str) -> None:
        text = url_or_hostport if "://" in url_or_hostport else f"http://{url_or_hostport}"
        url = urlparse(text)
        port = url.port or {"http": 80, "https": 443}.get(url.scheme, 0)
        svc.reaches.append((what, url.hostname or "", port))

    def image(self, svc: Service) -> str:
        return str(svc.spec.get("image", "throttle-governor" if "build" in svc.spec else ""))

    def inspect(self, svc: Service) -> None:
        image = self.image(svc)
        args = self.command(svc)
        env = svc.spec.get("environment") or {}
        if isinstance(env, list):
            env = dict(e.split("=", 1) for e in env)
        if image.startswith("throttle-governor"):
            self.throttle_governor(svc, args)
        elif image.startswith("prom/prometheus"):
            self.prometheus(svc, args)
        elif image.startswith("grafana/grafana"):
            self.listen(svc, f"0.0.0.0:{env.get('GF_SERVER_HTTP_PORT', 3000)}", "GF_SERVER_HTTP_PORT")
            self.grafana(svc, env)
        elif image.startswith("locustio/locust"):
            if "--worker" in args:
                master = self.flag(args, "--master-host") or "127.0.0.1"
                self.reach(svc, "--master-host", f"{master}:{self.flag(args, '--master-port') or 5557}")
            else:
                self.listen(svc, f"0.0.0.0:{self.flag(args, '--web-port') or 8089}", "--web-port")
                if "--master" in args:
                    self.listen(svc, f"0.0.0.0:{self.flag(args, '--master-bind-port') or 5557}", "--master-bind-port")
        elif image.startswith("containersol/locust_exporter"):
            self.listen(svc, env.get("LOCUST_EXPORTER_WEB_LISTEN_ADDRESS", ":9646"), "listen address")
            self.reach(svc, "LOCUST_EXPORTER_URI", env.get("LOCUST_EXPORTER_URI", "http://localhost:8089"))
        else:
            self.problem(svc.name, f"image {image!r} is unknown to deploy/checks/compose_check.py: teach it what the image listens on")

    def throttle_governor(self, svc: Service, args: list[str]) -> None:
        if args and args[0] == "sim":
            self.listen(svc, self.flag(args, "--listen") or "127.0.0.1:9100", "sim --listen")
            return
        if args and args[0] != "run":
            self.problem(svc.name, f"runs `{' '.join(args)}`, neither `run` nor `sim`")
            return
        config_path = self.flag(args, "--config") or self.flag(args, "-c") or CONTROLLER_CONFIG
        host = self.must_resolve(svc, config_path, "the controller config")
        if host is None:
            return
        result = subprocess.run([self.binary, "check", "--config", host], capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            self.problem(svc.name, f"`throttle-governor check` rejects {host}:\n{result.stdout}{result.stderr}")
            return
        with open(host, "rb") as f:
            config = tomllib.load(f)
        self.listen(svc, config.get("server", {}).get("listen", "127.0.0.1:9464"), "[server] listen")
        for target in config.get("targets", []):
            name = target.get("name")
            self.reach(svc, f"targets[{name}].signal.url", target["signal"]["url"])
            control = target.get("control", {})
            if "url" in control:
                self.reach(svc, f"targets[{name}].control.url", control["url"])
            if "read_back" in control and "url" in control["read_back"]:
                self.reach(svc, f"targets[{name}].control.read_back.url", control["read_back"]["url"])

    def prometheus(self, svc: Service, args: list[str]) -> None:
        self.listen(svc, self.flag(args, "--web.listen-address") or "0.0.0.0:9090", "--web.listen-address")
        config_path = self.flag(args, "--config.file") or "/etc/prometheus/prometheus.yml"
        host = self.must_resolve(svc, config_path, "the Prometheus config")
        if host is None:
            return
        with open(host) as f:
            config = yaml.safe_load(f)
        config_dir = os.path.dirname(config_path)
        for pattern in config.get("rule_files", []):
            container = os.path.join(config_dir, pattern)
            mount = self.resolve(svc, container)
            if mount is None or not glob.glob(mount):
                self.problem(svc.name, f"rule_files entry {pattern} matches nothing in the container ({container})")
        jobs = config.get("scrape_configs", [])
        if not jobs:
            self.problem(svc.name, "the Prometheus config scrapes nothing")
        for job in jobs:
            for static in job.get("static_configs", []):
                for target in static.get("targets", []):
                    self.reach(svc, f"scrape job {job.get('job_name')}", target)

    def grafana(self, svc: Service, env: dict) -> None:
        provisioning = env.get("GF_PATHS_PROVISIONING", "/etc/grafana/provisioning")
        datasources = self.must_resolve(svc, f"{provisioning}/datasources", "Grafana's data source provisioning")
        found = 0
        for path in sorted(glob.glob(os.path.join(datasources or "/nonexistent", "*.y*ml"))):
            with open(path) as f:
                for ds in (yaml.safe_load(f) or {}).get("datasources", []):
                    found += 1
                    self.reach(svc, f"data source {ds.get('name')}", ds["url"])
        if datasources and not found:
            self.problem(svc.name, f"no data source is provisioned in {datasources}")
        dashboards = self.must_resolve(svc, f"{provisioning}/dashboards", "Grafana's dashboard provisioning")
        providers = 0
        for path in sorted(glob.glob(os.path.join(dashboards or "/nonexistent", "*.y*ml"))):
            with open(path) as f:
                for provider in (yaml.safe_load(f) or {}).get("providers", []):
                    providers += 1
                    folder = provider.get("options", {}).get("path", "")
                    host = self.resolve(svc, folder) if folder else None
                    jsons = glob.glob(os.path.join(host, "*.json")) if host and os.path.isdir(host) else []
                    mounted = [dst for dst in svc.mounts if dst.startswith(folder.rstrip("/") + "/") and dst.endswith(".json")]
                    if not jsons and not mounted:
                        self.problem(svc.name, f"dashboard provider {provider.get('name')} reads {folder!r}, where no dashboard JSON is mounted")
        if dashboards and not providers:
            self.problem(svc.name, f"no dashboard provider in {dashboards}")
        home = env.get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")
        if home:
            self.must_resolve(svc, home, "GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")

    # ---- the whole file ------------------------------------------------------

    def run(self) -> None:
        with open(self.path) as f:
            doc = yaml.safe_load(f)
        specs = doc.get("services") or {}
        if not specs:
            self.problem(None, "has no services")
            return
        services = {name: Service(name, spec or {}) for name, spec in specs.items()}
        for svc in services.values():
            mode = str(svc.spec.get("network_mode", ""))
            svc.group = svc.name
            if mode.startswith("service:"):
                owner = mode.split(":", 1)[1]
                if owner not in services:
                    self.problem(svc.name, f"network_mode names unknown service {owner}")
                else:
                    svc.group = owner
                if svc.spec.get("ports"):
                    self.problem(svc.name, "publishes ports but shares another service's network: publish them there")
            for dep in svc.spec.get("depends_on") or []:
                if dep not in services:
                    self.problem(svc.name, f"depends_on names unknown service {dep}")
            self.mounts(svc)
            self.inspect(svc)

        def group_listens(group: str) -> dict[int, tuple[str, str]]:
            return {port: (host, s.name) for s in services.values() if s.group == group for port, host in s.listens.items()}

        host_ports: dict[str, str] = {}
        for svc in services.values():
            listens = group_listens(svc.group)
            for entry in svc.spec.get("ports") or []:
                text = str(entry.get("published", "")) + ":" + str(entry.get("target")) if isinstance(entry, dict) else str(entry)
                parts = text.split("/")[0].split(":")
                published, container = parts[-2] if len(parts) > 1 else parts[-1], int(parts[-1])
                if published in host_ports:
                    self.problem(svc.name, f"host port {published} is also published by {host_ports[published]}")
                host_ports[published] = svc.name
                if container not in listens:
                    self.problem(svc.name, f"publishes container port {container}, but nothing in its network listens there (listening: {sorted(listens) or 'none'})")
                elif listens[container][0] not in UNSPECIFIED:
                    self.problem(svc.name, f"publishes port {container}, but {listens[container][1]} listens on {listens[container][0]} only")

        for svc in services.values():
            for what, host, port in svc.reaches:
                if host in LOOPBACK:
                    group = svc.group
                elif host in services:
                    group = services[host].group
                else:
                    self.problem(svc.name, f"{what} reaches {host}:{port}, and {host!r} is not a service of this file")
                    continue
                listens = group_listens(group)
                if port not in listens:
                    self.problem(svc.name, f"{what} reaches {host}:{port}, but {group} listens on {sorted(listens) or 'nothing'}")
                elif group != svc.group and listens[port][0] not in UNSPECIFIED:
                    self.problem(svc.name, f"{what} reaches {host}:{port} from another container, but {listens[port][1]} listens on {listens[port][0]} only")
                else:
                    self.notes.append(f"{svc.name} -> {host}:{port} ({what})")


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    binary, files = sys.argv[1], sys.argv[2:]
    failed = False
    for path in files:
        checker = Checker(binary, path)
        checker.run()
        for problem in checker.problems:
            print(f"compose_check: {problem}", file=sys.stderr)
        failed |= bool(checker.problems)
        print(f"compose_check: {path}: {len(checker.notes)} connections checked, {len(checker.problems)} problems")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
