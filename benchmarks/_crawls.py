"""A WARC of real pages on this disk, and ``content-selection crawl`` over it as a user runs it, pinned to a core:
what the crawl benchmarks share."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path


def one_warc(work: Path, pages: int) -> tuple[Path, Path]:
    """One WARC of ``pages`` real pages under ``work / "crawl"`` (``scripts/make_crawl_fixtures.py``), and a listing
    of it: the WARC's path and the listing's."""
    from tests.support.crawls import write_crawl

    (key,) = write_crawl(work / "crawl", 1, pages)
    listing = work / "listing.txt"
    listing.write_text(f"{key}\n")
    return work / "crawl" / key, listing


def start_crawl(
    python: str, listing: Path, out: Path, core: str, log: Path, *extra: str
) -> tuple[subprocess.Popen[bytes], float]:
    """``crawl LISTING --base <its folder>/crawl -o OUT --workers 1 --time-limit 60 EXTRA`` with ``python``, on
    ``core`` (``taskset``), its output in ``log``, from ``log``'s folder (not the repository: each interpreter imports
    its own code); the process and when it started."""
    command = ["taskset", "-c", core, python, "-m", "selection_cli.main", "crawl", str(listing)]
    command += ["--base", str(listing.parent / "crawl"), "-o", str(out), "--workers", "1", "--time-limit", "60"]
    log.parent.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [*command, *extra], stdin=subprocess.DEVNULL, stdout=log.open("wb"), stderr=subprocess.STDOUT, cwd=log.parent
    )
    return process, time.monotonic()
