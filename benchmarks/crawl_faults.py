#!/usr/bin/env python3
"""A crawl on a Dask cluster started as users start one, with the faults of real clusters and stores: what the
faults cost, and whether the outputs are a clean run's.

    python benchmarks/crawl_faults.py --warcs 4 --pages 5000 --kills 5      # root (mount namespaces)
    python benchmarks/crawl_faults.py --warcs 4 --pages 200 --kills 2       # smoke run

A crawl of ``--warcs`` WARCs of ``--pages`` real pages in all (``scripts/make_crawl_fixtures.py``), in moto's S3
server; ``dask scheduler`` and two ``dask worker ADDRESS`` with their defaults (a nanny, as many threads as cores),
each in a mount namespace of its own with a private ``/tmp`` (``tests/support/cluster.py``); every crawl is the
command line as a user runs it.

1. clean: the crawl's seconds;
2. faults: the same crawl through a proxy that answers 2 % of the store's requests ``503 SlowDown`` or cuts them
   (``tests/support/faultproxy.py``), while, at seeded random moments over the clean run's length, a worker process
   is SIGKILLed ``--kills`` times (its nanny starts another) and a nanny once (its machine is replaced): the seconds,
   the seconds each fault cost, net ((faulty - clean) / faults), and whether each output is the clean run's;
3. takeover: a crawl whose coordinator is SIGSTOPped once a WARC has a commit; a second crawl on the prefix with
   ``--wait 300`` waits until the first's lease is stale, takes it over and finishes; then the first is continued:
   its exit status and line, the objects it wrote after the takeover, the uploads left, whether ``crawl.json`` is the
   second's and the outputs are the clean run's.

moto's server reads a whole object for each ranged GET: the store's times are upper bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warcs", type=int, default=4)
    parser.add_argument("--pages", type=int, default=5000, help="HTML pages of the crawl, in all")
    parser.add_argument("--kills", type=int, default=5, help="worker processes killed (and one nanny)")
    parser.add_argument("--fault-rate", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=47)
    args = parser.parse_args()

    import logging

    from tests.support.cluster import NamespaceCluster, namespace_support
    from tests.support.crawls import write_crawl
    from tests.support.faultkit import child_env
    from tests.support.faultproxy import FaultProxy
    from tests.support.object_stores import S3Server, environment
    from tests.support.prefect_fixtures import free_port

    reason = namespace_support()
    if reason is not None:
        raise SystemExit(f"crawl_faults: {reason}")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="crawl-faults-bench-"))
    server = S3Server(free_port(), work / "s3")
    server.start()
    os.environ.update(environment(server))
    results: dict[str, Any] = {"warcs": args.warcs, "pages": args.pages}
    try:
        bucket = server.new_bucket()
        keys = write_crawl(work / "crawl", args.warcs, args.pages // args.warcs)
        for path in sorted(p for p in (work / "crawl").rglob("*") if p.is_file()):
            server.put(server.url(bucket, path.relative_to(work / "crawl").as_posix()), path.read_bytes())
        server.put(server.url(bucket, "listing.txt"), "".join(f"{k}\n" for k in keys).encode())
        listing, base = server.url(bucket, "listing.txt"), server.url(bucket, "")

        with NamespaceCluster(log_dir=work / "cluster") as cluster:
            cluster.start_workers(["w1", "w2"])
            results["worker_threads"] = sum(cluster.client.nthreads().values())

            def crawl(
                name: str, endpoint: str | None = None, extra: tuple[str, ...] = (), log_name: str | None = None
            ) -> subprocess.Popen[bytes]:
                env = {k: v for k, v in child_env().items() if not k.startswith("PREFECT_")} | environment(server)
                env |= {"PREFECT_HOME": str(work / f"home-{name}")}
                command = ["crawl", listing, "--base", base, "-o", server.url(bucket, name)]
                if endpoint:  # the workers' too: a WARC's job carries the storage options
                    env["AWS_ENDPOINT_URL"] = endpoint
                    command += ["--storage-option", f"endpoint_url={endpoint}"]
                command += ["--dask-address", cluster.address, "--time-limit", "60", *extra]
                log = open(work / f"{log_name or name}.log", "ab")  # noqa: SIM115 - the child's
                return subprocess.Popen([sys.executable, "-m", "selection_cli.main", *command], env=env, cwd=work,
                                        stdout=log, stderr=log, start_new_session=True)  # fmt: skip

            def finish(run: subprocess.Popen[bytes], name: str, started: float) -> float:  # name: the log's
                code = run.wait(timeout=7200)
                if code != 0:
                    log = (work / f"{name}.log").read_text(errors="replace")[-3000:]
                    raise SystemExit(f"the {name} crawl failed ({code}): {log}")
                return time.monotonic() - started

            fs = server.fs()

            def outputs(name: str) -> dict[str, bytes]:
                found = fs.find(f"{bucket}/{name}")
                return {k.split("/", 2)[2]: fs.cat_file(k) for k in found if k.endswith(".jsonl")}

            # 1. clean
            started = time.monotonic()
            clean_seconds = finish(crawl("clean"), "clean", started)
            results["clean_seconds"] = round(clean_seconds, 1)
            clean = outputs("clean")

            # 2. faults: 503s and cuts through the proxy; worker processes and a nanny killed
            with FaultProxy(server.endpoint, rate=args.fault_rate, seed=args.seed) as proxy:
                draw = random.Random(args.seed)
                moments = sorted(draw.uniform(0.1, 0.8) * clean_seconds for _ in range(args.kills + 1))
                kinds = ["worker process"] * args.kills + ["nanny"]
                draw.shuffle(kinds)
                done: list[tuple[float, str]] = []
                started = time.monotonic()
                run = crawl("faults", proxy.endpoint)

                def killer() -> None:
                    for moment, kind in zip(moments, kinds, strict=True):
                        time.sleep(max(0.0, started + moment - time.monotonic()))
                        if run.poll() is not None:
                            return
                        alive = [w for w in cluster.workers if w.alive]
                        victim = draw.choice(alive)
                        try:
                            if kind == "nanny":
                                victim.kill_nanny()
                                cluster.start_worker(f"w{len(cluster.workers) + 1}")
                            else:
                                victim.kill_process()
                        except (ValueError, RuntimeError):  # between two worker processes: the next moment
                            continue
                        done.append((round(time.monotonic() - started, 1), kind))

                thread = threading.Thread(target=killer, daemon=True)
                thread.start()
                faults_seconds = finish(run, "faults", started)
                thread.join()
            summary = json.loads(fs.cat_file(f"{bucket}/faults/crawl.json"))
            faults = len(done)
            results |= {
                "faults_seconds": round(faults_seconds, 1),
                "faults_over_clean": round(faults_seconds / clean_seconds, 3),
                "kills": done,
                "store_requests": proxy.counts,
                "seconds_lost_per_kill_net": round((faults_seconds - clean_seconds) / max(faults, 1), 1),
                "warcs_resent": summary["totals"]["retried"],
                "outputs_equal_clean": outputs("faults") == clean,
                "uploads_left": len(server.uploads(bucket)),
            }
            print(json.dumps(results), file=sys.stderr, flush=True)

            # 3. takeover: the first crawl's coordinator stopped; the second waits for its lease to go stale
            first = crawl("takeover", log_name="takeover-first")
            while not any(k.endswith(".commit") for k in fs.find(f"{bucket}/takeover")):
                if first.poll() is not None:
                    raise SystemExit(f"the first crawl ended before a commit: {first.returncode}")
                time.sleep(0.5)
            os.killpg(first.pid, signal.SIGSTOP)
            stopped = time.monotonic()
            started = time.monotonic()
            second = crawl("takeover", extra=("--wait", "300"), log_name="takeover-second")
            finish(second, "takeover-second", started)
            taken_at = time.time()
            results["takeover_waited_and_done_seconds"] = round(time.monotonic() - stopped, 1)
            before = {k: e["LastModified"].timestamp() for k, e in fs.find(f"{bucket}/takeover", detail=True).items()}
            os.killpg(first.pid, signal.SIGCONT)
            first_code = first.wait(timeout=600)
            fs.invalidate_cache()
            after = fs.find(f"{bucket}/takeover", detail=True)
            written_after = sorted(k for k, e in after.items() if before.get(k) != e["LastModified"].timestamp())
            line = [t for t in (work / "takeover-first.log").read_text().splitlines() if "lease" in t][-1:]
            results["takeover_second_waited_lines"] = sum(
                "waiting up to" in t for t in (work / "takeover-second.log").read_text().splitlines()
            )
            summary = json.loads(fs.cat_file(f"{bucket}/takeover/crawl.json"))
            results |= {
                "takeover_first_exit_status": first_code,
                "takeover_first_line": line[0] if line else None,
                "takeover_objects_the_first_wrote_after": written_after,
                "takeover_outputs_equal_clean": outputs("takeover") == clean,
                "takeover_crawl_json_is_the_seconds": summary["totals"]["done"] == len(keys),
                "takeover_uploads_left": len(server.uploads(bucket)),
                "takeover_continued_after_seconds": round(time.time() - taken_at, 1),
            }
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
