#!/usr/bin/env python3
"""WARC input: reading throughput of fastwarc against warcio, and ``content-selection pipeline`` on a WARC.

    python benchmarks/warc.py                                            # WARCs of 50 and 200 MB, all parts
    python benchmarks/warc.py --pipeline-sizes 50                        # the pipeline on the 50 MB file only
    python benchmarks/warc.py --sizes 5 --pipeline-sizes 5 --rounds 1    # smoke run

Everything is measured in one run, on WARCs built for it in a temporary folder
(deleted at the end):

1. **The WARCs** (``--sizes``, in MB of 10**6 bytes): written with warcio's
   ``WARCWriter(fh, gzip=True)`` (one gzip member per record, as crawlers write
   them): a ``warcinfo`` record, then for each page a ``request`` and a
   ``response`` record (``HTTP/1.1 200 OK``, ``Content-Type: text/html;
   charset=utf-8``, the page's bytes). The pages are the 181 real pages of
   ``tests/data/aeb-pages`` (gunzipped), repeated until the file reaches its
   size; copy ``k`` of a page has the target URI ``<url>?copy=k`` (``&copy=k``
   after a query). The WARC-Date is fixed and the WARC-Record-IDs are UUIDs
   derived from the record type and URI, so a file is the same in every run
   (its SHA-256 is printed).
2. **Reading alone**, on the largest file (read from the page cache: it was just
   written): fastwarc (``fastwarc.warc.ArchiveIterator(fh, parse_http=True)``,
   every response's payload read with ``record.reader.read()``) against warcio
   (``warcio.archiveiterator.ArchiveIterator(fh)``,
   ``record.content_stream().read()`` for responses), both given the same Python
   file object, plus fastwarc given the path with its own file reader
   (``fsspec_args=False``), for information. The runs are interleaved (the order
   alternating between rounds); the fastest of ``--rounds`` is kept: records per
   second, MB per second of the file and of the payloads, and warcio's time over
   fastwarc's. Both must count the same records, responses and payload bytes.
3. **The pipeline** (``--pipeline-sizes``, ``--workers-list``): ``content-selection
   pipeline WARC --extracted X -o Y --workers N`` (the console script, a fresh
   process each, one run each), timed from process start to exit: pages per
   second (pages: the articles of the extracted batch, which must be the pages of
   the WARC) for the whole command and for its extract part (until the extracted
   batch appears: it is written atomically once extraction ends; to within the
   sampling interval). Peak memory of the whole process tree (the command, its fork
   server, its workers and any other descendant), sampled every
   ``--sample-seconds`` from ``/proc``: the largest sum of RSS over the tree (the
   pages the processes share, such as the libraries the fork server preloaded,
   counted in each), the largest sum of PSS (shared pages divided among their
   processes), each split into the extract and the select part; the largest peak
   RSS of a single process of the tree (its ``VmHWM``, as last sampled); and the
   kernel's peak RSS of the command (``wait4``'s ``ru_maxrss`` via
   ``memory_large_fields.peak_rss``: the command and the descendants it reaped
   itself, which leaves out the workers, children of the fork server). The
   articles of the batches written with 1 and 2 workers are compared.

Nothing is asserted about time. Writes benchmarks/out/warc.json.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _batches import OUT, ROOT, machine, prefect_env  # noqa: E402
from extraction_speed import _console_script  # noqa: E402
from memory_large_fields import peak_rss  # noqa: E402

PAGES_DIR = ROOT / "tests/data/aeb-pages"
MB = 1_000_000
MIB = 2**20
#: The WARC-Date of every record: the files are the same in every run.
WARC_DATE = "2024-01-01T00:00:00Z"


# --------------------------------------------------------------------------- 1. the WARCs


def load_pages() -> list[tuple[str, bytes]]:
    """(url, gunzipped bytes) of the real pages, in manifest order."""
    manifest = PAGES_DIR / "manifest.jsonl"
    pages = []
    for line in manifest.read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            with gzip.open(PAGES_DIR / entry["path"], "rb") as fh:
                pages.append((entry["url"], fh.read()))
    return pages


def _record_id(kind: str, uri: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'{kind} {uri}')}>"


def _copy_uri(url: str, copy: int) -> str:
    parts = urlsplit(url)
    query = f"{parts.query}&copy={copy}" if parts.query else f"copy={copy}"
    return urlunsplit(parts._replace(query=query))


def build_warc(path: Path, target_bytes: int, pages: list[tuple[str, bytes]]) -> dict[str, Any]:
    """Write the WARC of ``pages`` repeated until ``path`` has ``target_bytes``; what it holds."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    t0 = time.perf_counter()
    records = written = payload = 0
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        info = b"software: content-selection benchmarks/warc.py\r\nformat: WARC File Format 1.0\r\n"
        writer.write_record(
            writer.create_warc_record(
                "",
                "warcinfo",
                payload=io.BytesIO(info),
                length=len(info),
                warc_content_type="application/warc-fields",
                warc_headers_dict={
                    "WARC-Record-ID": _record_id("warcinfo", path.name),
                    "WARC-Date": WARC_DATE,
                    "WARC-Filename": path.name,
                },
            )
        )
        records += 1
        copy = 0
        while not written or fh.tell() < target_bytes:
            for url, html in pages:
                uri = _copy_uri(url, copy)
                parts = urlsplit(uri)
                response_id = _record_id("response", uri)
                request = StatusAndHeaders(
                    f"GET {parts.path or '/'}?{parts.query} HTTP/1.1",
                    [("Host", parts.netloc), ("User-Agent", "content-selection-benchmark")],
                    is_http_request=True,
                )
                writer.write_record(
                    writer.create_warc_record(
                        uri,
                        "request",
                        http_headers=request,
                        warc_headers_dict={
                            "WARC-Record-ID": _record_id("request", uri),
                            "WARC-Date": WARC_DATE,
                            "WARC-Concurrent-To": response_id,
                        },
                    )
                )
                headers = StatusAndHeaders(
                    "200 OK",
                    [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(html)))],
                    protocol="HTTP/1.1",
                )
                writer.write_record(
                    writer.create_warc_record(
                        uri,
                        "response",
                        payload=io.BytesIO(html),
                        length=len(html),
                        http_headers=headers,
                        warc_headers_dict={"WARC-Record-ID": response_id, "WARC-Date": WARC_DATE},
                    )
                )
                records += 2
                written += 1
                payload += len(html)
                if fh.tell() >= target_bytes:
                    break
            copy += 1
    seconds = time.perf_counter() - t0
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(MIB):
            digest.update(block)
    return {
        "target_mb": target_bytes / MB,
        "bytes": path.stat().st_size,
        "records": records,
        "pages": written,
        "copies": -(-written // len(pages)),
        "payload_bytes": payload,
        "sha256": digest.hexdigest(),
        "build_seconds": seconds,
    }


# --------------------------------------------------------------------------- 2. reading alone


def read_fastwarc(path: Path, own_reader: bool = False) -> tuple[int, int, int]:
    """(records, responses, payload bytes) of a full pass with fastwarc."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    response = WarcRecordType.response
    records = responses = payload = 0
    if own_reader:
        iterator = ArchiveIterator(str(path), parse_http=True, fsspec_args=False)
        for record in iterator:
            records += 1
            if record.record_type == response:
                responses += 1
                payload += len(record.reader.read())
        return records, responses, payload
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh, parse_http=True):
            records += 1
            if record.record_type == response:
                responses += 1
                payload += len(record.reader.read())
    return records, responses, payload


def read_warcio(path: Path) -> tuple[int, int, int]:
    """(records, responses, payload bytes) of a full pass with warcio."""
    from warcio.archiveiterator import ArchiveIterator

    records = responses = payload = 0
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh):
            records += 1
            if record.rec_type == "response":
                responses += 1
                payload += len(record.content_stream().read())
    return records, responses, payload


READERS = (
    ("fastwarc", lambda p: read_fastwarc(p)),
    ("warcio", read_warcio),
    ("fastwarc (path, own reader)", lambda p: read_fastwarc(p, own_reader=True)),
)


def reading(path: Path, rounds: int) -> dict[str, Any]:
    size = path.stat().st_size
    runs: dict[str, list[float]] = {name: [] for name, _ in READERS}
    counts: dict[str, set[tuple[int, int, int]]] = {name: set() for name, _ in READERS}
    for r in range(rounds):
        order = READERS if r % 2 == 0 else READERS[1::-1] + READERS[2:]
        for name, read in order:
            t0 = time.perf_counter()
            counts[name].add(read(path))
            runs[name].append(time.perf_counter() - t0)
            print(f"  round {r + 1} {name:<28} {runs[name][-1]:7.2f} s", flush=True)
    out: dict[str, Any] = {"file_bytes": size, "rounds": rounds, "readers": {}}
    for name, _ in READERS:
        best = min(runs[name])
        (records, responses, payload), *more = sorted(counts[name])
        out["readers"][name] = {
            "seconds": best,
            "all_seconds": runs[name],
            "records": records,
            "responses": responses,
            "payload_bytes": payload,
            "same_counts_every_round": not more,
            "records_per_second": records / best,
            "file_mb_per_second": size / MB / best,
            "payload_mb_per_second": payload / MB / best,
        }
    every = {c for name in counts for c in counts[name]}
    out["same_counts"] = len(every) == 1
    out["warcio_over_fastwarc"] = out["readers"]["warcio"]["seconds"] / out["readers"]["fastwarc"]["seconds"]
    return out


# --------------------------------------------------------------------------- 3. the pipeline


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, of every process visible in /proc."""
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _kib(path: str, key: bytes) -> int | None:
    try:
        with open(path, "rb") as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class TreeMemory(threading.Thread):
    """Every ``interval`` seconds, the RSS and PSS of every descendant of this process, summed.

    The peaks are kept apart before and after ``marker`` exists (the extracted
    batch, written atomically when extraction ends).
    """

    def __init__(self, marker: Path, interval: float) -> None:
        super().__init__(daemon=True)
        self.marker, self.interval = marker, interval
        self.stopping = threading.Event()
        self.peak_rss_kib = {"extract": 0, "select": 0}
        self.peak_pss_kib = {"extract": 0, "select": 0}
        self.largest_hwm_kib = 0
        self.most_processes = 0
        self.samples = 0
        self.marker_seconds: float | None = None

    def run(self) -> None:
        t0 = time.monotonic()
        me = os.getpid()
        while not self.stopping.is_set():
            tree = _children()
            todo, pids = list(tree.get(me, ())), []
            while todo:
                pid = todo.pop()
                pids.append(pid)
                todo.extend(tree.get(pid, ()))
            rss = pss = alive = 0
            for pid in pids:
                vm = _kib(f"/proc/{pid}/status", b"VmRSS:")
                if vm is None:  # gone, or a zombie
                    continue
                alive += 1
                rss += vm
                pss += _kib(f"/proc/{pid}/smaps_rollup", b"Pss:") or 0
                self.largest_hwm_kib = max(self.largest_hwm_kib, _kib(f"/proc/{pid}/status", b"VmHWM:") or 0)
            if self.marker_seconds is None and self.marker.exists():
                self.marker_seconds = time.monotonic() - t0
            phase = "extract" if self.marker_seconds is None else "select"
            self.peak_rss_kib[phase] = max(self.peak_rss_kib[phase], rss)
            self.peak_pss_kib[phase] = max(self.peak_pss_kib[phase], pss)
            self.most_processes = max(self.most_processes, alive)
            self.samples += 1
            self.stopping.wait(self.interval)


def pipeline_run(warc: Path, workers: int, tmp: Path, interval: float) -> dict[str, Any]:
    extracted, selected = tmp / "pipeline_extracted.json", tmp / "pipeline_selected.json"
    command = [
        *_console_script(),
        "pipeline",
        str(warc),
        "--extracted",
        str(extracted),
        "-o",
        str(selected),
        "--workers",
        str(workers),
    ]
    sampler = TreeMemory(extracted, interval)
    sampler.start()
    try:
        peak_bytes, seconds, status = peak_rss(command)
    finally:
        sampler.stopping.set()
        sampler.join()
    if status != 0:
        raise SystemExit(f"content-selection pipeline {warc.name} --workers {workers} failed with status {status}")
    articles = orjson.loads(extracted.read_bytes())["articles"]
    articles_sha256 = hashlib.sha256(orjson.dumps(articles)).hexdigest()
    pages = len(articles)
    del articles
    selected_articles = len(orjson.loads(selected.read_bytes())["articles"])
    out = {
        "workers": workers,
        "seconds": seconds,
        "pages": pages,
        "selected_articles": selected_articles,
        "pages_per_second": pages / seconds,
        "extract_seconds": sampler.marker_seconds,
        "extract_pages_per_second": pages / sampler.marker_seconds if sampler.marker_seconds else None,
        "extracted_bytes": extracted.stat().st_size,
        "articles_sha256": articles_sha256,
        "tree_peak_rss_mib": max(sampler.peak_rss_kib.values()) / 1024,
        "tree_peak_rss_mib_by_part": {k: v / 1024 for k, v in sampler.peak_rss_kib.items()},
        "tree_peak_pss_mib": max(sampler.peak_pss_kib.values()) / 1024,
        "tree_peak_pss_mib_by_part": {k: v / 1024 for k, v in sampler.peak_pss_kib.items()},
        "largest_process_peak_rss_mib": sampler.largest_hwm_kib / 1024,
        "command_peak_rss_mib": peak_bytes / MIB,
        "most_processes": sampler.most_processes,
        "samples": sampler.samples,
    }
    extracted.unlink()
    selected.unlink()
    return out


# --------------------------------------------------------------------------- main


def _sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()] if text.strip() else []


