"""The dashboard and the rules against a real Prometheus and a live controller.

Usage: live_prometheus.py THROTTLE_GOVERNOR_BINARY [--seconds N]

Starts, all on 127.0.0.1 and all stopped on exit:
  - three simulated load tools (`throttle-governor sim`): a `rejector`, a
    `cliff` and a `queueing` target;
  - the controller (`throttle-governor run`) governing them, one-second
    windows; the queueing one with a latency bound (p99 <= 25 ms, from the
    sim's `sim_request_duration_seconds` histogram), so that the latency
    panel has data;
  - Prometheus (Debian's), from deploy/prometheus/prometheus.yml with the
    scrape target pointed at the controller, 1 s scrape and rule evaluation,
    a temporary data folder, and the rule files of that config.
Ten seconds into the scraping, the first load tool is killed and restarted
three seconds later, as a crashing tool would be: signal errors, a counter
reset and an outside change follow, so every panel has something to show.

After at least N seconds (default 32, never under 30) of scraping it checks:
  1. `promtool check metrics` on the controller's live /metrics reports nothing;
  2. Prometheus loaded every rule of the rule files and evaluates each
     without error;
  3. every PromQL expression in dashboards/*.json (panel queries, nested
     rows included, and `label_values` template queries), with template
     variables resolved ($target -> .*, $__rate_interval -> 1m, ...), returns
     a non-empty result;
  4. every recording rule returns a non-empty result;
  5. every `throttle_*` metric named by the dashboards or the rules (queries
     and annotations) is in the live exposition or, for a labelled counter
     that has not been incremented yet, in the README's table of exported
     metrics (names are read from the files, so new panels, rules and
     metrics are covered without editing this script).
Exit status 1 with every failure listed, 0 when all pass.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROMETHEUS_CONFIG = os.path.join(ROOT, "deploy", "prometheus", "prometheus.yml")
DASHBOARDS = os.path.join(ROOT, "dashboards")
README = os.path.join(ROOT, "README.md")
JOB = "throttle-governor"

# Grafana's built-in variables, as a dashboard query would see them.
GRAFANA_VARIABLES = {
    "__rate_interval": "1m",
    "__interval": "15s",
    "__interval_ms": "15000",
    "__range": "1m",
    "__range_s": "60",
    "__range_ms": "60000",
}

METRIC_NAME = re.compile(r"(?<![\w:])throttle_[a-z0-9_]+")


def log(text: str) -> None:
    print(f"live_prometheus: {text}", flush=True)


def documented_metrics() -> set[str]:
    """Sample names in the README's "Exported metrics" table."""
    names: set[str] = set()
    in_table = False
    with open(README) as f:
        for line in f:
            if line.startswith("#"):
                in_table = "exported metrics" in line.lower()
                continue
            if in_table and line.startswith("| `throttle_"):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                found = METRIC_NAME.findall(cells[0])
                names.update(found)
                if len(cells) > 1 and cells[1] == "histogram":
                    names.update(f"{n}_{s}" for n in found for s in ("bucket", "sum", "count"))
    if not names:
        raise RuntimeError(f"no metrics table found in {README}")
    return names


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError, socket.timeout):
        return 0, ""


def wait_for(what: str, check, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.25)
    raise RuntimeError(f"timed out after {seconds:.0f} s waiting for {what}")


