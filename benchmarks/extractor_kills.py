#!/usr/bin/env python3
"""Extractor processes killed from outside while a WARC is crawled, as the kernel's OOM killer kills the biggest
process: the dataset against a clean run's, byte for byte.

    python benchmarks/extractor_kills.py --pages 1200 --kills 3

One WARC of ``--pages`` real pages (``scripts/make_crawl_fixtures.py``) on this disk, crawled twice at once as a
user runs it (``content-selection crawl LISTING --base FOLDER -o OUT --workers 1``), each run pinned to its own core:
a clean run, and one whose extractor processes (the children of a WARC's fork server) are SIGKILLed ``--kills``
times, in equal spans of the run's first three quarters (the clean run's time is not known in advance: the spans
are cut from ``--expected-seconds``). It prints a JSON object: seconds, kills, and whether every output file (the
selected batch and its record, ``crawl.json`` aside) has the clean run's bytes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _extractors(command: Any) -> list[Any]:
    """The extractor processes under ``command``: children of a fork server."""
    import psutil

    found = []
    try:
        for process in command.children(recursive=True):
            try:
                if "forkserver" in " ".join(process.parent().cmdline()):
                    found.append(process)
            except psutil.Error:
                continue
    except psutil.Error:
        pass
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1200, help="HTML pages of the WARC")
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--expected-seconds", type=float, default=300.0, help="about how long a clean run takes")
    args = parser.parse_args()

    import psutil
    from _crawls import one_warc, start_crawl

    work = Path(tempfile.mkdtemp(prefix="extractor-kills-bench-"))
    results: dict[str, Any] = {"pages": args.pages}
    try:
        _, listing = one_warc(work, args.pages)

        def crawl(name: str, core: str) -> tuple[subprocess.Popen[bytes], float]:
            return start_crawl(sys.executable, listing, work / name, core, work / f"{name}.log")

        runs = {"clean": crawl("clean", "0"), "killed": crawl("killed", "1")}
        process, started = runs["killed"]
        moments = [(i + 0.5) * 0.75 * args.expected_seconds / args.kills for i in range(args.kills)]
        killed: list[float] = []
        for moment in moments:
            while process.poll() is None and time.monotonic() - started < moment:
                time.sleep(0.2)
            while process.poll() is None and not (victims := _extractors(psutil.Process(process.pid))):
                time.sleep(0.2)  # the WARC's process starts once Prefect has
            if process.poll() is not None:
                break
            victims[0].kill()
            killed.append(round(time.monotonic() - started, 1))
        for name, (run, begun) in runs.items():
            if run.wait() != 0:
                raise SystemExit(f"the {name} crawl failed: {(work / f'{name}.log').read_text()[-3000:]}")
            results[f"{name}_seconds"] = round(time.monotonic() - begun, 1)
        results["kills_at_seconds"] = killed

        def files(name: str) -> dict[str, bytes]:
            return {
                str(p.relative_to(work / name)): p.read_bytes()
                for p in (work / name).rglob("*")
                if p.is_file() and p.name not in {"crawl.json", "crawl.lease"} and not p.name.startswith(".")
            }

        clean, after = files("clean"), files("killed")
        results["output_files"] = sorted(clean)
        results["same_bytes_as_clean"] = clean == after
        summary = json.loads((work / "killed" / "crawl.json").read_text())
        results["killed_run_errors"] = summary["totals"]["errors"]
        results["clean_run_errors"] = json.loads((work / "clean" / "crawl.json").read_text())["totals"]["errors"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
