#!/usr/bin/env python3
"""One WARC of Common Crawl's size class through ``content-selection crawl``, from moto's S3 server: what a kill
costs, how often the progress moves, what is read, and what a clean crawl costs before and after a change.

    python benchmarks/crawl_warc.py --pages 5000 --kills 5 --before-python /tmp/before-venv/bin/python
    python benchmarks/crawl_warc.py --pages 300 --kills 2          # smoke run

One WARC of ``--pages`` real pages (``scripts/make_crawl_fixtures.py``: about 1 synthetic capture per 300 pages
more), uploaded to moto's S3 server; every crawl is the command line as a user runs it, one worker. Two pairs of runs,
the two runs of a pair at once, each pinned to its own core (``taskset``), so that each ratio is measured under one
load:

1. clean: the crawl with ``--before-python`` (an interpreter where the code before the change is installed; left
   out: this tree alone) against the crawl with this tree: seconds, the coordinator's peak resident set (VmHWM of
   the command's process), a worker's (VmHWM of the worker and its extractor processes), the bytes the workers
   requested from the store for the WARC against its size (counted in s3fs's ranged reads), and this tree's
   progress lines per minute (its bar, on a pseudo-terminal);
2. kills: this tree's crawl on local processes and on a Dask worker in its own mount namespace, each worker killed
   (SIGKILL of its process group) ``--kills`` times at random moments (seeded); the seconds each kill cost, net:
   (the killed run's seconds - the clean run's) / kills.

moto's server reads a whole object for each ranged GET: the store's times are upper bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: Imported by every interpreter of a run (on PYTHONPATH): counts the bytes of each ranged read of s3fs.
_COUNTER = """
import os
_log = os.environ.get("BENCH_BYTES_LOG")
if _log:
    import s3fs.core
    _real = s3fs.core.S3File._fetch_range
    def _counted(self, start, end):
        data = _real(self, start, end)
        with open(_log, "a") as fh:
            fh.write(f"{self.path} {len(data)}\\n")
        return data
    s3fs.core.S3File._fetch_range = _counted