def print_reading(rd: dict[str, Any]) -> None:
    header = f"{'reader':<28} {'seconds':>8} {'records':>8} {'records/s':>10} {'file MB/s':>10} {'payload MB/s':>13}"
    print(f"  {header}")
    for name, r in rd["readers"].items():
        print(
            f"  {name:<28} {r['seconds']:8.2f} {r['records']:8d} {r['records_per_second']:10.0f} "
            f"{r['file_mb_per_second']:10.1f} {r['payload_mb_per_second']:13.1f}"
        )
    for name, r in rd["readers"].items():
        counts = f"records {r['records']}, responses {r['responses']}, payload bytes {r['payload_bytes']}"
        print(f"  {name:<28} {counts}")
    print(f"  same records, responses and payload bytes: {rd['same_counts']}")
    print(f"  warcio time / fastwarc time: x{rd['warcio_over_fastwarc']:.2f}", flush=True)


def print_pipeline(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The table of the pipeline runs, then the checks and ratios (returned)."""
    print(
        f"  {'file':>6} {'workers':>7} {'pages':>6} {'seconds':>8} {'pages/s':>8} {'extract s':>9} "
        f"{'extract p/s':>11} | {'tree RSS MiB':>12} {'(extract':>8} {'select)':>8} | "
        f"{'tree PSS MiB':>12} {'(extract':>8} {'select)':>8} | {'largest proc':>12} {'command':>7} {'procs':>5}"
    )
    nan = float("nan")
    for run in runs:
        rss, pss = run["tree_peak_rss_mib_by_part"], run["tree_peak_pss_mib_by_part"]
        print(
            f"  {run['size_mb']:3d} MB {run['workers']:7d} {run['pages']:6d} {run['seconds']:8.1f} "
            f"{run['pages_per_second']:8.1f} {run['extract_seconds'] or nan:9.1f} "
            f"{run['extract_pages_per_second'] or nan:11.1f} | {run['tree_peak_rss_mib']:12.0f} "
            f"{rss['extract']:8.0f} {rss['select']:8.0f} | {run['tree_peak_pss_mib']:12.0f} "
            f"{pss['extract']:8.0f} {pss['select']:8.0f} | {run['largest_process_peak_rss_mib']:12.0f} "
            f"{run['command_peak_rss_mib']:7.0f} {run['most_processes']:5d}"
        )
    checks: dict[str, Any] = {}
    sizes = sorted({r["size_mb"] for r in runs})
    for size in sizes:
        same_size = [r for r in runs if r["size_mb"] == size]
        all_pages = all(r["pages"] == r["warc_pages"] == r["selected_articles"] for r in same_size)
        check = checks[str(size)] = {"pages_equal_warc_pages": all_pages}
        line = f"  {size} MB: pages = WARC pages = selected articles: {all_pages}"
        if len(same_size) > 1:
            same = check["identical_articles_across_workers"] = len({r["articles_sha256"] for r in same_size}) == 1
            line += f"; articles identical across worker counts: {same}"
        by_workers = {r["workers"]: r for r in same_size}
        if 1 in by_workers and 2 in by_workers:
            check["pages_per_second_2_over_1"] = by_workers[2]["pages_per_second"] / by_workers[1]["pages_per_second"]
            line += f"; pages/s with 2 workers / with 1: x{check['pages_per_second_2_over_1']:.2f}"
        print(line)
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]

        def part(run: dict[str, Any]) -> float:
            return run["tree_peak_rss_mib_by_part"]["extract"]

        for workers in sorted({r["workers"] for r in runs}):
            a = next((r for r in runs if r["size_mb"] == small and r["workers"] == workers), None)
            b = next((r for r in runs if r["size_mb"] == large and r["workers"] == workers), None)
            if a is None or b is None:
                continue
            ratios = {
                "pages": b["pages"] / a["pages"],
                "tree_rss": b["tree_peak_rss_mib"] / a["tree_peak_rss_mib"],
                "tree_rss_extract": part(b) / part(a),
                "tree_pss": b["tree_peak_pss_mib"] / a["tree_peak_pss_mib"],
                "largest_process": b["largest_process_peak_rss_mib"] / a["largest_process_peak_rss_mib"],
            }
            checks[f"{large}_over_{small}_mb_{workers}_workers"] = ratios
            print(
                f"  {workers} worker(s), {large} MB over {small} MB: pages x{ratios['pages']:.2f}, "
                f"tree RSS x{ratios['tree_rss']:.2f} (extract part x{ratios['tree_rss_extract']:.2f}), "
                f"tree PSS x{ratios['tree_pss']:.2f}, largest process x{ratios['largest_process']:.2f}"
            )
    return checks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=_sizes, default=[50, 200], help="WARC sizes in MB (default: 50,200)")
    ap.add_argument("--rounds", type=int, default=3, help="reading passes of each library (fastest kept)")
    ap.add_argument(
        "--pipeline-sizes", type=_sizes, default=[50, 200], help="sizes to run the pipeline on ('' for none)"
    )
    ap.add_argument("--workers-list", type=_sizes, default=[1, 2], help="worker counts of the pipeline runs")
    ap.add_argument("--sample-seconds", type=float, default=0.1, help="memory sampling interval")
    ap.add_argument("--json", type=Path, default=OUT / "warc.json")
    args = ap.parse_args(argv)
    missing = sorted(set(args.pipeline_sizes) - set(args.sizes))
    if missing:
        ap.error(f"--pipeline-sizes {missing} not among --sizes {args.sizes}")
    started = time.monotonic()
    result: dict[str, Any] = {"machine": machine(), "arguments": {k: str(v) for k, v in vars(args).items()}}
    print(f"machine: {result['machine']}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="cs-warc-"))
    try:
        for key in [k for k in os.environ if k.startswith("PREFECT_")]:
            del os.environ[key]
        os.environ.update(prefect_env(tmp / "prefect-home"))  # the children's environment (peak_rss takes none)
        pages = load_pages()
        print(f"1. WARCs from the {len(pages)} pages of {PAGES_DIR.relative_to(ROOT)}:", flush=True)
        files: dict[int, Path] = {}
        result["warcs"] = {}
        for size in sorted(set(args.sizes)):
            files[size] = tmp / f"pages-{size}mb.warc.gz"
            info = result["warcs"][str(size)] = build_warc(files[size], size * MB, pages)
            print(
                f"  {files[size].name:<20} {info['bytes'] / MB:7.1f} MB  {info['records']:6d} records  "
                f"{info['pages']:5d} pages  payloads {info['payload_bytes'] / MB:7.1f} MB  "
                f"built in {info['build_seconds']:5.1f} s  sha256 {info['sha256'][:16]}",
                flush=True,
            )

        largest = max(files)
        print(f"2. reading {files[largest].name}, fastest of {args.rounds}:", flush=True)
        result["reading"] = reading(files[largest], args.rounds)
        print_reading(result["reading"])

        result["pipeline"] = []
        if args.pipeline_sizes:
            print("3. content-selection pipeline WARC (a fresh process each, one run each):", flush=True)
        for size in args.pipeline_sizes:
            for workers in args.workers_list:
                run = pipeline_run(files[size], workers, tmp, args.sample_seconds)
                run["size_mb"] = size
                run["warc_pages"] = result["warcs"][str(size)]["pages"]
                result["pipeline"].append(run)
                print(
                    f"  {size} MB, {workers} worker(s): {run['pages']} pages in {run['seconds']:.1f} s, "
                    f"tree RSS peak {run['tree_peak_rss_mib']:.0f} MiB",
                    flush=True,
                )
        if result["pipeline"]:
            result["pipeline_checks"] = print_pipeline(result["pipeline"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result["seconds"] = time.monotonic() - started
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    print(
        f"run time {result['seconds']:.0f} s; load average at start {result['machine']['load_average_at_start']}, "
        f"at end {result['load_average_at_end']}"
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
