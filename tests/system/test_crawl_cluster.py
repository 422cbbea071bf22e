"""``content-selection crawl`` as a user runs it, on a Dask cluster whose workers share no disk (each in its own
mount namespace with a private ``/tmp``), over a crawl in Common Crawl's shape in moto's S3 server.

The reference bytes are each WARC done alone, in this process (``crawl_warc``: what ``pipeline`` writes for it).
"""

from __future__ import annotations

import contextlib
import gzip
import os
import random
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from selection_crawl.commits import COMMIT_PAGES_VARIABLE
from selection_crawl.job import CrawlJob
from selection_crawl.unit import crawl_warc
from selection_extraction import stop_kept_workers
from tests.support.cluster import NamespaceCluster, require_namespaces
from tests.support.crawls import write_crawl
from tests.support.faultkit import run_command, start_command
from tests.support.https_server import HttpsServer
from tests.support.object_stores import StoreServer

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("crawl-cluster")]

CRAWL = "crawl-data/CC-MAIN-2024-18"


def _crawl_in_bucket(server: StoreServer, bucket: str, folder: Path, warcs: int, pages: int) -> list[str]:
    """A crawl of ``warcs`` WARCs of ``pages`` real pages each, written in Common Crawl's layout and uploaded."""
    keys = write_crawl(folder, warcs, pages)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        server.put(server.url(bucket, path.relative_to(folder).as_posix()), path.read_bytes())
    return keys


def _reference(server: StoreServer, bucket: str, listing: str) -> dict[str, bytes]:
    """Each WARC done alone in this process, under ``reference/``: its output's bytes by output path."""
    job = CrawlJob.plan(listing, server.url(bucket, "reference"), server.url(bucket, ""), 30.0)
    for index in job.todo:
        assert crawl_warc(job.warc_job(index)).state == "done"
    stop_kept_workers()
    fs = server.fs()
    return {u.relative: fs.cat_file(f"{bucket}/reference/{u.relative}") for u in job.warcs}


def _outputs(server: StoreServer, bucket: str) -> dict[str, dict[str, Any]]:
    return {
        key.removeprefix(f"{bucket}/selected/"): entry
        for key, entry in server.fs().find(f"{bucket}/selected", detail=True).items()
    }


def _crawl_args(server: StoreServer, bucket: str, listing: str, address: str) -> list[str]:
    return ["crawl", listing, "--base", server.url(bucket, ""), "-o", server.url(bucket, "selected"),
            "--dask-address", address, "--time-limit", "30"]  # fmt: skip


def _same_as_reference(server: StoreServer, bucket: str, reference: dict[str, bytes]) -> None:
    fs = server.fs()
    for relative, data in reference.items():
        assert fs.cat_file(f"{bucket}/selected/{relative}") == data, relative
    names = set(_outputs(server, bucket))
    records = {r.removesuffix(".jsonl") + ".extraction.json" for r in reference}
    assert names == {*reference, *records, "crawl.json"}  # nothing partial, nothing else
    assert server.uploads(bucket) == []


