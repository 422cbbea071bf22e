"""Batches and environments shared by the scale, parallel and overhead benchmarks.

``build_distinct`` writes a batch of any size from the 181 real articles of
``tests/data/aeb_batch_extracted.json`` (built from the ScrapingHub AEB
extractor outputs): copy ``k`` of an article gets the id ``<id>-<k>`` and the
token ``copy<k>`` appended to each of its non-empty texts, so no two articles of
a batch have the same texts and nothing can be served from a cache. The batch
is written article by article (compact JSON), never held whole in memory; a path
ending in ``.jsonl`` gets the same articles as JSON Lines (one compact object a
line, no envelope).
"""

from __future__ import annotations

import contextlib
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
SOURCE_BATCH = ROOT / "tests/data/aeb_batch_extracted.json"
OUT = ROOT / "benchmarks/out"
_TEXTS = (("trafilatura", "text"), ("newspaper4k", "text"), ("readability", "cleaned_text"))


def build_distinct(path: Path, n_articles: int) -> int:
    """Write a batch of ``n_articles`` distinct articles to ``path`` (JSON Lines if it ends
    in ``.jsonl``); its size in bytes."""
    doc = orjson.loads(SOURCE_BATCH.read_bytes())
    originals = doc.pop("articles")
    lines = path.suffix == ".jsonl"
    with open(path, "wb") as fh:
        if not lines:
            fh.write(orjson.dumps(doc)[:-1] + (b', "articles": [' if doc else b'{"articles": ['))
        for i in range(n_articles):
            copy, article = divmod(i, len(originals))
            a = orjson.loads(orjson.dumps(originals[article]))
            a["id"] = f"{a.get('id')}-{copy}"
            for name, field in _TEXTS:
                block = a.get(name)
                if isinstance(block, dict) and isinstance(block.get(field), str) and block[field]:
                    block[field] += f" copy{copy}"
            if lines:
                fh.write(orjson.dumps(a) + b"\n")
            else:
                fh.write((b"," if i else b"") + orjson.dumps(a))
        if not lines:
            fh.write(b"]}\n")
    return path.stat().st_size


def prefect_env(home: str | os.PathLike[str]) -> dict[str, str]:
    """The environment of a measured child: a private Prefect home, the embedded API, quiet logs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(
        {
            "PREFECT_HOME": str(home),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_SERVER_UI_ENABLED": "false",
            "PREFECT_LOGGING_LEVEL": "WARNING",
            "DASK_TEMPORARY_DIRECTORY": tempfile.gettempdir(),
        }
    )
    return env


def machine() -> dict[str, Any]:
    """Cores, memory, Python, and whether the core's compiled kernel is in use."""
    with open("/proc/meminfo") as fh:
        total_kib = int(next(line for line in fh if line.startswith("MemTotal:")).split()[1])
    try:
        from selection_core import kernel

        compiled = bool(getattr(kernel, "KERNEL", None))
    except ImportError:
        compiled = False
    try:
        load = os.getloadavg()
    except OSError:
        load = (0.0, 0.0, 0.0)
    return {
        "cores": os.cpu_count(),
        "memory_gib": round(total_kib / 2**20, 1),
        "python": platform.python_version(),
        "compiled_kernel": compiled,
        "load_average_at_start": [round(x, 2) for x in load],
    }


@contextlib.contextmanager
def dask_cluster(scratch: Path, workers: int = 2) -> Iterator[str]:
    """A ``dask scheduler`` and ``workers`` single-thread ``dask worker`` processes on
    127.0.0.1 (as the tests start them); yields the scheduler address."""
    from distributed import Client

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "DASK_TEMPORARY_DIRECTORY": str(scratch)}
    loopback = ["--host", "127.0.0.1", "--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
    commands = [[sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", str(port), *loopback]] + [
        [
            sys.executable,
            "-m",
            "distributed.cli.dask_worker",
            address,
            "--nthreads",
            "1",
            "--no-nanny",
            "--local-directory",
            str(scratch / f"w{i}"),
            *loopback,
        ]
        for i in range(workers)
    ]
    processes = []
    log = open(scratch / "cluster.log", "wb")  # noqa: SIM115
    try:
        for command in commands:
            processes.append(subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT))
        with Client(address, timeout=120) as client:
            client.wait_for_workers(workers, timeout=120)
        yield address
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.close()


@contextlib.contextmanager
def prefect_server(scratch: Path, timeout: float = 120) -> Iterator[str]:
    """A ``prefect server start`` on 127.0.0.1 (a private home, UI and telemetry off, as the
    tests start it), in its own session so that it and its children stop together;
    yields its API URL. Started apart from the measured commands, so that its memory
    is not counted in theirs."""
    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    api_url = f"http://127.0.0.1:{port}/api"
    env = prefect_env(scratch / "server-home")
    command = [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)]
    with open(scratch / "server.log", "wb") as log:
        process = subprocess.Popen(
            command, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"prefect server exited with {process.returncode}; see {scratch / 'server.log'}")
            try:
                if httpx.get(f"{api_url}/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"prefect server did not answer {api_url}/health within {timeout:.0f} s")
            time.sleep(0.5)
        yield api_url
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
