#!/usr/bin/env python3
"""A WARC's pages extracted on a Dask cluster started as users start one, a worker process killed in the middle.

    python benchmarks/extract_cluster.py --pages 5000 --kill-after 60     # about 8 minutes on 2 cores
    python benchmarks/extract_cluster.py --pages 200 --kill-after 10      # smoke run

One WARC of ``--pages`` real pages (``scripts/make_crawl_fixtures.write_crawl``). First ``content-selection extract
WARC --workers 2``, alone; then ``dask scheduler`` and two ``dask worker ADDRESS`` with their defaults (a nanny,
one thread per core) on 127.0.0.1, and ``content-selection pipeline WARC`` with ``CONTENT_SELECTION_DASK_ADDRESS``
set: the WARC is read once by the command and its pages travel to the workers in their chunks. ``--kill-after``
seconds into the pipeline, the first worker's process is SIGKILLed (its nanny starts another; Dask runs its chunks
again). The extracted batch must be the bytes of ``extract`` alone. One run each; nothing is asserted about time.
Writes benchmarks/out/extract_cluster.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _batches import OUT, ROOT, machine, prefect_env  # noqa: E402

MAIN = "import sys; from selection_cli.main import main; sys.exit(main())"


def command(args: list[str], env: dict[str, str]) -> float:
    """Run ``content-selection ARGS``; its seconds (it must succeed)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MAIN, *args], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=5000, help="pages of the WARC")
    parser.add_argument("--kill-after", type=float, default=60.0, help="seconds into the pipeline of the kill")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "scripts"))
    from distributed import Client
    from make_crawl_fixtures import write_crawl

    results: dict[str, Any] = {"machine": machine(), "pages": args.pages}
    with tempfile.TemporaryDirectory(prefix="extract-cluster-") as tmp:
        work = Path(tmp)
        write_crawl(work / "crawl", 1, args.pages)
        (warc,) = (work / "crawl").rglob("*.warc.gz")
        env = prefect_env(work / "prefect")
        results["alone_seconds"] = round(command(["extract", str(warc), "-o", str(work / "alone.json"),
                                                  "--workers", "2"], env), 1)  # fmt: skip
        print(f"extract alone, 2 workers: {results['alone_seconds']} s", flush=True)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        address = f"tcp://127.0.0.1:{port}"
        python = [sys.executable, "-m"]
        loopback = ["--host", "127.0.0.1", "--no-dashboard"]
        log = open(work / "cluster.log", "wb")  # noqa: SIM115 - closed below
        cluster = [subprocess.Popen([*python, "distributed.cli.dask_scheduler", "--port", str(port), *loopback],
                                    stdout=log, stderr=subprocess.STDOUT, cwd=work)]  # fmt: skip
        cluster += [subprocess.Popen([*python, "distributed.cli.dask_worker", address, *loopback],
                                     stdout=log, stderr=subprocess.STDOUT, cwd=work) for _ in range(2)]  # fmt: skip
        killed: list[int] = []
        try:
            with Client(address, timeout=120) as client:
                client.wait_for_workers(2, timeout=120)
                results["threads"] = sorted(client.nthreads().values())

            def kill() -> None:
                time.sleep(args.kill_after)
                children = psutil.Process(cluster[1].pid).children()
                (process,) = [c for c in children if "spawn_main" in " ".join(c.cmdline())]  # the worker process
                os.kill(process.pid, signal.SIGKILL)
                killed.append(process.pid)

            threading.Thread(target=kill, daemon=True).start()
            pipeline = ["pipeline", str(warc), "--extracted", str(work / "x.json"), "-o", str(work / "sel.json")]
            seconds = command(pipeline, {**env, "CONTENT_SELECTION_DASK_ADDRESS": address})
        finally:
            for process in reversed(cluster):
                process.terminate()
            for process in cluster:
                process.wait(timeout=60)
            log.close()
        results["pipeline_seconds"] = round(seconds, 1)
        results["killed"] = len(killed)
        results["same_batch"] = (work / "x.json").read_bytes() == (work / "alone.json").read_bytes()
    print(f"pipeline on the cluster ({results['threads']} threads), a worker process killed at "
          f"{args.kill_after:.0f} s: {results['pipeline_seconds']} s; killed {results['killed']}; "
          f"extracted batch the same as extract alone: {results['same_batch']}")  # fmt: skip
    OUT.mkdir(exist_ok=True)
    (OUT / "extract_cluster.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
