#!/usr/bin/env python3
"""A crawl on Dask workers that share no disk, over moto's S3 server: throughput, overhead, worker memory; and the
resume pass over a long listing whose WARCs are all done.

    python benchmarks/crawl.py cluster                         # 16 WARCs x 125 real pages (2,000), as in the issue
    python benchmarks/crawl.py cluster --warcs 4 --pages 10    # smoke run
    python benchmarks/crawl.py cluster --part overhead         # the per-page ratio alone
    python benchmarks/crawl.py resume --lines 100000           # the resume pass over a 100,000-line listing
    python benchmarks/crawl.py resume --over https --lines 1000 10000 100000   # the same over HTTPS (nginx)

``cluster`` (root: each worker is a ``dask worker`` in its own mount namespace with a private ``/tmp``, from
``tests/support/cluster.py``, pinned to one core with ``taskset -a``) measures, in one run:

* pages per second of the crawl on 2 workers (cores 0 and 1) against 1 worker (core 0);
* seconds per page on 1 worker against a plain process on core 0 that makes the same calls (``crawl_warc`` on each
  WARC in turn, its extractor process kept) on the same 4 WARCs from the same store, both warm (one WARC done
  first: the imports and the extractor process's start are paid once per worker, not per WARC);
* a fresh worker's peak resident set (``VmHWM``, the worker and its extractor process) after 4 WARCs against after
  16, and after one WARC 4x larger against after one WARC.

The coordinator is ``flows.extract_crawl``'s own dispatch (``dispatch_warcs``) without the Prefect run around it (whose
start is a constant). moto's server answers every ranged GET by reading its whole object: store times are upper
bounds. ``resume`` writes a listing of N WARC files on disk (empty: they are listed, not read), each with an output,
a record and its line in ``crawl.json``, and times ``CrawlJob.plan`` in a child process with its peak memory.
``resume --over https`` does it over HTTPS, from Debian's nginx on 127.0.0.1 (``tests/support/https_server.py``,
trusted through ``SSL_CERT_FILE``): N tiny WARCs in Common Crawl's layout listed in a ``warc.paths.gz``, planned
into an empty output folder ("pending") and into one where all but ten are done ("done but ten", each record naming
the version nginx gives), with the HEADs and GETs nginx served during the plan, as a table and as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _taskset(pid: int, cores: str) -> None:
    subprocess.run(["taskset", "-a", "-p", "-c", cores, str(pid)], check=True, capture_output=True)


def _tree_peak_kib(pid: int) -> int:
    """The sum of ``VmHWM`` of ``pid`` and every process under it."""
    import psutil

    total = 0
    for process in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
        try:
            for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


class _Finish:
    """The run's side of the flow's dispatch, without the Prefect run around it (whose start is a constant)."""

    def __init__(self, job: Any) -> None:
        self.job = job
        self.failures: list[str] = []

    def __call__(self, index: int, outcome: Any) -> None:
        self.job.finish_warc(index, outcome)
        if outcome.state != "done":
            self.failures.append(str(outcome.reason))

    def pages(self, index: int, done: int, estimate: int) -> None:
        pass

    def tick(self) -> None:
        pass

    def check(self) -> None:  # the lease's: none here
        pass


def _crawl(job: Any, address: str) -> float:
    from content_selection.flows.extract_crawl import dispatch_warcs, warc_workers

    finish = _Finish(job)
    started = time.perf_counter()
    with warc_workers(address, None) as workers:
        dispatch_warcs(job, workers, finish, finish)  # type: ignore[arg-type]
    seconds = time.perf_counter() - started
    if finish.failures:
        raise SystemExit(f"the crawl failed: {finish.failures[0]}")
    return seconds


def cluster(args: argparse.Namespace) -> dict[str, Any]:
    import logging

    from selection_crawl.job import CrawlJob
    from selection_crawl.unit import crawl_warc
    from selection_extraction import stop_kept_workers
    from tests.support.cluster import NamespaceCluster, namespace_support
    from tests.support.object_stores import S3Server, environment
    from tests.support.prefect_fixtures import free_port

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's server: a line per request
    reason = namespace_support()
    if reason:
        raise SystemExit(f"cannot start namespaced workers: {reason}")
    sys.path.insert(0, str(ROOT / "scripts"))
    from make_crawl_fixtures import write_crawl

    work = Path(tempfile.mkdtemp(prefix="crawl-bench-"))
    server = S3Server(free_port(), work / "s3")
    server.start()
    os.environ.update(environment(server))
    results: dict[str, Any] = {"warcs": args.warcs, "pages_per_warc": args.pages}
    try:
        bucket = server.new_bucket()

        def upload(folder: Path, prefix: str) -> list[str]:
            for path in sorted(p for p in folder.rglob("*") if p.is_file()):
                server.put(server.url(bucket, f"{prefix}/{path.relative_to(folder).as_posix()}"), path.read_bytes())
            return [line for line in (folder / "listing.txt").read_text().split()]

        def crawl_of(name: str, warcs: int, pages: int, scale: int = 1) -> str:
            folder = work / name
            keys = write_crawl(folder, warcs, pages, scale=scale)
            (folder / "listing.txt").write_text("".join(f"{key}\n" for key in keys))
            upload(folder, name)
            return server.url(bucket, f"{name}/listing.txt")

        main = crawl_of("main", args.warcs, args.pages)
        small = crawl_of("small", 4, args.pages)
        large = crawl_of("large", 1, args.pages, scale=4)
        one = crawl_of("one", 1, args.pages)

        def plan(listing: str, out: str) -> Any:
            base = listing.rsplit("/", 1)[0] + "/"
            return CrawlJob.plan(listing, server.url(bucket, out), base, 60.0)

        def on_cluster(crawls: list[tuple[str, str]], cores: list[str]) -> tuple[list[float], int, int]:
            """The crawls one after the other on fresh workers pinned to ``cores``: the seconds of each, the pages
            of the last, and the largest worker's peak."""
            with NamespaceCluster(log_dir=work / f"logs-{crawls[0][1]}") as namespace:
                workers = namespace.start_workers([f"w{i}" for i in range(len(cores))])
                for worker, core in zip(workers, cores, strict=True):
                    _taskset(worker.pid, core)
                seconds = []
                for listing, out in crawls:
                    job = plan(listing, out)
                    seconds.append(_crawl(job, namespace.address))
                peak = max(_tree_peak_kib(w.pid) for w in workers)
                pages = job.totals()["pages"]
                return seconds, pages, peak

        if args.part == "all":
            (one_s,), pages, peak_16 = on_cluster([(main, "one-worker")], ["0"])
            (two_s,), _, _ = on_cluster([(main, "two-workers")], ["0", "1"])
            results["pages"] = pages
            results["one_worker_pages_per_second"] = pages / one_s
            results["two_workers_pages_per_second"] = pages / two_s
            results["speedup"] = one_s / two_s
            results["peak_kib_16"] = peak_16
            _, _, peak_4 = on_cluster([(small, "small")], ["0"])
            results["peak_kib_4"] = peak_4
            results["peak_16_over_4"] = peak_16 / peak_4
            _, _, peak_one = on_cluster([(one, "one")], ["0"])
            _, large_pages, peak_large = on_cluster([(large, "large")], ["0"])
            results["large_pages"] = large_pages
            results["peak_kib_one_warc"] = peak_one
            results["peak_kib_4x_warc"] = peak_large
            results["peak_4x_over_one"] = peak_large / peak_one

        # Per page, warm: one WARC first (imports, the extractor process), then the 4 WARCs timed; on one worker,
        # and in a plain process on the same core (this one, pinned) making the same calls.
        (_, small_cluster_s), small_pages, _ = on_cluster([(one, "warm-up"), (small, "small-timed")], ["0"])
        os.sched_setaffinity(0, {0})
        for listing, out in ((one, "plain-warm-up"), (small, "plain")):
            job = plan(listing, out)
            started = time.perf_counter()
            for index in job.todo:
                assert crawl_warc(job.warc_job(index)).state == "done"
            plain_s = time.perf_counter() - started
        stop_kept_workers()
        results["small_pages"] = small_pages
        results["plain_seconds_per_page"] = plain_s / small_pages
        results["cluster_seconds_per_page"] = small_cluster_s / small_pages
        results["cluster_over_plain"] = small_cluster_s / plain_s
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return results