def test_a_crawl_on_workers_that_share_no_disk_writes_each_warcs_output_and_resumes(
    s3_server: StoreServer, bucket: str, tmp_path: Path, session_api: dict[str, str]
) -> None:
    require_namespaces()
    keys = _crawl_in_bucket(s3_server, bucket, tmp_path / "crawl", warcs=4, pages=3)
    reference = _reference(s3_server, bucket, s3_server.url(bucket, f"{CRAWL}/warc.paths.gz"))
    # the listing of the run: the crawl's keys, a key that is not there and an object that is not a WARC
    s3_server.put(s3_server.url(bucket, "bad/not-a-warc.warc.gz"), gzip.compress(b"hello\n", mtime=0))
    lines = [*keys, "bad/not-a-warc.warc.gz", f"{CRAWL}/segments/missing/warc/gone.warc.gz"]
    s3_server.put(s3_server.url(bucket, "listing.txt"), "".join(f"{line}\n" for line in lines).encode())
    env = {"PREFECT_HOME": str(tmp_path / "prefect-home"), **session_api}

    with NamespaceCluster(log_dir=tmp_path / "cluster") as cluster:
        cluster.start_workers(["w1", "w2"])
        args = _crawl_args(s3_server, bucket, s3_server.url(bucket, "listing.txt"), cluster.address)
        first = run_command(args, tmp_path, env, timeout=600)
        assert first.returncode == 65, first.stderr
        failed = [line for line in first.stderr.splitlines() if line.startswith("content-selection: ")]
        assert len(failed) == 3, first.stderr  # one line per bad WARC, then the error
        named = sorted(failed[:2], key=lambda line: "gone.warc.gz" in line)  # in the order they ended
        assert "not-a-warc.warc.gz: not a WARC file" in named[0] and "gone.warc.gz: no such object" in named[1]
        assert failed[2].startswith("content-selection: error: 2 of 6 WARCs failed, each named in")
        fs = s3_server.fs()
        for relative, data in reference.items():
            assert fs.cat_file(f"{bucket}/selected/{relative}") == data, relative
        summary = orjson.loads(fs.cat_file(f"{bucket}/selected/crawl.json"))
        assert [w["state"] for w in summary["warcs"]] == ["done"] * 4 + ["failed"] * 2
        assert summary["totals"]["pages"] == 12 and summary["totals"]["done"] == 4
        stamps = {k: e["LastModified"] for k, e in _outputs(s3_server, bucket).items() if k != "crawl.json"}

        again = run_command(args, tmp_path, env, timeout=600)
        assert again.returncode == 65, again.stderr
        assert "WARCs" not in again.stdout  # it failed: the summary lines are not printed
        summary = orjson.loads(fs.cat_file(f"{bucket}/selected/crawl.json"))
        assert summary["totals"]["done_before"] == 4  # the valid outputs were not done again...
        after = {k: e["LastModified"] for k, e in _outputs(s3_server, bucket).items() if k != "crawl.json"}
        assert after == stamps  # ...nor written again
        assert s3_server.uploads(bucket) == []

        # the same WARCs as a dataset, on the same workers: a Parquet file each, beside the batches, with their texts
        s3_server.put(s3_server.url(bucket, "good.txt"), "".join(f"{key}\n" for key in keys).encode())
        as_dataset = _crawl_args(s3_server, bucket, s3_server.url(bucket, "good.txt"), cluster.address)
        done = run_command([*as_dataset, "--format", "dataset"], tmp_path, env, timeout=600)
        assert done.returncode == 0, done.stderr
        import pyarrow.parquet as pq

        for relative, data in reference.items():
            parquet = f"{bucket}/selected/{relative.removesuffix('.jsonl')}.parquet"
            with fs.open(parquet, "rb") as fh:
                rows = pq.read_table(fh).to_pylist()
            articles = [orjson.loads(line) for line in data.splitlines()]
            texts = [a[a["selected_extractor"]]["cleaned_text" if a["selected_extractor"] == "readability" else "text"]
                     for a in articles]  # fmt: skip
            assert [r["text"] for r in rows] == texts and {r["dump"] for r in rows} == {"CC-MAIN-2024-18"}, relative
        assert s3_server.uploads(bucket) == []
        assert all(w.alive for w in cluster.workers)


