"""Soak the deployed chain under crashes on Prefect's production topology ("How to scale self-hosted Prefect"):
PostgreSQL and Redis, two API servers (``prefect server start --no-services``) and one background-services process
(``prefect server services start``) behind HAProxy on loopback, and ``content-selection serve`` pointed at HAProxy.
For a given time, batches and page sets are dropped into the data root and events emitted; at random moments one
process is SIGKILLed (an API server, the services, ``serve`` with its process group, one flow-run process, Redis),
each restarted as a supervisor (systemd, ``restart: always``) would. At the end it waits for the chain to settle
and prints the table of ``docs/reliability.md``: every batch checked byte for byte against ``content-selection
select`` on it.

    python scripts/soak.py                  # 30 minutes
    python scripts/soak.py --minutes 5     # a quick look

Not part of the tests: it takes the time it is given and all of the machine. It needs Debian's ``postgresql``,
``redis-server`` and ``haproxy`` (PostgreSQL runs as the ``postgres`` user when run as root). Everything stays
under ``--workdir`` (a new temporary folder by default), every server on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._batches import build_distinct, prefect_env  # noqa: E402
from tests.support.postgres import postgres_cluster  # noqa: E402
from tests.support.redis import prefect_redis_settings, redis_binary, redis_command  # noqa: E402

PAGES = sorted((ROOT / "tests" / "data" / "aeb-pages").glob("*.html.gz"))
EMIT = "import sys\nfrom content_selection import emit_batch_extracted\nemit_batch_extracted(sys.argv[1])"
FAULTS = ("api-server", "services", "serve", "flow-run", "redis")

#: HAProxy in front of the API servers: the API's health endpoint checked every second, a request that finds a
#: dead server sent to the other, long-lived websockets (the events clients) kept.
HAPROXY_CONFIG = """global
    maxconn 2000
defaults
    mode http
    timeout connect 2s
    timeout client 300s
    timeout server 300s
    timeout tunnel 3600s
    retries 3
    option redispatch
frontend prefect
    bind 127.0.0.1:{port}
    default_backend api
backend api
    balance leastconn
    option httpchk GET /api/health
    default-server inter 1s fall 2 rise 1
{servers}
"""


@dataclass
class Supervised:
    """A process restarted after it dies (a supervisor's ``restart: always``), in its own process group."""

    name: str
    args: list[str]
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None
    down_until: float = 0.0
    restarts: int = 0

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                self.args, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self, restart_after: float) -> None:
        if self.alive():
            assert self.process is not None
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.down_until = time.monotonic() + restart_after

    def supervise(self) -> None:
        if not self.alive() and time.monotonic() >= self.down_until:
            self.restarts += self.process is not None
            self.start()

    def stop(self) -> None:
        if self.alive():
            assert self.process is not None
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@dataclass
class Dropped:
    """A batch or a page set put into the data root, and what became of it."""

    path: Path  # the batch (for a page set: the batch its extraction writes)
    kind: str
    landed: float
    emitted: bool | None = None
    selected: float | None = None
    emitter: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def output(self) -> Path:
        suffix = ".jsonl" if self.path.suffix == ".jsonl" else ".json"
        return self.path.with_name(self.path.name.removesuffix(suffix) + "_selected" + suffix)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Topology:
    """The processes of the production topology, not started: Redis, the API servers, the services, HAProxy,
    ``serve``; and the environment that reaches the API through HAProxy."""

    env: dict[str, str]
    redis: Supervised
    api_servers: list[Supervised]
    services: Supervised
    balancer: Supervised
    serve: Supervised

    def supervise(self) -> None:
        """Start again what is down and due (``serve`` once the API answers through HAProxy)."""
        for process in (self.redis, *self.api_servers, self.services, self.balancer):
            process.supervise()
        if healthy(self.env["PREFECT_API_URL"]):
            self.serve.supervise()

    def stop(self) -> None:
        for process in (self.serve, self.services, *self.api_servers, self.balancer, self.redis):
            process.stop()