def _write_done_crawl(folder: Path, lines: int, fingerprint: str) -> Path:
    """N empty 'WARCs' in folders of 1,000, each with an output, a record and a done line in crawl.json."""
    import orjson

    from selection_storage.files import Version

    inputs, outputs = folder / "in", folder / "out"
    listing = folder / "listing.txt"
    entries = []
    with open(listing, "w") as out_listing:
        for i in range(lines):
            relative = f"segments/{i // 1000:04d}/warc/w-{i:06d}.warc.gz"
            source = inputs / relative
            source.parent.mkdir(parents=True, exist_ok=True)
            source.touch()
            output = outputs / relative.replace(".warc.gz", ".jsonl")
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_bytes(b"{}\n")
            output.with_name(output.name.replace(".jsonl", ".extraction.json")).write_bytes(b"{}\n")
            version = Version.of_file(os.stat(source))
            out_listing.write(relative + "\n")
            entries.append(
                {
                    "warc": str(source),
                    "output": relative.replace(".warc.gz", ".jsonl"),
                    "state": "done",
                    "pages": 1,
                    "articles": 1,
                    "errors": {},
                    "sha256": "0" * 64,
                    "size": 3,
                    "input_version": {"size": version.size, "tag": version.tag},
                    "settings_fingerprint": fingerprint,
                    "seconds": 1.0,
                }  # fmt: skip
            )
    with open(outputs / "crawl.json", "wb") as summary:
        summary.write(b'{"totals":{},\n"warcs": [\n')
        summary.write(b",\n".join(orjson.dumps(e) for e in entries))
        summary.write(b"\n]}\n")
    return listing


