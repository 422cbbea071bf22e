"""Batches and environments shared by the scale, parallel and overhead benchmarks.

``build_distinct`` writes a batch of any size from the 181 real articles of
``tests/data/aeb_batch_extracted.json`` (built from the ScrapingHub AEB
extractor outputs): copy ``k`` of an article gets the id ``<id>-<k>`` and the
token ``copy<k>`` appended to each of its non-empty texts, so no two articles of
a batch have the same texts and nothing can be served from a cache. The batch
is written article by article (compact JSON), never held whole in memory.
"""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
SOURCE_BATCH = ROOT / "tests/data/aeb_batch_extracted.json"
OUT = ROOT / "benchmarks/out"
_TEXTS = (("trafilatura", "text"), ("newspaper4k", "text"), ("readability", "cleaned_text"))


def build_distinct(path: Path, n_articles: int) -> int:
    """Write a batch of ``n_articles`` distinct articles to ``path``; its size in bytes."""
    doc = orjson.loads(SOURCE_BATCH.read_bytes())
    originals = doc.pop("articles")
    with open(path, "wb") as fh:
        fh.write(orjson.dumps(doc)[:-1] + (b', "articles": [' if doc else b'{"articles": ['))
        for i in range(n_articles):
            copy, article = divmod(i, len(originals))
            a = orjson.loads(orjson.dumps(originals[article]))
            a["id"] = f"{a.get('id')}-{copy}"
            for name, field in _TEXTS:
                block = a.get(name)
                if isinstance(block, dict) and isinstance(block.get(field), str) and block[field]:
                    block[field] += f" copy{copy}"
            fh.write((b"," if i else b"") + orjson.dumps(a))
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
