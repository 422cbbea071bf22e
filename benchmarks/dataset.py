#!/usr/bin/env python3
"""The dataset (``--format dataset``): its bytes and time against the selected batch, select's memory on a large
batch, DuckDB over a crawl's outputs, and the Parquet layout chosen for the readers.

    python benchmarks/dataset.py crawl                         # 4 WARCs x 500 real pages, once in each format
    python benchmarks/dataset.py crawl --warcs 10 --pages 1000 --formats dataset --keep /tmp/cc10k   # 10,000 pages
    python benchmarks/dataset.py memory                        # select on a 1.44 GB batch, in each format
    python benchmarks/dataset.py layout /tmp/cc10k/dataset     # row groups and compression, for DuckDB and datasets

``crawl`` writes a Common Crawl shaped crawl (``scripts/make_crawl_fixtures.py``: the 181 real pages of
tests/data/aeb-pages, round-robin) and runs ``content-selection crawl --workers 2`` on it once per format, in one
run: the seconds of each, the bytes of the outputs, and DuckDB's time to count the rows and to scan ``text`` over
the outputs' glob (the median of 5; for the batch, ``read_json`` picking the selected block's text). ``memory``
writes a batch of distinct articles (``benchmarks/_batches.py``) and runs ``content-selection select`` on it in a
child process whose process tree's peak resident set is sampled: the dataset against the batch format, and the
large batch against one 16 times smaller. ``layout`` rewrites one dataset's rows with the writer's options but other
row group sizes and compressions, and times DuckDB's scan and ``datasets.load_dataset`` on each.
Figures: docs/scaling.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._batches import OUT, build_distinct, machine, prefect_env  # noqa: E402
from benchmarks._child import run_tree  # noqa: E402

#: What DuckDB reads of the selected batch to get the selected text (the batch format's ``text`` column).
_BATCH_TEXT = (
    "CASE selected_extractor WHEN 'trafilatura' THEN trafilatura.text WHEN 'newspaper4k' THEN newspaper4k.text "
    "ELSE readability.cleaned_text END"
)


def _median_seconds(run: Any, repeat: int = 5) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def _duckdb(glob: str, dataset: bool) -> dict[str, Any]:
    import duckdb

    connection = duckdb.connect()
    if dataset:
        source, text = f"read_parquet('{glob}')", "text"
    else:
        source, text = f"read_json('{glob}', format='newline_delimited', maximum_object_size=268435456)", _BATCH_TEXT
    count_s, count = _median_seconds(lambda: connection.sql(f"SELECT count(*) FROM {source}").fetchall()[0][0])
    scan_s, chars = _median_seconds(
        lambda: connection.sql(f"SELECT sum(length({text})) FROM {source}").fetchall()[0][0]
    )
    return {"rows": count, "text_chars": chars, "count_seconds": count_s, "scan_seconds": scan_s}


def crawl(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "scripts"))
    from make_crawl_fixtures import write_crawl

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="dataset-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    keys = write_crawl(work / "bucket", args.warcs, args.pages)
    listing = work / "listing.txt"
    listing.write_text("".join(f"{key}\n" for key in keys))
    results: dict[str, Any] = {"warcs": args.warcs, "pages_per_warc": args.pages, "machine": machine()}
    home = tempfile.mkdtemp(prefix="dataset-bench-prefect-")
    env = prefect_env(home)
    for output_format in args.formats:
        out = work / output_format
        shutil.rmtree(out, ignore_errors=True)
        command = [sys.executable, "-m", "selection_cli.main", "crawl", str(listing), "--base", str(work / "bucket")]
        started = time.perf_counter()
        done = subprocess.run(
            [*command, "-o", str(out), "--workers", "2", "--format", output_format],
            env=env,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"the {output_format} crawl failed ({done.returncode}): {done.stderr[-2000:]}")
        suffix = ".parquet" if output_format == "dataset" else ".jsonl"
        outputs = sorted(out.rglob(f"*{suffix}"))
        summary = json.loads((out / "crawl.json").read_bytes())["totals"]
        results[output_format] = {
            "seconds": seconds,
            "pages": summary["pages"],
            "outputs": len(outputs),
            "output_bytes": sum(p.stat().st_size for p in outputs),
            "duckdb": _duckdb(str(out / "**" / f"*{suffix}"), output_format == "dataset"),
        }
        print(f"{output_format}: {json.dumps(results[output_format])}", flush=True)
    warc_bytes = sum((work / "bucket" / key).stat().st_size for key in keys)
    results["warc_bytes"] = warc_bytes
    if "batch" in results and "dataset" in results:
        batch, dataset = results["batch"], results["dataset"]
        results["ratios"] = {
            "dataset_bytes_over_batch_bytes": dataset["output_bytes"] / batch["output_bytes"],
            "dataset_seconds_over_batch_seconds": dataset["seconds"] / batch["seconds"],
            "duckdb_scan_batch_over_dataset": batch["duckdb"]["scan_seconds"] / dataset["duckdb"]["scan_seconds"],
            "duckdb_count_batch_over_dataset": batch["duckdb"]["count_seconds"] / dataset["duckdb"]["count_seconds"],
        }
        same = batch["duckdb"]["text_chars"] == dataset["duckdb"]["text_chars"]
        results["same_text_chars"] = same
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    return results


def memory(args: argparse.Namespace) -> dict[str, Any]:
    per_article = (ROOT / "tests/data/aeb_batch_extracted.json").stat().st_size / 181
    work = Path(tempfile.mkdtemp(prefix="dataset-bench-memory-"))
    results: dict[str, Any] = {"machine": machine()}
    try:
        large, small = work / "large_extracted.json", work / "small_extracted.json"
        results["large_batch_bytes"] = build_distinct(large, round(args.gib * 1e9 / per_article))
        results["small_batch_bytes"] = build_distinct(small, round(args.gib * 1e9 / per_article / 16))
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        for name, batch, output_format in (
            ("large_dataset", large, "dataset"),
            ("large_batch", large, "batch"),
            ("small_dataset", small, "dataset"),
        ):
            out = work / f"{name}.{'parquet' if output_format == 'dataset' else 'json'}"
            command = [sys.executable, "-m", "selection_cli.main", "select", str(batch), "-o", str(out)]
            run = run_tree([*command, "--format", output_format], env, ROOT)
            if run["status"] != 0:
                raise SystemExit(f"{name} failed: {run['stderr_tail']}")
            results[name] = {
                "seconds": run["seconds"],
                "peak_rss_mib": run["tree_peak_rss_mib"],
                "output_bytes": out.stat().st_size,
            }
            out.unlink()
            print(f"{name}: {json.dumps(results[name])}", flush=True)
        results["ratios"] = {
            "dataset_peak_large_over_small": results["large_dataset"]["peak_rss_mib"]
            / results["small_dataset"]["peak_rss_mib"],
            "dataset_peak_over_batch_peak": results["large_dataset"]["peak_rss_mib"]
            / results["large_batch"]["peak_rss_mib"],
            "dataset_seconds_over_batch_seconds": results["large_dataset"]["seconds"]
            / results["large_batch"]["seconds"],
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


def layout(args: argparse.Namespace) -> dict[str, Any]:
    import duckdb
    import pyarrow.parquet as pq

    from selection_engine.dataset import COMPRESSION, ROW_GROUP_ROWS, writer_options

    files = sorted(Path(args.folder).rglob("*.parquet"))
    table = pq.ParquetDataset(files).read()  # one crawl's rows, in memory for the rewrite only
    work = Path(tempfile.mkdtemp(prefix="dataset-bench-layout-"))
    results: dict[str, Any] = {"rows": table.num_rows, "files": len(files), "machine": machine()}
    try:
        for compression in (COMPRESSION, "snappy", "none"):
            for rows in (100, ROW_GROUP_ROWS, 10_000):
                if compression != COMPRESSION and rows != ROW_GROUP_ROWS:
                    continue
                path = work / f"{compression}-{rows}.parquet"
                pq.write_table(table, path, row_group_size=rows, **{**writer_options(), "compression": compression})
                connection = duckdb.connect()
                scan = f"SELECT sum(length(text)) FROM read_parquet('{path}')"
                scan_s, _ = _median_seconds(lambda scan=scan, c=connection: c.sql(scan).fetchall())
                filtered = f"SELECT count(*) FROM read_parquet('{path}') WHERE text ILIKE '%climate%'"
                filter_s, _ = _median_seconds(lambda q=filtered, c=connection: c.sql(q).fetchall())
                load_s = _datasets_load_seconds(path, work)
                key = f"{compression}, {rows} rows"
                results[key] = {
                    "bytes": path.stat().st_size,
                    "duckdb_scan_seconds": scan_s,
                    "duckdb_filter_seconds": filter_s,
                    "datasets_load_seconds": load_s,
                }
                print(f"{key}: {json.dumps(results[key])}", flush=True)
                path.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


def _datasets_load_seconds(path: Path, work: Path) -> float:
    """``load_dataset("parquet", ...)`` into a fresh cache, offline, then one pass over ``text``."""
    code = (
        "import sys, time; from datasets import load_dataset; t = time.perf_counter(); "
        "d = load_dataset('parquet', data_files=sys.argv[1], split='train', cache_dir=sys.argv[2]); "
        "n = sum(len(t) for t in d['text']); print(time.perf_counter() - t)"
    )
    cache = tempfile.mkdtemp(dir=work)
    env = {**os.environ, "HF_HOME": cache, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code, str(path), cache], env=env, capture_output=True, text=True)
    shutil.rmtree(cache, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"datasets failed on {path}: {done.stderr[-1500:]}")
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="part", required=True)
    one = sub.add_parser("crawl")
    one.add_argument("--warcs", type=int, default=4)
    one.add_argument("--pages", type=int, default=500, help="pages per WARC")
    one.add_argument("--formats", nargs="+", choices=("batch", "dataset"), default=["batch", "dataset"])
    one.add_argument("--keep", metavar="DIR", help="write the crawl and its outputs here, and keep them")
    two = sub.add_parser("memory")
    two.add_argument("--gib", type=float, default=1.44, help="size of the large batch in GB (10^9 bytes)")
    three = sub.add_parser("layout")
    three.add_argument("folder", help="a folder of a dataset crawl's outputs")
    args = parser.parse_args()
    results = {"crawl": crawl, "memory": memory, "layout": layout}[args.part](args)
    OUT.mkdir(parents=True, exist_ok=True)
    pages = f"_{args.warcs * args.pages}" if args.part == "crawl" else ""
    target = OUT / f"dataset_{args.part}{pages}.json"
    target.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(json.dumps(results.get("ratios", {}), indent=2))
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