#: The child that plans: argv is the listing, the output folder, the base and a profile's path (or ""); it prints
#: the plan's figures as JSON. VmHWM is the peak of its own memory (ru_maxrss would carry the parent's over the exec).
_PLAN_CHILD = """
import json, re, sys, time
from pathlib import Path
from selection_crawl.job import CrawlJob

listing, out, base, profile = sys.argv[1:5]
peak = lambda: int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1))
before = peak()
if profile:
    import cProfile
    profiler = cProfile.Profile()
    profiler.enable()
started = time.perf_counter()
job = CrawlJob.plan(listing, out, base, 60.0)
seconds = time.perf_counter() - started
if profile:
    profiler.disable()
    profiler.dump_stats(profile)
print(json.dumps({"todo": len(job.todo), "done_before": job.done_before, "seconds": seconds,
                  "peak_mib_before_plan": before / 1024, "peak_mib_after_plan": peak() / 1024}))
"""

#: The child that asks the web server for one file's version as the crawl's store tells it (argv: its URL).
_VERSION_CHILD = """
import json, sys
from selection_storage.stores import location, store
version = store(location(sys.argv[1])).listed_version()
print(json.dumps({"size": version.size, "tag": version.tag}))
"""


def _child(code: str, *argv: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter (with ``env`` added to this one's): the JSON of its last line."""
    done = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise SystemExit(f"the child failed ({done.returncode}): {done.stderr.strip()[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _load() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def _resume_on_disk(lines: int, profile: Path | None) -> dict[str, Any]:
    from selection_crawl.unit import expected_fingerprint

    folder = Path(tempfile.mkdtemp(prefix="crawl-resume-"))
    try:
        listing = _write_done_crawl(folder, lines, expected_fingerprint(60.0))
        load = _load()
        measured = _child(
            _PLAN_CHILD,
            str(listing),
            str(folder / "out"),
            str(folder / "in"),
            str(profile / f"disk-{lines}.prof") if profile else "",
        )
        return {
            "lines": lines,
            **measured,
            "listing_mib": listing.stat().st_size / 2**20,
            "crawl_json_mib": (folder / "out" / "crawl.json").stat().st_size / 2**20,
            "load_average_before": load,
            "load_average_after": _load(),
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)


#: The WARCs of a benchmark's crawl left without an output in the case "done but ten".
_NOT_DONE = 10


def _served_crawl(root: Path, crawl: str, lines: int) -> tuple[str, list[str]]:
    """N tiny WARC files under ``root`` in Common Crawl's layout (folders of 1,000, as its segments' ``warc/``
    folders), and their listing ``crawl-data/<crawl>/warc.paths.gz``: the listing's path under ``root``, the keys."""
    import gzip

    keys = []
    for i in range(lines):
        key = f"crawl-data/{crawl}/segments/{i // 1000:04d}/warc/{crawl}-{i:06d}.warc.gz"
        path = root / key
        if i % 1000 == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"WARC/1.0\r\n%d\r\n" % i)  # never read by the plan: listed, then asked for its version
        keys.append(key)
    listing = f"crawl-data/{crawl}/warc.paths.gz"
    with gzip.open(root / listing, "wb") as out:
        out.write("".join(f"{key}\n" for key in keys).encode())
    return listing, keys


def _nginx_version(path: Path) -> dict[str, Any]:
    """A file's version as the crawl's store reads nginx's answer: the size, and its ETag (mtime-size, in hex)."""
    stat = path.stat()
    return {"size": stat.st_size, "tag": f'ETag:"{int(stat.st_mtime):x}-{stat.st_size:x}"'}


def _write_done_outputs(out: Path, root: Path, keys: list[str], base: str, fingerprint: str) -> list[int]:
    """The outputs, records and ``crawl.json`` of a crawl of ``keys`` (served under ``base``) done but for
    :data:`_NOT_DONE` of them, spread over the listing: those (pending in ``crawl.json``, without an output)."""
    import orjson

    from selection_crawl.listing import joined, output_name

    pending = {len(keys) * k // _NOT_DONE + len(keys) // (2 * _NOT_DONE) for k in range(_NOT_DONE)}
    with open(out / "crawl.json", "wb") as summary:
        summary.write(b'{"totals":{},\n"warcs": [\n')
        for i, key in enumerate(keys):
            relative = output_name(key)
            entry: dict[str, Any] = {"warc": joined(base, key), "output": relative, "state": "pending"}
            output = out / relative
            if i % 1000 == 0:
                output.parent.mkdir(parents=True, exist_ok=True)
            if i not in pending:
                output.write_bytes(b"{}\n")
                output.with_name(output.name.replace(".jsonl", ".extraction.json")).write_bytes(b"{}\n")
                entry |= {
                    "state": "done",
                    "pages": 1,
                    "articles": 1,
                    "errors": {},
                    "sha256": "0" * 64,
                    "size": 3,
                    "input_version": _nginx_version(root / key),
                    "settings_fingerprint": fingerprint,
                    "seconds": 1.0,
                }
            summary.write((b",\n" if i else b"") + orjson.dumps(entry))
        summary.write(b"\n]}\n")
    return sorted(pending)


def _resume_over_https(sizes: list[int], profile: Path | None) -> list[dict[str, Any]]:
    """Each size's plan over nginx on loopback (HTTPS, a CA of its own): all pending, and done but ten."""
    from selection_crawl.listing import joined
    from selection_crawl.unit import expected_fingerprint
    from tests.support.https_server import HttpsServer

    fingerprint = expected_fingerprint(60.0)
    work = Path(tempfile.mkdtemp(prefix="crawl-resume-https-"))
    server = HttpsServer(folder=work / "nginx")
    results = []
    try:
        server.start()
        base = server.url("")
        for number, lines in enumerate(sizes, 1):
            crawl = f"CC-MAIN-2099-{number:02d}"
            started = time.perf_counter()
            listing, keys = _served_crawl(server.root, crawl, lines)
            listing_url = server.url(listing)
            # The version the crawl's store reads from nginx (one HEAD), as the records made here say it
            first = _child(_VERSION_CHILD, joined(base, keys[0]), env=server.env)
            if first != _nginx_version(server.root / keys[0]):
                raise SystemExit(
                    f"nginx's version of {keys[0]} is {first}, not {_nginx_version(server.root / keys[0])}"
                )
            for case in ("pending", "done but ten"):
                out = work / "out" / f"{lines}-{case.replace(' ', '-')}"
                out.mkdir(parents=True)
                pending = _write_done_outputs(out, server.root, keys, base, fingerprint) if case != "pending" else []
                setup = time.perf_counter() - started
                logged = len(server.requests(f"crawl-data/{crawl}/"))
                load = _load()
                name = f"https-{lines}-{case.replace(' ', '-')}.prof"
                measured = _child(
                    _PLAN_CHILD, listing_url, str(out), base, str(profile / name) if profile else "", env=server.env
                )
                expected_heads = lines - len(pending) if case != "pending" else 0
                served = server.requests(f"crawl-data/{crawl}/", at_least=logged + expected_heads + 1)[logged:]
                methods: dict[str, int] = {}
                for request in served:
                    methods[request["method"]] = methods.get(request["method"], 0) + 1
                results.append(
                    {
                        "lines": lines,
                        "case": case,
                        **measured,
                        "heads": methods.get("HEAD", 0),
                        "gets": methods.get("GET", 0),
                        "requests": methods,
                        "statuses": sorted({r["status"] for r in served}),
                        "heads_of_done_warcs": len(
                            {r["uri"] for r in served if r["method"] == "HEAD" and r["uri"].endswith(".warc.gz")}
                            - {"/" + keys[i] for i in pending}
                        ),
                        "setup_seconds": setup,
                        "load_average_before": load,
                        "load_average_after": _load(),
                    }
                )
                started = time.perf_counter()
                shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(server.root / "crawl-data" / crawl, ignore_errors=True)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return results


def _loads(result: dict[str, Any]) -> str:
    return f"{result['load_average_before'][0]:.1f} → {result['load_average_after'][0]:.1f}"


def _table(disk: list[dict[str, Any]], https: list[dict[str, Any]]) -> str:
    rows = [
        "| WARCs | over | case | plan (s) | peak MiB (imports → after plan) | HEADs | GETs | todo | done before "
        "| load (1 min, before → after) |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in disk:
        rows.append(
            f"| {r['lines']:,} | disk | all done | {r['seconds']:.1f} | {r['peak_mib_before_plan']:.1f} → "
            f"{r['peak_mib_after_plan']:.1f} | – | – | {r['todo']:,} | {r['done_before']:,} | {_loads(r)} |"
        )
    for r in https:
        rows.append(
            f"| {r['lines']:,} | https | {r['case']} | {r['seconds']:.1f} | {r['peak_mib_before_plan']:.1f} → "
            f"{r['peak_mib_after_plan']:.1f} | {r['heads']:,} | {r['gets']:,} | {r['todo']:,} | {r['done_before']:,} "
            f"| {_loads(r)} |"
        )
    return "\n".join(rows)


def resume(args: argparse.Namespace) -> dict[str, Any]:
    profile = Path(args.profile).resolve() if args.profile else None
    if profile:
        profile.mkdir(parents=True, exist_ok=True)
    if args.over == ["disk"] and len(args.lines) == 1:  # the figures as they always were
        return _resume_on_disk(args.lines[0], profile)
    results: dict[str, Any] = {"load_average_at_start": _load(), "cores": os.cpu_count()}
    results["https"] = _resume_over_https(args.lines, profile) if "https" in args.over else []
    results["disk"] = [_resume_on_disk(lines, profile) for lines in args.lines] if "disk" in args.over else []
    results["load_average_at_end"] = _load()
    print(_table(results["disk"], results["https"]), end="\n\n")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("cluster")
    one.add_argument("--warcs", type=int, default=16)
    one.add_argument("--pages", type=int, default=125, help="pages per WARC")
    one.add_argument("--part", choices=("all", "overhead"), default="all", help="overhead: the per-page ratio alone")
    two = sub.add_parser("resume")
    two.add_argument("--lines", type=int, nargs="+", default=[100_000], help="the listing's sizes")
    two.add_argument(
        "--over",
        nargs="+",
        choices=("disk", "https"),
        default=["disk"],
        help="disk: the WARCs in a folder; https: served by nginx on loopback over TLS (tests/support/https_server.py)",
    )
    two.add_argument("--profile", help="a folder: each plan's cProfile statistics (.prof) in it")
    args = parser.parse_args()
    results = cluster(args) if args.what == "cluster" else resume(args)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
