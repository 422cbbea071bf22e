#!/usr/bin/env python3
"""What the dataset's language columns cost a crawl: one WARC crawled into a dataset with them and without them.

    python benchmarks/language_cost.py --pages 5000 --before-python /tmp/before-venv/bin/python
    python benchmarks/language_cost.py --pages 300                   # smoke run: the direct measure alone

One WARC of ``--pages`` real pages (``scripts/make_crawl_fixtures.py``) on this disk, crawled as a user runs it
(``content-selection crawl LISTING --base FOLDER -o OUT --format dataset --workers 1``):

1. with and without: this tree's crawl and ``--before-python``'s (an interpreter where the code before the language
   columns is installed) at once, each pinned to its own core (``taskset``), so that the ratio is measured under one
   load: seconds, and their ratio;
2. direct: the seconds this process takes to identify the language of every row of this tree's dataset (the model's
   load included), as a share of this tree's crawl. The crawl computes each row's language once, in the WARC's
   process, so this share is what the columns add, without the noise of two runs.

It prints a JSON object, and the dataset's languages (rows per language) as a table.
"""

from __future__ import annotations

import argparse
import collections
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=5000, help="HTML pages of the WARC")
    parser.add_argument("--before-python", help="an interpreter with the code before the language columns installed")
    args = parser.parse_args()

    import pyarrow.parquet as pq
    from _crawls import one_warc, start_crawl

    from selection_engine.language import identify

    work = Path(tempfile.mkdtemp(prefix="language-cost-bench-"))
    results: dict[str, Any] = {"pages": args.pages}
    try:
        warc, listing = one_warc(work, args.pages)
        results["warc_bytes"] = warc.stat().st_size

        def crawl(python: str, name: str, core: str) -> tuple[subprocess.Popen[bytes], float]:
            return start_crawl(
                python, listing, work / f"out-{name}", core, work / name / "crawl.log", "--format", "dataset"
            )

        runs = {"with": crawl(sys.executable, "with", "1")}
        if args.before_python:
            runs["without"] = crawl(args.before_python, "without", "0")
        for name, (process, started) in runs.items():
            if process.wait() != 0:
                log = (work / name / "crawl.log").read_text(errors="replace")[-3000:]
                raise SystemExit(f"the crawl {name} the language columns failed: {log}")
            results[f"{name}_seconds"] = round(time.monotonic() - started, 1)
        if args.before_python:
            results["with_over_without"] = round(results["with_seconds"] / results["without_seconds"], 4)

        (dataset,) = (work / "out-with").rglob("*.parquet")
        table = pq.read_table(dataset, columns=["text", "language", "language_score"])
        texts = table.column("text").to_pylist()
        started = time.perf_counter()
        found = [identify(text) for text in texts]
        seconds = time.perf_counter() - started
        assert found == list(zip(table.column("language").to_pylist(), table.column("language_score").to_pylist()))
        results["rows"] = len(texts)
        results["text_mib"] = round(sum(len(t.encode()) for t in texts) / 2**20, 1)
        results["language_seconds"] = round(seconds, 2)
        results["language_share_of_crawl"] = round(seconds / results["with_seconds"], 4)
        counts = collections.Counter(language for language, _ in found)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2))
    print("\n| language | rows |\n|---|---:|")
    for language, rows in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        print(f"| {language} | {rows} |")


if __name__ == "__main__":
    main()
