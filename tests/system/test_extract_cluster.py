"""``content-selection pipeline`` on a WARC of this machine's disk, its pages extracted on a Dask cluster whose
workers share no disk (each in its own mount namespace with a private ``/tmp``, where the WARC is): the archive is
read once, here, and its pages travel to the workers in their chunks, a worker process killed in the middle."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import psutil
import pytest

from tests.support.cluster import NamespaceCluster, require_namespaces
from tests.support.crawls import write_crawl
from tests.support.faultkit import run_command

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("crawl-cluster")]


def test_a_warc_on_this_disk_is_extracted_on_workers_that_share_no_disk_one_killed(
    tmp_path: Path, session_api: dict[str, str]
) -> None:
    require_namespaces()
    write_crawl(tmp_path / "crawl", 1, 60)
    (warc,) = (tmp_path / "crawl").rglob("*.warc.gz")
    assert warc.is_relative_to("/tmp")  # not on the workers' disk: each has a /tmp of its own
    env = {"PREFECT_HOME": str(tmp_path / "prefect-home"), **session_api}
    alone = run_command(["extract", str(warc), "-o", str(tmp_path / "alone.json")], tmp_path, env, timeout=300)
    assert alone.returncode == 0, alone.stderr
    with NamespaceCluster(log_dir=tmp_path / "cluster") as cluster:
        worker, _ = cluster.start_workers(["w1", "w2"])
        killed: list[int] = []

        def kill_when_busy() -> None:  # a worker process killed while the chunks run (its nanny starts another)
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and not killed:
                with contextlib.suppress(psutil.Error, ValueError):  # between two worker processes
                    if psutil.Process(worker.worker_pid()).children():  # a chunk's extraction is running
                        killed.append(worker.kill_process())
                time.sleep(0.2)

        killer = threading.Thread(target=kill_when_busy, daemon=True)
        killer.start()
        args = ["pipeline", str(warc), "--extracted", str(tmp_path / "x.json"), "-o", str(tmp_path / "selected.json")]
        done = run_command(args, tmp_path, {**env, "CONTENT_SELECTION_DASK_ADDRESS": cluster.address}, timeout=600)
        killer.join(timeout=5)
    assert done.returncode == 0, done.stderr
    assert killed, "no worker process was killed while it extracted"
    assert (tmp_path / "x.json").read_bytes() == (tmp_path / "alone.json").read_bytes()
