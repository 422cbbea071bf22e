"""The namespaced Dask cluster of ``tests/support/cluster.py``: real scheduler and workers, no mocks.

(1) a file the test writes into its ``tmp_path`` does not exist for the workers, and a file one worker writes
    under its ``/tmp`` exists neither for the other worker nor for the test;
(2) a killed worker leaves the cluster and a replacement joins; after ``close()`` none of the processes remain;
(3) the workers import the repository's packages, from the repository the test runs from;
(4) a repository under ``/tmp`` (as in CI, which clones into a temporary folder) stays visible to a worker at
    its own path while the rest of ``/tmp`` does not, and leaving the ``with`` on an exception closes the cluster.

Every call goes to a named worker (``workers=[address]``, ``allow_other_workers=False``) with ``pure=False``: the
same call on two workers is two tasks, not one cached result. The functions sent are the standard library's or
lambdas (pickled by value), so that no worker has to import this module.
"""

from __future__ import annotations

import importlib
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import selection_extraction
from tests.support import cluster as cluster_support
from tests.support.cluster import WORKER_HOME, NamespaceCluster, Worker, group_exists, require_namespaces

pytestmark = pytest.mark.slow

#: The fixture: a started cluster of two workers, ``w1`` and ``w2`` (registered here, by name, for this module).
namespace_cluster = cluster_support.namespace_cluster

RESULT_SECONDS = 30


def on(cluster: NamespaceCluster, worker: Worker, function: Any, *args: Any) -> Any:
    """``function(*args)`` run on ``worker`` and nowhere else."""
    future = cluster.client.submit(function, *args, workers=[worker.address], allow_other_workers=False, pure=False)
    return future.result(timeout=RESULT_SECONDS)


def assert_gone(pids: list[int]) -> None:
    """No process, and no process group, of ``pids`` remains."""
    assert pids
    for pid in pids:
        assert not group_exists(pid), f"process group {pid} is still there"
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_workers_see_neither_the_tests_tmp_nor_each_others(namespace_cluster: NamespaceCluster, tmp_path: Path) -> None:
    cluster = namespace_cluster
    first, second = cluster.workers
    secret = tmp_path / "written-by-the-test.txt"
    secret.write_text("the test's")
    assert secret.exists()
    for worker in (first, second):
        assert on(cluster, worker, os.path.exists, str(secret)) is False
        assert on(cluster, worker, os.path.exists, str(tmp_path)) is False
        assert on(cluster, worker, tempfile.gettempdir) == "/tmp"
        assert on(cluster, worker, os.getcwd) == WORKER_HOME

    marker = Path("/tmp") / f"written-by-w1-{uuid.uuid4().hex}.txt"
    in_home = Path(WORKER_HOME) / "local" / marker.name
    for path in (marker, in_home):
        on(cluster, first, Path.write_text, path, "w1's")
        assert on(cluster, first, os.path.exists, str(path)) is True
        assert on(cluster, second, os.path.exists, str(path)) is False
        assert not path.exists()


def test_a_killed_worker_leaves_and_a_replacement_joins(namespace_cluster: NamespaceCluster) -> None:
    cluster = namespace_cluster
    first, second = cluster.workers
    assert set(cluster.worker_addresses()) == {"w1", "w2"}
    # as users start it: a nanny (the process the harness started), and the worker process under it
    assert on(cluster, first, os.getpid) == first.worker_pid() != first.pid
    assert sum(cluster.client.nthreads().values()) == 2 * (os.cpu_count() or 1)

    first.kill()
    assert not first.alive
    assert not group_exists(first.pid)
    cluster.wait_gone(first)
    assert set(cluster.worker_addresses()) == {"w2"}

    third = cluster.start_worker("w3")
    assert third.alive
    assert set(cluster.worker_addresses()) == {"w2", "w3"}
    assert on(cluster, third, os.getpid) == third.worker_pid()

    time.sleep(2)  # a nanny still starting its first worker process gives up when it dies (Dask's own way)
    before, address = third.kill_process(), third.address  # the worker process alone: its nanny starts another
    deadline = time.monotonic() + 60
    while cluster.worker_addresses().get("w3", address) == address:
        assert time.monotonic() < deadline, third.log()
        time.sleep(0.2)
    third.address = cluster.worker_addresses()["w3"]
    assert on(cluster, third, os.getpid) == third.worker_pid() != before

    pids = cluster.pids
    assert len(pids) == 4  # the scheduler and w1, w2, w3
    cluster.close()
    assert not any(worker.alive for worker in cluster.workers)
    assert_gone(pids)


def test_workers_import_the_repositorys_packages(namespace_cluster: NamespaceCluster) -> None:
    cluster = namespace_cluster
    for worker in cluster.workers:
        origin = on(cluster, worker, lambda name: importlib.import_module(name).__file__, "selection_extraction")
        assert origin == selection_extraction.__file__


def test_a_repository_under_tmp_stays_visible(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    require_namespaces()
    clone = tmp_path / "clone"
    (clone / "harness_probe").mkdir(parents=True)
    (clone / "harness_probe" / "__init__.py").write_text("VALUE = 'from the clone'\n")
    (tmp_path / "beside-the-clone.txt").write_text("the test's")
    pids: list[int] = []

    with pytest.raises(RuntimeError, match="leaving on an exception"):
        with NamespaceCluster(repo_root=clone, log_dir=tmp_path_factory.mktemp("logs")) as cluster:
            assert (Path("/tmp"), clone.resolve()) in cluster.binds() or not str(clone.resolve()).startswith("/tmp/")
            worker = cluster.start_worker("solo")
            pids = cluster.pids
            assert on(cluster, worker, lambda: importlib.import_module("harness_probe").VALUE) == "from the clone"
            # the folders above the clone are empty placeholders in the worker's tmpfs
            assert on(cluster, worker, os.listdir, str(tmp_path)) == ["clone"]
            assert on(cluster, worker, os.path.exists, str(tmp_path / "beside-the-clone.txt")) is False
            # the clone is the test's folder itself, not a copy
            on(cluster, worker, Path.write_text, clone / "written-by-the-worker.txt", "solo's")
            assert (clone / "written-by-the-worker.txt").read_text() == "solo's"
            raise RuntimeError("leaving on an exception")

    assert_gone(pids)