class Processes:
    """Every process this script starts, each in its own process group."""

    def __init__(self, logs: str):
        self.logs = logs
        self.running: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str]) -> None:
        out = open(os.path.join(self.logs, f"{name}.log"), "ab")
        self.running[name] = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        out.close()

    def stop(self, name: str) -> None:
        process = self.running.pop(name, None)
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def check_alive(self) -> None:
        for name, process in self.running.items():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with status {process.returncode}; see {self.logs}/{name}.log")

    def stop_all(self) -> None:
        for name in list(self.running):
            self.stop(name)

    def tail(self, name: str, lines: int = 20) -> str:
        try:
            with open(os.path.join(self.logs, f"{name}.log"), errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""


# The queueing sim's base latency is one tick over its attempts per worker
# (100 ms / 10 = 10 ms): a p99 bound of 2.5 base.
LATENCY = """
[targets.latency]
quantile = 0.99
bound = "25ms"
histogram = "sim_request_duration_seconds"
url = "http://127.0.0.1:{port}/metrics"
"""


def controller_config(listen: int, sims: dict[str, int]) -> str:
    targets = []
    for name, port in sims.items():
        targets.append(f"""
[[targets]]
name = "{name}"
knob = "concurrency"
ceiling = 480
floor = 1
high = 0.05
window = "1s"

[targets.signal]
kind = "prometheus"
url = "http://127.0.0.1:{port}/metrics"
attempts = 'sim_attempts_total'
failures = 'sim_requests_total{{outcome="failure"}}'
timeout = "500ms"

[targets.control]
kind = "http"
url = "http://127.0.0.1:{port}/admin/workers"
method = "PUT"
body = '{{"workers": {{{{value}}}}}}'
content_type = "application/json"
timeout = "1s"

[targets.control.read_back]
url = "http://127.0.0.1:{port}/admin/workers"
json_pointer = "/workers"
""" + (LATENCY.format(port=port) if name == "queue" else ""))
    return f'[server]\nlisten = "127.0.0.1:{listen}"\n' + "".join(targets)


def prometheus_config(controller: int, path: str) -> list[str]:
    """The repository's prometheus.yml, pointed at the live controller; returns its rule files."""
    with open(PROMETHEUS_CONFIG) as f:
        config = yaml.safe_load(f)
    config["global"]["scrape_interval"] = "1s"
    config["global"]["evaluation_interval"] = "1s"
    jobs = [job for job in config["scrape_configs"] if job["job_name"] == JOB]
    if len(jobs) != 1:
        raise RuntimeError(f"{PROMETHEUS_CONFIG} must have exactly one scrape job named {JOB}")
    jobs[0]["static_configs"] = [{"targets": [f"127.0.0.1:{controller}"]}]
    base = os.path.dirname(PROMETHEUS_CONFIG)
    rule_files = []
    for pattern in config.get("rule_files", []):
        matches = sorted(glob.glob(os.path.join(base, pattern)))
        if not matches:
            raise RuntimeError(f"rule_files entry {pattern} of {PROMETHEUS_CONFIG} matches nothing")
        rule_files.extend(matches)
    config["rule_files"] = rule_files
    with open(path, "w") as f:
        yaml.safe_dump(config, f)
    return rule_files


def dashboard_queries() -> list[tuple[str, str, str]]:
    """(dashboard file, where, expression) for every query in every dashboard."""
    queries = []
    files = sorted(glob.glob(os.path.join(DASHBOARDS, "*.json")))
    if not files:
        raise RuntimeError(f"no dashboards in {DASHBOARDS}")
    for path in files:
        with open(path) as f:
            dashboard = json.load(f)
        name = os.path.basename(path)
        panels = []
        for panel in dashboard.get("panels", []):
            panels.append(panel)
            panels.extend(panel.get("panels", []))  # collapsed rows
        for panel in panels:
            for target in panel.get("targets", []):
                if "expr" in target:
                    queries.append((name, f"panel {panel.get('id')} {panel.get('title')!r} query {target.get('refId')}", target["expr"]))
        for variable in dashboard.get("templating", {}).get("list", []):
            if variable.get("type") != "query":
                continue
            query = variable.get("query")
            if isinstance(query, dict):
                query = query.get("query")
            queries.append((name, f"variable ${variable.get('name')}", query))
    return queries


def resolve(expr: str, variables: list[str]) -> str:
    """Grafana's variable substitution: every dashboard variable matches all values."""
    def value(name: str) -> str | None:
        if name in GRAFANA_VARIABLES:
            return GRAFANA_VARIABLES[name]
        if name in variables:
            return ".*"
        return None

    def replace(match: re.Match) -> str:
        name = match.group("braced") or match.group("plain") or match.group("brackets")
        resolved = value(name)
        if resolved is None:
            raise RuntimeError(f"unknown variable ${name} in {expr!r}")
        return resolved

    return re.sub(r"\$\{(?P<braced>\w+)(?::\w+)?\}|\[\[(?P<brackets>\w+)\]\]|\$(?P<plain>\w+)", replace, expr)


def dashboard_variables() -> list[str]:
    names = []
    for path in sorted(glob.glob(os.path.join(DASHBOARDS, "*.json"))):
        with open(path) as f:
            names += [v["name"] for v in json.load(f).get("templating", {}).get("list", [])]
    return names


class Prometheus:
    def __init__(self, port: int):
        self.base = f"http://127.0.0.1:{port}"

    def api(self, path: str, **params) -> dict:
        url = f"{self.base}{path}?{urllib.parse.urlencode(params, doseq=True)}"
        status, body = get(url, timeout=10)
        if not body:
            raise RuntimeError(f"GET {url}: no answer (status {status})")
        answer = json.loads(body)
        if answer.get("status") != "success":
            raise RuntimeError(f"GET {url}: {answer.get('errorType')}: {answer.get('error')}")
        return answer["data"]

    def query(self, expr: str) -> dict:
        return self.api("/api/v1/query", query=expr)


def run_query(prom: Prometheus, expr: str) -> tuple[int, int]:
    """(series, of which NaN) for a PromQL expression or a Grafana label_values() query."""
    label_values = re.fullmatch(r"\s*label_values\(\s*(?:(?P<metric>.+?)\s*,\s*)?(?P<label>\w+)\s*\)\s*", expr)
    if label_values:
        params = {"match[]": [label_values.group("metric")]} if label_values.group("metric") else {}
        values = prom.api(f"/api/v1/label/{label_values.group('label')}/values", **params)
        return len(values), 0
    if re.match(r"\s*(query_result|metrics|label_names)\(", expr):
        raise RuntimeError(f"Grafana query function not supported by this check: {expr!r}")
    data = prom.query(expr)
    if data["resultType"] in ("scalar", "string"):
        return 1, 0
    result = data["result"]
    nan = sum(1 for series in result if series.get("value", [0, ""])[1] == "NaN")
    return len(result), nan


def main() -> int:
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    binary = args[0]
    seconds = max(30, int(args[args.index("--seconds") + 1]) if "--seconds" in args else 32)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    failures: list[str] = []
    work = tempfile.mkdtemp(prefix="live-prometheus-")
    procs = Processes(work)
    sims = {"checkout": free_port(), "search": free_port(), "queue": free_port()}
    models = {"checkout": ("rejector", "120"), "search": ("cliff", "60"), "queue": ("queueing", "60")}
    controller, prom_port = free_port(), free_port()

    def start_sim(name: str) -> None:
        model, capacity = models[name]
        procs.start(f"sim-{name}", [binary, "sim", "--model", model, "--capacity", capacity,
                                    "--listen", f"127.0.0.1:{sims[name]}", "--tick", "100ms"])
        wait_for(f"sim {name} on port {sims[name]}", lambda: get(f"http://127.0.0.1:{sims[name]}/metrics")[0] == 200, 20)

    try:
        for name in sims:
            start_sim(name)
        config = os.path.join(work, "controller.toml")
        with open(config, "w") as f:
            f.write(controller_config(controller, sims))
        procs.start("controller", [binary, "run", "--config", config])
        wait_for("the controller's /readyz", lambda: get(f"http://127.0.0.1:{controller}/readyz")[0] == 200, 30)

        prom_config = os.path.join(work, "prometheus.yml")
        rule_files = prometheus_config(controller, prom_config)
        procs.start("prometheus", ["prometheus", f"--config.file={prom_config}",
                                   f"--storage.tsdb.path={os.path.join(work, 'data')}",
                                   f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"])
        prom = Prometheus(prom_port)
        wait_for("Prometheus to be ready", lambda: get(f"{prom.base}/-/ready")[0] == 200, 60)

        def scraped() -> bool:
            result = prom.query(f'up{{job="{JOB}"}} == 1')["result"]
            return len(result) == 1

        wait_for("Prometheus's first scrape of the controller", scraped, 30)
        first_scrape = time.monotonic()
        log(f"Prometheus on 127.0.0.1:{prom_port} scrapes the controller on 127.0.0.1:{controller}; "
            f"running for {seconds} s (logs in {work})")

        time.sleep(10)
        procs.check_alive()
        log("killing the checkout load tool for 3 s (signal errors, a counter reset, an outside change)")
        procs.stop("sim-checkout")
        time.sleep(3)
        start_sim("checkout")
        while time.monotonic() - first_scrape < seconds:
            procs.check_alive()
            time.sleep(1)

        # 1. promtool check metrics on the live exposition.
        status, exposition = get(f"http://127.0.0.1:{controller}/metrics")
        if status != 200:
            failures.append(f"GET /metrics answered {status}")
        check = subprocess.run(["promtool", "check", "metrics"], input=exposition, capture_output=True, text=True, timeout=30)
        report = (check.stdout + check.stderr).strip()
        if check.returncode != 0 or report:
            failures.append(f"promtool check metrics on the live /metrics: status {check.returncode}: {report}")
        else:
            log(f"promtool check metrics: clean ({len(exposition.splitlines())} lines)")

        # 2. the rules are loaded and healthy.
        records, alerts = [], []
        for path in rule_files:
            with open(path) as f:
                for group in yaml.safe_load(f)["groups"]:
                    for rule in group["rules"]:
                        (records if "record" in rule else alerts).append(rule.get("record") or rule.get("alert"))
        loaded = {}
        for group in prom.api("/api/v1/rules")["groups"]:
            for rule in group["rules"]:
                loaded[rule["name"]] = rule
        for name in records + alerts:
            rule = loaded.get(name)
            if rule is None:
                failures.append(f"rule {name} is not loaded by Prometheus")
            elif rule.get("health") != "ok" or rule.get("lastError"):
                failures.append(f"rule {name}: health {rule.get('health')}: {rule.get('lastError')}")
        log(f"rules: {len(records)} recording and {len(alerts)} alerting rules loaded and evaluated")

        # 3. every dashboard query, and 4. every recording rule, return data.
        variables = dashboard_variables()
        checks = [(f, where, resolve(expr, variables)) for f, where, expr in dashboard_queries()]
        checks += [("rules", f"recording rule {name}", name) for name in records]
        for source, where, expr in checks:
            try:
                series, nan = run_query(prom, expr)
            except RuntimeError as e:
                failures.append(f"{source}: {where}: {e}")
                continue
            verdict = "ok" if series else "EMPTY"
            extra = f", {nan} NaN" if nan else ""
            log(f"{verdict:5} {series:3} series{extra:8}  {source}: {where}")
            if not series:
                failures.append(f"{source}: {where} returned nothing: {expr}")

        # 5. every throttle_* metric the files name is exported.
        exported = {line.split("{")[0].split(" ")[0] for line in exposition.splitlines() if line and not line.startswith("#")}
        named = set()
        texts = [expr for _, _, expr in dashboard_queries()]
        for path in rule_files:
            with open(path) as f:
                texts.append(f.read())
        for text in texts:
            named.update(METRIC_NAME.findall(text))
        documented = documented_metrics()
        missing = sorted(n for n in named if n not in exported and n not in documented)
        if missing:
            failures.append(f"metrics named in the dashboards or rules but neither exported nor in the README: {', '.join(missing)}")
        else:
            live = sum(1 for n in named if n in exported)
            log(f"all {len(named)} throttle_* metrics named in the dashboards and rules exist "
                f"({live} in the live exposition, {len(named) - live} documented in the README)")
        procs.check_alive()
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        failures.append(str(e))
        for name in ("controller", "prometheus", "sim-checkout", "sim-search"):
            tail = procs.tail(name)
            if tail:
                print(f"--- last lines of {name}.log\n{tail}", file=sys.stderr)
    finally:
        procs.stop_all()

    for failure in failures:
        print(f"live_prometheus: FAILED: {failure}", file=sys.stderr)
    if not failures:
        shutil.rmtree(work, ignore_errors=True)
        log("all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