def test_a_crawl_of_warcs_over_https_on_workers_that_share_no_disk_selects_what_the_folders_crawl_selects(
    s3_server: StoreServer,
    bucket: str,
    https_server: HttpsServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    session_api: dict[str, str],
) -> None:
    """Common Crawl as users outside us-east-1 read it: the listing and the WARCs over HTTPS (nginx), the outputs in
    S3; the workers trust the server's CA through ``SSL_CERT_FILE``, as the coordinator does."""
    require_namespaces()
    name = f"cc-{uuid.uuid4().hex[:8]}"
    write_crawl(https_server.root / name, warcs=3, pages=3)
    folder = https_server.root / name
    reference = CrawlJob.plan(str(folder / CRAWL / "warc.paths.gz"), str(tmp_path / "folder"), str(folder), 30.0)
    for index in reference.todo:
        assert crawl_warc(reference.warc_job(index)).state == "done"
    stop_kept_workers()
    monkeypatch.setenv("SSL_CERT_FILE", str(https_server.ca_file))  # the workers' environment is this process's
    listing, base = https_server.url(f"{name}/{CRAWL}/warc.paths.gz"), https_server.url(f"{name}/")
    with NamespaceCluster(log_dir=tmp_path / "cluster", extra_paths=[https_server.ca_file]) as cluster:
        cluster.start_workers(["w1", "w2"])
        args = ["crawl", listing, "--base", base, "-o", s3_server.url(bucket, "selected"),
                "--dask-address", cluster.address, "--time-limit", "30"]  # fmt: skip
        done = run_command(
            args, tmp_path, {"PREFECT_HOME": str(tmp_path / "home"), **https_server.env, **session_api}, timeout=600
        )
        assert done.returncode == 0, done.stderr
        assert all(w.alive for w in cluster.workers)
    fs = s3_server.fs()
    for warc in reference.warcs:
        over_https = [orjson.loads(line) for line in fs.cat_file(f"{bucket}/selected/{warc.relative}").splitlines()]
        in_folder = [orjson.loads(line) for line in (tmp_path / "folder" / warc.relative).read_bytes().splitlines()]
        assert {a.pop("path") for a in over_https} == {base + warc.relative.removesuffix(".jsonl") + ".warc.gz"}
        assert over_https == [{k: v for k, v in a.items() if k != "path"} for a in in_folder], warc.relative
    read = {r["uri"] for r in https_server.requests(under=f"/{name}/") if r["method"] == "GET"}
    assert len([uri for uri in read if uri.endswith(".warc.gz")]) == 3  # every WARC read from the server
    assert s3_server.uploads(bucket) == []