def topology(work: Path, serve_options: list[str], slot_wait: float, database: str, servers: int = 2) -> Topology:
    """Prefect's production topology on ``database`` (migrated here, once) and a Redis of its own in ``work``."""
    data = work / "data"
    data.mkdir(parents=True, exist_ok=True)
    binary = redis_binary()
    if binary is None or shutil.which("haproxy") is None:
        raise SystemExit("soak: needs redis-server and haproxy (apt-get install redis-server haproxy)")
    redis_port, balancer_port = free_port(), free_port()
    (work / "redis").mkdir(exist_ok=True)
    env = prefect_env(work / "home")
    env.update(
        PREFECT_LOGGING_LEVEL="INFO",
        PREFECT_SERVER_DEPLOYMENTS_CONCURRENCY_SLOT_WAIT_SECONDS=str(slot_wait),
        PYTHONPATH=str(ROOT),
    )
    server_env = {
        **env,
        **prefect_redis_settings("127.0.0.1", redis_port),
        "PREFECT_SERVER_DATABASE_CONNECTION_URL": database,
        "PREFECT_SERVER_DATABASE_MIGRATE_ON_START": "false",  # migrated once, below
    }
    subprocess.run([sys.executable, "-m", "prefect", "server", "database", "upgrade", "-y"], env=server_env,
                   check=True, capture_output=True)  # fmt: skip
    redis = Supervised("redis", redis_command(binary, "127.0.0.1", redis_port, work / "redis"), env, work / "redis.log")
    ports = [free_port() for _ in range(servers)]
    api_servers = [
        Supervised(
            f"api-{n}",
            [
                sys.executable,
                "-m",
                "prefect",
                "server",
                "start",
                "--no-services",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            server_env,
            work / f"api-{n}.log",
        )  # fmt: skip
        for n, port in enumerate(ports, 1)
    ]
    services = Supervised(
        "services", [sys.executable, "-m", "prefect", "server", "services", "start"], server_env, work / "services.log"
    )
    servers_lines = "\n".join(f"    server api{n} 127.0.0.1:{port} check" for n, port in enumerate(ports, 1))
    (work / "haproxy.cfg").write_text(HAPROXY_CONFIG.format(port=balancer_port, servers=servers_lines))
    balancer = Supervised("haproxy", ["haproxy", "-db", "-f", str(work / "haproxy.cfg")], env, work / "haproxy.log")
    env["PREFECT_API_URL"] = f"http://127.0.0.1:{balancer_port}/api"
    serve_args = ["selection_cli.main", "serve", "--data-root", str(data), *serve_options]
    serve = Supervised("serve", [sys.executable, "-m", *serve_args], env, work / "serve.log")
    return Topology(env, redis, api_servers, services, balancer, serve)


def rerun_figure(crashed: list[tuple[Any, list[Any]]]) -> str:
    """How many times the deployment runs entered Crashed, how many of those were followed by AwaitingRetry (the
    re-run automation), and the longest time between the two."""
    crashes, again, longest = 0, 0, 0.0
    for _, states in crashed:
        ordered = sorted(states, key=lambda state: state.timestamp)
        for i, state in enumerate(ordered):
            if state.type.value != "CRASHED":
                continue
            crashes += 1
            retry = next((later for later in ordered[i + 1 :] if later.name == "AwaitingRetry"), None)
            if retry is not None:
                again += 1
                longest = max(longest, (retry.timestamp - state.timestamp).total_seconds())
    return f"{crashes} / {again} / {longest:.0f}"


def flow_run_processes(serve_pid: int) -> list[int]:
    """The flow-run processes of ``serve``: its descendants running ``python -m prefect.engine``."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [], {serve_pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier}
        found += [pid for pid in frontier if b"prefect.engine" in _cmdline(pid)]
    return sorted(found)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # gone
        return b""


def healthy(api_url: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{api_url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def drop_batch(data: Path, number: int, rng: random.Random) -> Dropped:
    folder = data / f"day{number % 4}"
    folder.mkdir(exist_ok=True)
    suffix = ".jsonl" if rng.random() < 0.3 else ".json"
    target = folder / f"b{number:04d}_extracted{suffix}"
    staging = data.parent / "staging" / target.name  # written whole elsewhere, then renamed in: as upstream does
    staging.parent.mkdir(exist_ok=True)
    build_distinct(staging, rng.randint(50, 4000))
    os.replace(staging, target)
    return Dropped(target, "batch", time.time())


def drop_page_set(data: Path, number: int, rng: random.Random) -> Dropped:
    inbox = data / "inbox"
    inbox.mkdir(exist_ok=True)
    staging = data.parent / "staging" / f"pages{number:04d}"
    staging.mkdir(parents=True)
    for page in rng.sample(PAGES, rng.randint(2, 6)):
        shutil.copyfile(page, staging / page.name)
    os.replace(staging, inbox / staging.name)
    return Dropped(inbox / f"{staging.name}_extracted.json", "page set", time.time())


def stage_runs(env: dict[str, str], histories: bool = True) -> list[Any]:
    """Every flow run on the server (all of them the stage's: deployment runs and subflow runs), with its state
    history (or None)."""
    from prefect import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: env["PREFECT_API_URL"]}):
        with get_client(sync_client=True) as client:
            runs, offset = [], 0
            while page := client.read_flow_runs(offset=offset, limit=200):
                runs += page
                offset += len(page)
            return [(run, client.read_flow_run_states(run.id) if histories else None) for run in runs]


def right_bytes(item: Dropped, scratch: Path) -> bool:
    if not item.output.exists() or not item.path.exists():
        return False
    reference = scratch / f"reference{item.output.suffix}"
    done = subprocess.run(
        [sys.executable, "-m", "selection_cli.main", "select", str(item.path), "-o", str(reference)],
        cwd=ROOT,
        capture_output=True,
    )
    return done.returncode == 0 and reference.read_bytes() == item.output.read_bytes()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="how long to drop work and kill (default 30)")
    parser.add_argument("--settle-minutes", type=float, default=20.0, help="most time to wait for the chain after")
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--drop-every", type=float, default=20.0, help="mean seconds between two drops")
    parser.add_argument("--fault-every", type=float, default=180.0, help="mean seconds between two SIGKILLs")
    parser.add_argument("--cron", default="*/5 * * * *", help="the scheduled scans' schedule (the safety net)")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="soak-"))
    with postgres_cluster() as database:
        return soak(args, rng, work, database)


def soak(args: argparse.Namespace, rng: random.Random, work: Path, database: str) -> int:
    """The soak of :func:`main` on ``database``."""
    data = work / "data"
    stack = topology(work, ["--cron", args.cron], slot_wait=5.0, database=database)
    env, serve = stack.env, stack.serve
    print(f"soak: {args.minutes:g} min in {work} (API at {env['PREFECT_API_URL']}, seed {args.seed})", flush=True)
    dropped: list[Dropped] = []
    kills: dict[str, int] = dict.fromkeys(FAULTS, 0)
    started = time.monotonic()
    deadline = started + args.minutes * 60
    next_drop = started + 60  # once serve has registered
    next_fault = started + 120 + rng.expovariate(1 / args.fault_every)

    def inflict(fault: str) -> bool:
        """SIGKILL one process of the kind ``fault``; whether there was one."""
        if fault == "flow-run":
            runs = flow_run_processes(serve.process.pid) if serve.alive() and serve.process is not None else []
            if runs:
                os.kill(rng.choice(runs), signal.SIGKILL)
            return bool(runs)
        if fault == "api-server":  # one of them: the balancer sends the requests to the other
            target = rng.choice([api for api in stack.api_servers if api.alive()] or stack.api_servers)
        else:
            target = {"services": stack.services, "serve": serve, "redis": stack.redis}[fault]
        if not target.alive():
            return False
        target.kill(restart_after=rng.uniform(1, 10 if fault == "redis" else 20))
        return True

    def tick(producing: bool) -> None:
        nonlocal next_drop, next_fault
        stack.supervise()
        now = time.monotonic()
        if producing and now >= next_drop:
            number = len(dropped)
            item = drop_page_set(data, number, rng) if rng.random() < 0.2 else drop_batch(data, number, rng)
            if item.kind == "batch":
                item.emitter = subprocess.Popen(
                    [sys.executable, "-c", EMIT, str(item.path)],
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            dropped.append(item)
            next_drop = now + rng.expovariate(1 / args.drop_every)
        if producing and now >= next_fault:
            fault = rng.choice(FAULTS)
            if inflict(fault):
                kills[fault] += 1
                print(f"  {time.strftime('%H:%M:%S')} SIGKILL {fault} ({len(dropped)} dropped so far)", flush=True)
                next_fault = now + rng.expovariate(1 / args.fault_every)
            else:  # nothing of that kind to kill right now: try again soon
                next_fault = now + 1
        for item in dropped:
            if item.emitter is not None and item.emitter.poll() is not None:
                item.emitted, item.emitter = item.emitter.returncode == 0, None
            if item.selected is None and item.output.exists() and item.output.stat().st_mtime >= item.landed - 1:
                item.selected = time.time()
        time.sleep(1)

    try:
        while time.monotonic() < deadline:
            tick(producing=True)
        print(f"soak: {len(dropped)} dropped, {kills} killed; waiting for the chain to settle", flush=True)
        settle = time.monotonic() + args.settle_minutes * 60
        while time.monotonic() < settle:
            tick(producing=False)
            if all(item.selected for item in dropped):
                runs = stage_runs(env)
                if not any(run.state.type.value in ("RUNNING", "PENDING") for run, _ in runs):
                    break
        runs = stage_runs(env)
    finally:
        stack.stop()
    scratch = work / "scratch"
    scratch.mkdir(exist_ok=True)
    crashed = [
        (run, states)
        for run, states in runs
        if run.deployment_id is not None and any(s.type.value == "CRASHED" for s in states)
    ]
    subflows_crashed = sum(
        run.deployment_id is None and any(s.type.value == "CRASHED" for s in states) for run, states in runs
    )
    untagged = sum("content-selection" not in run.tags for run, _ in runs)
    waits = [item.selected - item.landed for item in dropped if item.selected]
    right = sum(right_bytes(item, scratch) for item in dropped)
    figures = {
        "minutes": args.minutes,
        "batches dropped (page sets among them)": f"{len(dropped)} ({sum(i.kind == 'page set' for i in dropped)})",
        "events not confirmed (emitter failed)": sum(i.emitted is False for i in dropped),
        f"SIGKILLs ({', '.join(FAULTS)})": f"{sum(kills.values())} ({', '.join(str(kills[f]) for f in FAULTS)})",
        "restarts (API servers, services, serve, Redis)": f"{sum(a.restarts for a in stack.api_servers)}, "
        f"{stack.services.restarts}, {serve.restarts}, {stack.redis.restarts}",
        "serve starting Prefect's runner again": (work / "serve.log")
        .read_text(errors="replace")
        .count("serving again"),
        "batches selected with the right bytes": right,
        "deployment runs Crashed / of them run again to Completed": f"{len(crashed)} / "
        f"{sum(run.state.type.value == 'COMPLETED' for run, _ in crashed)}",
        "subflow runs Crashed (their parent run is the one run again)": subflows_crashed,
        "longest wait from landing to selection (s)": round(max(waits), 1) if waits else None,
        "median wait (s)": round(sorted(waits)[len(waits) // 2], 1) if waits else None,
        "orphaned staged files left": sum(1 for p in data.rglob("*.cs-tmp")),
        "runs without the stage's tag (unseen by its automations)": untagged,
        "runs stuck Running or Pending at the end": sum(
            run.state.type.value in ("RUNNING", "PENDING") for run, _ in runs
        ),
        "lost batches (no right output)": len(dropped) - right,
        "Crashed states / run again (AwaitingRetry) / longest s from Crashed to AwaitingRetry": rerun_figure(crashed),
        "automation actions the server logged as failed": sum(
            log.read_text(errors="replace").count("Action failed") for log in work.glob("*.log")
        ),
    }
    not_rerun = [
        f"{run.name}: {' -> '.join(str(s.name) for s in sorted(states, key=lambda s: s.timestamp))}"
        for run, states in crashed
        if run.state.type.value != "COMPLETED"
    ]
    (work / "soak.json").write_text(json.dumps({**figures, "crashed, not completed": not_rerun}, indent=2))
    for line in not_rerun:
        print(f"  crashed, not completed: {line}")
    print("\n| what | figure |\n|---|---:|")
    for name, value in figures.items():
        print(f"| {name} | {value} |")
    return 0 if figures["lost batches (no right output)"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