"""


def _status_kib(pid: int, field: str = "VmHWM") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class _Run:
    """One ``content-selection crawl`` in a child process on a pseudo-terminal, its memory sampled."""

    def __init__(self, python: str, args: list[str], env: dict[str, str], core: str, log: Path) -> None:
        self.master, slave = pty.openpty()
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            ["taskset", "-c", core, python, "-m", "selection_cli.main", *args],
            env=env, stdin=subprocess.DEVNULL, stdout=open(log, "wb"), stderr=slave,  # noqa: SIM115
            start_new_session=True, cwd=log.parent,  # not the repository: each interpreter imports its own code
        )  # fmt: skip
        os.close(slave)
        self.screen = bytearray()
        self.coordinator_kib = 0
        self.worker_kib = 0
        self.seconds = 0.0
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._sample, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.screen += data

    def workers(self) -> list[Any]:
        """The crawl's local workers: the fork server's children."""
        import psutil

        try:  # (taskset runs the command in its own process)
            servers = [p for p in psutil.Process(self.process.pid).children() if "forkserver" in " ".join(p.cmdline())]
            return [worker for server in servers for worker in server.children()]
        except psutil.Error:
            return []

    def _sample(self) -> None:
        import psutil

        while self.process.poll() is None:
            try:
                self.coordinator_kib = max(self.coordinator_kib, _status_kib(self.process.pid))
                for worker in self.workers():
                    tree = [worker, *worker.children(recursive=True)]
                    self.worker_kib = max(self.worker_kib, sum(_status_kib(p.pid) for p in tree))
            except psutil.Error:
                pass
            time.sleep(0.5)

    def wait(self) -> int:
        code = self.process.wait()
        self.seconds = time.monotonic() - self.started
        time.sleep(0.2)
        return code

    def bar_updates(self) -> int:
        return self.screen.count(b"\r\x1b[K")


def _killer(run_workers: Any, kill: Any, seconds: float, kills: int, seed: int, log: list[float]) -> threading.Thread:
    """Kill the worker at ``kills`` random moments (seeded) of the first 80 % of ``seconds``, one in each of as many
    equal spans, each once a worker is at work."""
    span = 0.8 * seconds / kills
    draw = random.Random(seed)
    moments = [(i + draw.uniform(0.1, 0.9)) * span for i in range(kills)]

    def run() -> None:
        started = time.monotonic()
        for moment in moments:
            while time.monotonic() - started < moment:
                time.sleep(0.2)
            while not run_workers():
                time.sleep(0.2)
            kill()
            log.append(time.monotonic() - started)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _requested(log: Path, key: str) -> int:
    total = 0
    if log.exists():
        for line in log.read_text().splitlines():
            path, _, size = line.rpartition(" ")
            if path.endswith(key):
                total += int(size)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=5000, help="HTML pages of the WARC")
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument("--before-python", help="an interpreter with the code before the change installed")
    args = parser.parse_args()

    import logging

    from tests.support.cluster import NamespaceCluster, namespace_support
    from tests.support.crawls import write_crawl
    from tests.support.faultkit import child_env
    from tests.support.object_stores import S3Server, environment
    from tests.support.prefect_fixtures import free_port

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="crawl-warc-bench-"))
    server = S3Server(free_port(), work / "s3")
    server.start()
    os.environ.update(environment(server))
    hook = work / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_COUNTER)
    results: dict[str, Any] = {"pages": args.pages, "kills": args.kills}
    try:
        bucket = server.new_bucket()
        (key,) = write_crawl(work / "crawl", 1, args.pages)
        warc = work / "crawl" / key
        server.put(server.url(bucket, key), warc.read_bytes())
        server.put(server.url(bucket, "listing.txt"), f"{key}\n".encode())
        results["warc_bytes"] = warc.stat().st_size
        results["captures"] = len(re.findall(rb"WARC-Type: response", _gunzip(warc)))
        listing, base = server.url(bucket, "listing.txt"), server.url(bucket, "")

        def env_of(name: str) -> dict[str, str]:
            env = {k: v for k, v in child_env().items() if not k.startswith("PREFECT_")} | environment(server)
            env |= {"PREFECT_HOME": str(work / f"home-{name}"), "BENCH_BYTES_LOG": str(work / f"bytes-{name}")}
            env["PYTHONPATH"] = os.pathsep.join([str(hook), *filter(None, [env.get("PYTHONPATH")])])
            return env

        def crawl(python: str, name: str, core: str, extra: tuple[str, ...] = ()) -> _Run:
            out = server.url(bucket, f"out-{name}")
            crawl_args = ["crawl", listing, "--base", base, "-o", out, "--time-limit", "60", *extra]
            if "--dask-address" not in extra:
                crawl_args += ["--workers", "1"]
            return _Run(python, crawl_args, env_of(name), core, work / f"{name}.log")

        # 1. clean: before and after at once, one core each
        after = crawl(sys.executable, "after", "1")
        before = crawl(args.before_python, "before", "0") if args.before_python else None
        for run, name in ((after, "after"), (before, "before")):
            if run is None:
                continue
            code = run.wait()
            if code != 0:
                raise SystemExit(f"the {name} crawl failed ({code}): {run.screen.decode(errors='replace')[-3000:]}")
            results[f"{name}_seconds"] = round(run.seconds, 1)
            results[f"{name}_coordinator_peak_mib"] = round(run.coordinator_kib / 1024, 1)
            results[f"{name}_worker_peak_mib"] = round(run.worker_kib / 1024, 1)
            requested = _requested(work / f"bytes-{name}", key)
            results[f"{name}_requested_bytes_over_warc_size"] = round(requested / results["warc_bytes"], 3)
        results["after_progress_updates_per_minute"] = round(after.bar_updates() / (after.seconds / 60), 1)
        if before is not None:
            results["after_over_before_seconds"] = round(after.seconds / before.seconds, 3)

        print(json.dumps(results), file=sys.stderr, flush=True)  # the clean pair's, kept if a killed run fails

        # 2. kills: local processes (core 0) and a Dask worker (core 1) at once
        local = crawl(sys.executable, "local-kills", "0")
        local_kills: list[float] = []

        def kill_local() -> None:
            for worker in local.workers()[:1]:
                for process in [worker, *worker.children(recursive=True)]:
                    process.kill()

        threads = [_killer(local.workers, kill_local, after.seconds, args.kills, args.seed, local_kills)]
        dask_kills: list[float] = []
        reason = namespace_support()
        cluster = None
        if reason is None:
            cluster = NamespaceCluster(log_dir=work / "cluster")
            cluster.__enter__()
            (first,) = cluster.start_workers(["w1"])
            subprocess.run(["taskset", "-a", "-p", "-c", "1", str(first.pid)], check=True, capture_output=True)
            on_dask = crawl(sys.executable, "dask-kills", "1", ("--dask-address", cluster.address))

            def dask_workers() -> list[Any]:
                return [w for w in cluster.workers if w.alive]

            def kill_dask() -> None:
                for worker in dask_workers()[:1]:
                    worker.kill()
                new = cluster.start_worker(f"w{len(cluster.workers) + 1}")
                subprocess.run(["taskset", "-a", "-p", "-c", "1", str(new.pid)], check=True, capture_output=True)

            threads.append(_killer(dask_workers, kill_dask, after.seconds, args.kills, args.seed + 1, dask_kills))
        for run, name, kills in ((local, "local", local_kills), *([(on_dask, "dask", dask_kills)] if cluster else [])):
            code = run.wait()
            if code != 0:
                screen = run.screen.decode(errors="replace")[-3000:]
                raise SystemExit(f"the {name} crawl failed ({code}) after kills at {kills}: {screen}")
            summary = json.loads(server.get(server.url(bucket, f"out-{name}-kills/crawl.json")))
            (line,) = summary["warcs"]
            results[f"{name}_kills_done"] = len(kills)
            results[f"{name}_killed_seconds"] = round(run.seconds, 1)
            results[f"{name}_seconds_lost_per_kill"] = round((run.seconds - after.seconds) / max(len(kills), 1), 1)
            results[f"{name}_pages_from_commits_at_last_try"] = line.get("from_commits", 0)
            output = line["output"]
            clean = server.get(server.url(bucket, f"out-after/{output}"))
            results[f"{name}_same_bytes_as_clean"] = (
                server.get(server.url(bucket, f"out-{name}-kills/{output}")) == clean
            )
        if cluster is not None:
            cluster.__exit__(None, None, None)
        else:
            results["dask"] = f"not measured: {reason}"
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2))


def _gunzip(path: Path) -> bytes:
    import gzip

    with gzip.open(path, "rb") as fh:
        return fh.read()


if __name__ == "__main__":
    main()