def _popen(args: list[str], cwd: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return start_command(args, cwd, env, log, start_new_session=True)


class _Chaos(threading.Thread):
    """Every 1 to 3 s (a seeded draw), on a random worker: kill the machine (its whole process group), its worker
    process alone (its nanny starts another) or its nanny alone; a dead machine or nanny gets a replacement."""

    def __init__(self, cluster: NamespaceCluster, seed: int) -> None:
        super().__init__(daemon=True)
        self.cluster = cluster
        self.random = random.Random(seed)
        self.kills = {"machine": 0, "worker process": 0, "nanny": 0}
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.wait(self.random.uniform(1.0, 3.0)):
                alive = [w for w in self.cluster.workers if w.alive]
                if not alive:
                    continue
                victim = self.random.choice(alive)
                kind = self.random.choice(list(self.kills))
                if kind == "worker process":
                    try:
                        victim.kill_process()
                    except ValueError:  # its nanny is between two worker processes
                        continue
                    time.sleep(1)
                    if not victim.alive:  # a nanny still starting gives up when its worker dies: a machine lost
                        victim.kill()
                        self.cluster.start_worker(f"w{len(self.cluster.workers) + 1}")
                elif kind == "nanny":
                    if not victim.kill_nanny():
                        raise AssertionError(f"{victim!r}: its worker process outlived its nanny")
                else:
                    victim.kill()
                self.kills[kind] += 1
                if kind != "worker process":
                    self.cluster.start_worker(f"w{len(self.cluster.workers) + 1}")
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def test_chaos_workers_and_the_coordinator_killed_while_a_crawl_runs(
    s3_server: StoreServer, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, session_api: dict[str, str]
) -> None:
    require_namespaces()
    keys = _crawl_in_bucket(s3_server, bucket, tmp_path / "crawl", warcs=8, pages=6)
    listing = s3_server.url(bucket, f"{CRAWL}/warc.paths.gz")
    reference = _reference(s3_server, bucket, listing)
    env = {"PREFECT_HOME": str(tmp_path / "prefect-home"), **session_api}
    # Dask gives up on a task after one death of its worker (KilledWorker): the crawl must send the WARC again
    monkeypatch.setenv("DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES", "1")
    monkeypatch.setenv(COMMIT_PAGES_VARIABLE, "2")  # a WARC makes progress between two kills

    with NamespaceCluster(log_dir=tmp_path / "cluster") as cluster:
        cluster.start_workers(["w1", "w2"])
        args = _crawl_args(s3_server, bucket, listing, cluster.address)
        chaos = _Chaos(cluster, seed=31)
        log = tmp_path / "crawl.log"
        coordinator = _popen(args, tmp_path, env, log)
        chaos.start()
        try:
            deadline = time.monotonic() + 300  # the coordinator is killed once the first output is there
            while not any(k.endswith(".jsonl") for k in _outputs(s3_server, bucket)):
                assert coordinator.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            os.killpg(coordinator.pid, signal.SIGKILL)
            coordinator.wait()
            done_at_kill = sum(k.endswith(".jsonl") for k in _outputs(s3_server, bucket))

            rerun = _popen(args, tmp_path, env, log)
            chaos_until = time.monotonic() + 25  # then the cluster is left alone, so that the crawl can end
            while rerun.poll() is None:
                if time.monotonic() > chaos_until:
                    chaos.stop.set()
                time.sleep(0.2)
                assert time.monotonic() < deadline + 300, log.read_text()
        finally:
            chaos.stop.set()
            chaos.join()
        assert chaos.error is None, chaos.error
        assert rerun.returncode == 0, log.read_text()
        _same_as_reference(s3_server, bucket, reference)
        summary = orjson.loads(s3_server.fs().cat_file(f"{bucket}/selected/crawl.json"))
        assert summary["totals"]["done"] == len(keys) and summary["totals"]["failed"] == 0
        differing = sum(s3_server.fs().cat_file(f"{bucket}/selected/{r}") != data for r, data in reference.items())
        print(
            f"\nchaos: kills {chaos.kills}, coordinator killed once with {done_at_kill} of {len(keys)} "
            f"WARCs done; the re-run did {len(keys) - summary['totals']['done_before']} WARCs and sent "
            f"{summary['totals']['retried']} again when Dask gave up on them; "
            f"{differing} outputs differ from a clean run"
        )
        assert sum(chaos.kills.values()) >= 3


def test_a_worker_killed_mid_warc_until_dask_gives_up_is_taken_up_from_its_last_commit(
    s3_server: StoreServer, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, session_api: dict[str, str]
) -> None:
    require_namespaces()
    _crawl_in_bucket(s3_server, bucket, tmp_path / "crawl", warcs=2, pages=25)
    listing = s3_server.url(bucket, f"{CRAWL}/warc.paths.gz")
    reference = _reference(s3_server, bucket, listing)
    env = {"PREFECT_HOME": str(tmp_path / "prefect-home"), **session_api}
    monkeypatch.setenv("DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES", "0")  # one death: KilledWorker
    monkeypatch.setenv(COMMIT_PAGES_VARIABLE, "5")

    with NamespaceCluster(log_dir=tmp_path / "cluster") as cluster:
        (first,) = cluster.start_workers(["w1"])
        log = tmp_path / "crawl.log"
        coordinator = _popen(_crawl_args(s3_server, bucket, listing, cluster.address), tmp_path, env, log)
        deadline = time.monotonic() + 300
        while not any(k.endswith(".commit") for k in _outputs(s3_server, bucket)):  # a piece of a WARC committed
            assert coordinator.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        first.kill()
        cluster.start_worker("w2")
        assert coordinator.wait(timeout=300) == 0, log.read_text()

    _same_as_reference(s3_server, bucket, reference)
    summary = orjson.loads(s3_server.fs().cat_file(f"{bucket}/selected/crawl.json"))
    assert summary["totals"]["retried"] >= 1 and summary["totals"]["done"] == 2, summary["totals"]
    taken_up = [w for w in summary["warcs"] if w.get("tries", 1) == 2]  # the worker did both WARCs at once
    assert taken_up and all(w.get("from_commits", 0) % 5 == 0 for w in taken_up)  # from their last commits...
    assert max(w.get("from_commits", 0) for w in taken_up) >= 5  # ...not from their starts


@pytest.mark.parametrize("cluster_kind", ["dask worker --nthreads 4", "LocalCluster()"])
def test_warcs_done_at_once_in_one_worker_process_replace_their_extractors_without_a_hang(
    s3_server: StoreServer, bucket: str, tmp_path: Path, cluster_kind: str, session_api: dict[str, str]
) -> None:
    """Several WARCs at once in one daemonic worker process (under its nanny), with a time limit so short that their
    extractor processes are replaced again and again: each WARC is done (the crawl that once hung for ever)."""
    keys = _crawl_in_bucket(s3_server, bucket, tmp_path / "crawl", warcs=3, pages=20)
    listing = s3_server.url(bucket, f"{CRAWL}/warc.paths.gz")
    env = {"PREFECT_HOME": str(tmp_path / "prefect-home"), **session_api}
    with contextlib.ExitStack() as stack:
        if cluster_kind == "LocalCluster()":
            from distributed import LocalCluster

            address = stack.enter_context(LocalCluster()).scheduler_address  # its defaults: nannies, threads
        else:
            require_namespaces()
            cluster = stack.enter_context(
                NamespaceCluster(log_dir=tmp_path / "cluster", worker_args=["--nthreads", "4"])
            )
            cluster.start_workers(["w1"])
            address = cluster.address
        args = [*_crawl_args(s3_server, bucket, listing, address)[:-2], "--time-limit", "0.05"]
        done = run_command(args, tmp_path, env, timeout=600)
    assert done.returncode == 0, done.stderr
    summary = orjson.loads(s3_server.fs().cat_file(f"{bucket}/selected/crawl.json"))
    assert summary["totals"]["done"] == len(keys) == 3 and summary["totals"]["pages"] == 60, summary["totals"]
    assert sum(summary["totals"]["errors"].values()) > 0, summary[
        "totals"
    ]  # pages stopped at the time limit: extractors replaced


def test_sigterm_stops_a_crawl_on_dask_within_seconds_in_one_line_and_its_warcs_processes_end(
    s3_server: StoreServer, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, session_api: dict[str, str]
) -> None:
    import psutil

    require_namespaces()
    _crawl_in_bucket(s3_server, bucket, tmp_path / "crawl", warcs=4, pages=40)
    monkeypatch.setenv(COMMIT_PAGES_VARIABLE, "5")
    listing = s3_server.url(bucket, f"{CRAWL}/warc.paths.gz")
    env = {"PREFECT_HOME": str(tmp_path / "prefect-home"), **session_api}
    with NamespaceCluster(log_dir=tmp_path / "cluster") as cluster:
        cluster.start_workers(["w1", "w2"])

        def warc_processes() -> list[psutil.Process]:
            found = []
            for worker in cluster.workers:
                for child in psutil.Process(worker.worker_pid()).children():
                    with contextlib.suppress(psutil.Error):
                        if "selection_extraction.own_process" in " ".join(child.cmdline()):
                            found.append(child)
            return found

        log = tmp_path / "crawl.log"
        coordinator = _popen(_crawl_args(s3_server, bucket, listing, cluster.address), tmp_path, env, log)
        deadline = time.monotonic() + 300
        while not any(k.endswith(".commit") for k in _outputs(s3_server, bucket)):
            assert coordinator.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        assert warc_processes()
        coordinator.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        assert coordinator.wait(timeout=120) == 130, log.read_text()
        print(f"\ncrawl on Dask stopped {time.monotonic() - stopped:.1f} s after SIGTERM")
        lines = [line for line in log.read_text().splitlines() if line.strip()]
        assert lines[-1].startswith("content-selection: stopped: ") and "run the same command again" in lines[-1]
        assert not any("Traceback" in line or "internal error" in line for line in lines), log.read_text()
        deadline = time.monotonic() + 60
        while warc_processes():
            assert time.monotonic() < deadline, warc_processes()
            time.sleep(0.2)
        outputs = _outputs(s3_server, bucket)
        assert "crawl.lease" not in outputs and s3_server.uploads(bucket) == []
        assert all(w.alive for w in cluster.workers)
