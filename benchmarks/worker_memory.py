#!/usr/bin/env python3
"""Memory of a kept extraction worker (and of its parent) as it extracts pass after pass of real pages.

    python benchmarks/worker_memory.py                          # 6 passes of the 181 pages, recycling as configured
    python benchmarks/worker_memory.py --recycle-after 1000000  # never recycle: does the worker itself grow?
    python benchmarks/worker_memory.py --distinct               # every pass new texts and URLs (caches keyed by them)
    python benchmarks/worker_memory.py --passes 2 --pages 20    # smoke run

Each pass extracts the 181 real pages of ``tests/data/aeb-pages`` (their manifest, so
the URLs are kept) the way an ``extract-chunk`` task run does
(:func:`selection_extraction.page_chunks.extract_chunk`): one worker process, kept for the
next pass (``keep_workers``), its articles handed to an
:class:`~selection_extraction.extracted.ArticleSpool` in a temporary folder (as the flows
do, so the parent holds no article). After each pass it prints the kept worker's
pid, resident set (``VmRSS``) and peak (``VmHWM``), and the parent's resident set
and peak, then the ratios last/first pass. A new pid means the worker was recycled
(``recycle_after`` pages, :data:`selection_extraction.settings.DEFAULT_RECYCLE_AFTER`).
The same page always gives the same article in any worker, so repeating the pages
measures what a worker keeps from one page to the next, but not what a cache keyed by
the input would keep of a new one: with ``--distinct``, pass ``k`` gives every page the
URL ``...?copy=k`` and the word ``the`` of its HTML becomes ``thek``, so that every
paragraph, token and URL is new (the libraries' caches keyed by strings, trafilatura's
``lru_cache`` s, courlan's, htmldate's, ``re``'s, lxml's parser dictionary, see new keys).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _batches import ROOT  # noqa: E402

from selection_extraction.extracted import ArticleSpool  # noqa: E402
from selection_extraction.extraction import extract_each  # noqa: E402
from selection_extraction.pages import find_pages  # noqa: E402
from selection_extraction.pool import stop_kept_workers  # noqa: E402
from selection_extraction.settings import DEFAULT_RECYCLE_AFTER, ExtractionSettings  # noqa: E402

PAGES_DIR = ROOT / "tests/data/aeb-pages"


def status_mib(pid: int | str, field: str) -> float:
    """A ``/proc/PID/status`` memory field (``VmRSS``, ``VmHWM``) in MiB."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def worker_pids() -> list[int]:
    """The extraction workers of this process: the children of its fork server."""
    import psutil

    servers = [p for p in psutil.Process().children() if "forkserver" in " ".join(p.cmdline())]
    return [worker.pid for server in servers for worker in server.children()]


def manifest(folder: Path, pages: int | None) -> Path:
    """The pages' manifest, or one of its first ``pages`` lines in ``folder``."""
    source = PAGES_DIR / "manifest.jsonl"
    if pages is None:
        return source
    lines = source.read_text(encoding="utf-8").splitlines()[:pages]
    records = [json.loads(line) for line in lines]
    for record in records:
        record["path"] = str(PAGES_DIR / record["path"])
    path = folder / "manifest.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def distinct_manifest(folder: Path, source: Path, copy: int) -> Path:
    """The pages of the manifest ``source`` as new pages in ``folder``: URL ``...?copy=N``, ``the`` -> ``theN``."""
    folder.mkdir()
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        page = Path(record["path"])
        page = page if page.is_absolute() else PAGES_DIR / page
        data = gzip.decompress(page.read_bytes()) if page.suffix == ".gz" else page.read_bytes()
        name = page.name.removesuffix(".gz")
        (folder / name).write_bytes(re.sub(rb"\bthe\b", b"the%d" % copy, data))
        record["path"] = name
        if record.get("url"):
            record["url"] += f"?copy={copy}"
        lines.append(json.dumps(record) + "\n")
    path = folder / "manifest.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passes", type=int, default=6, help="passes over the pages (default 6)")
    parser.add_argument("--pages", type=int, default=None, help="only the first N pages (default: all 181)")
    parser.add_argument(
        "--recycle-after",
        type=int,
        default=DEFAULT_RECYCLE_AFTER,
        help=f"pages a worker extracts before it is replaced (default {DEFAULT_RECYCLE_AFTER})",
    )
    parser.add_argument("--distinct", action="store_true", help="new URLs and texts every pass (see above)")
    args = parser.parse_args(argv)
    settings = ExtractionSettings(workers=1, keep_workers=True, recycle_after=args.recycle_after)
    rows = []
    with tempfile.TemporaryDirectory(prefix="worker-memory-") as tmp:
        source = manifest(Path(tmp), args.pages)
        page_set = find_pages(source)
        print(
            f"{len(page_set.entries)} pages per pass, {args.passes} passes, recycle_after={args.recycle_after}"
            f"{', distinct pages every pass' if args.distinct else ''}"
        )
        print("pass  pages  worker_pid  worker_rss_mib  worker_peak_mib  parent_rss_mib  parent_peak_mib")
        for number in range(1, args.passes + 1):
            if args.distinct:
                page_set = find_pages(distinct_manifest(Path(tmp) / f"pass-{number}", source, number))
            with ArticleSpool(Path(tmp) / "batch.json") as spool:
                extract_each(page_set, spool.add, settings)
            gc.collect()
            (pid,) = worker_pids()
            row = {
                "pass": number,
                "pages": number * len(page_set.entries),
                "worker_pid": pid,
                "worker_rss_mib": status_mib(pid, "VmRSS"),
                "worker_peak_mib": status_mib(pid, "VmHWM"),
                "parent_rss_mib": status_mib("self", "VmRSS"),
                "parent_peak_mib": status_mib("self", "VmHWM"),
            }
            rows.append(row)
            print(
                f"{number:4d}  {row['pages']:5d}  {pid:10d}  {row['worker_rss_mib']:14.1f}  "
                f"{row['worker_peak_mib']:15.1f}  {row['parent_rss_mib']:14.1f}  {row['parent_peak_mib']:15.1f}",
                flush=True,
            )
    stop_kept_workers()
    first, last = rows[0], rows[-1]
    for key in ("worker_rss_mib", "worker_peak_mib", "parent_rss_mib", "parent_peak_mib"):
        print(f"{key} last/first pass: {last[key] / first[key]:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
