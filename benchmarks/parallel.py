#!/usr/bin/env python3
"""Speed-up from parallelism on this machine, in one run: selection and extraction.

    python benchmarks/parallel.py                      # 100k articles, the 181 real pages
    python benchmarks/parallel.py --articles 20000 --pages ../shared/datasets/scrapinghub-aeb/html

Selection: the ``select-content`` flow on one batch (``benchmarks/_batches.py``,
distinct copies of the real articles) with each task runner: ``in-process`` (the
default: one task), ``process`` (Prefect's process pool, one worker per core)
``dask`` (a local cluster of 2 single-thread worker processes, started by the
run) and ``dask-cluster`` (the ``dask`` runner given the address of a
``dask scheduler`` with 2 ``dask worker`` processes on 127.0.0.1, started once
before the rounds and warmed by one small untimed run, as a long-running cluster
would be), all with their default
chunks (about 4 per worker) unless ``--chunk-size`` is given.
Each run is a fresh process on the embedded Prefect API (started before the
clock); the written bytes must be identical. Two figures: the whole flow, and
its select stage (the flow minus its own read/write/artifact tasks; on the
chunked runners that stage also holds each chunk's read, parse and write).

Extraction: the ``extract-articles`` flow on the real pages, in-process with one
extraction worker (the serial baseline), on the process pool and on a local Dask
cluster (each chunk of pages extracted by one worker), and in-process with two
extraction workers (the step's own pool); the batches must be identical.

Goal: at least 1.6x on 2 cores. Writes benchmarks/out/parallel.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _batches import OUT, ROOT, build_distinct, dask_cluster, machine, prefect_env  # noqa: E402
from select_speed import measure  # noqa: E402

#: Selection runs: (label, task runner). ``dask-cluster`` is the ``dask`` runner given
#: the address of a cluster of separate processes started, and warmed by one small
#: untimed run, before the rounds (as a long-running cluster is).
RUNNERS = (("in-process", "in-process"), ("process", "process"), ("dask", "dask"), ("dask-cluster", "dask"))
DEFAULT_PAGES = ROOT.parent / "shared/datasets/scrapinghub-aeb/html"


def selection(n_articles: int, rounds: int, chunk_size: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="cs-parallel-") as tmp:
        inp = Path(tmp) / "parallel_extracted.json"
        size = build_distinct(inp, n_articles)
        env = prefect_env(Path(tmp) / "prefect-home")
        runs: dict[str, list[dict]] = {label: [] for label, _ in RUNNERS}
        scratch = Path(tmp) / "dask"
        scratch.mkdir()
        with dask_cluster(scratch) as address:
            # one untimed run on a small batch first: a long-running cluster's workers
            # have imported the project already
            warm = Path(tmp) / "warm_extracted.json"
            build_distinct(warm, 200)
            measure("flow", warm, Path(tmp) / "warm-out.json", "dask", "0", address, env=env)
            for _ in range(rounds):
                for label, runner in RUNNERS:
                    out = Path(tmp) / f"out-{label}.json"
                    chunk = 0 if runner == "in-process" else chunk_size
                    extra = [address] if label == "dask-cluster" else []
                    runs[label].append(measure("flow", inp, out, runner, str(chunk), *extra, env=env))
                    out.unlink()
                    print(f"  {label:<12} {runs[label][-1]['seconds']:8.2f} s", flush=True)
    best = {r: min(v, key=lambda x: x["seconds"]) for r, v in runs.items()}
    hashes = {x["output_sha256"] for v in runs.values() for x in v}
    base = best["in-process"]
    return {
        "articles": n_articles,
        "input_bytes": size,
        "chunk_size": chunk_size,
        "identical_output": len(hashes) == 1,
        "flow_seconds": {r: b["seconds"] for r, b in best.items()},
        "select_stage_seconds": {r: b["select_stage_seconds"] for r, b in best.items()},
        "flow_speedup": {r: base["seconds"] / b["seconds"] for r, b in best.items()},
        "select_stage_speedup": {r: base["select_stage_seconds"] / b["select_stage_seconds"] for r, b in best.items()},
        "flow_process_peak_rss_mib": {r: b["peak_rss_mib"] for r, b in best.items()},
        "largest_worker_peak_rss_mib": {r: b["largest_child_peak_rss_mib"] for r, b in best.items()},
        "all_runs": runs,
    }


#: Extraction measurements: (label, child job, task runner, workers). The baseline
#: is the extract-articles flow in-process with one extraction worker (serial).
EXTRACT_RUNS = (
    ("in-process, 1 worker", "extract-flow", "in-process", "1"),
    ("process pool (2)", "extract-flow", "process", "0"),
    ("local Dask (2 workers)", "extract-flow", "dask", "0"),
    ("Dask cluster (2 workers)", "extract-flow", "dask", "0"),
    ("in-process, 2 workers", "extract-flow", "in-process", "2"),
)


def extraction(pages: Path, rounds: int, pages_per_chunk: int = 0) -> dict:
    """The ``extract-articles`` flow on the real pages, with each runner; the fastest of ``rounds``."""
    with tempfile.TemporaryDirectory(prefix="cs-extract-") as tmp:
        env = prefect_env(Path(tmp) / "prefect-home")
        runs: dict[str, list[dict]] = {label: [] for label, *_ in EXTRACT_RUNS}
        scratch = Path(tmp) / "dask"
        scratch.mkdir()
        with dask_cluster(scratch) as address:
            # one untimed run on a few pages first: a long-running cluster's workers have
            # imported the project and started their extraction forkserver already
            few = Path(tmp) / "few-pages"
            few.mkdir()
            for page in sorted(pages.iterdir())[:4]:
                shutil.copyfile(page, few / page.name)
            measure("extract-flow", few, Path(tmp) / "few_extracted.json", "dask", "0", address, env=env)
            for _ in range(rounds):
                for label, job, runner, workers in EXTRACT_RUNS:
                    out = Path(tmp) / "pages_extracted.json"
                    extra = [address] if label.startswith("Dask cluster") else []
                    if pages_per_chunk and runner != "in-process":  # the in-process runs stay the references
                        extra = [address if extra else "", str(pages_per_chunk)]
                    runs[label].append(measure(job, pages, out, runner, workers, *extra, env=env))
                    out.unlink()
                    print(f"  {label:<24} {runs[label][-1]['seconds']:8.2f} s", flush=True)
    best = {label: min(v, key=lambda x: x["seconds"]) for label, v in runs.items()}
    base = best[EXTRACT_RUNS[0][0]]["seconds"]
    return {
        "pages": str(pages),
        "identical_output": len({x["sha256"] for v in runs.values() for x in v}) == 1,
        "seconds": {label: b["seconds"] for label, b in best.items()},
        "speedup": {label: base / b["seconds"] for label, b in best.items()},
        "all_runs": runs,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--articles", type=int, default=100000)
    ap.add_argument("--chunk-size", type=int, default=0, help="0: the flow's default (about 4 chunks per worker)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--pages", type=Path, default=DEFAULT_PAGES, help="folder of real pages (skipped if missing)")
    ap.add_argument("--extract-rounds", type=int, default=2)
    ap.add_argument("--skip-selection", action="store_true")
    ap.add_argument("--pages-per-chunk", type=int, default=0, help="extraction chunks (0: the flow's default)")
    ap.add_argument("--json", type=Path, default=OUT / "parallel.json")
    args = ap.parse_args(argv)
    result: dict = {"machine": machine()}
    if not args.skip_selection:
        print(f"selection, {args.articles} articles:", flush=True)
        sel = result["selection"] = selection(args.articles, args.rounds, args.chunk_size)
        print(f"input {sel['input_bytes'] / 1e6:.0f} MB; identical output: {sel['identical_output']}")
        for r, _ in RUNNERS:
            print(
                f"  {r:<10} flow {sel['flow_seconds'][r]:8.2f} s  x{sel['flow_speedup'][r]:.2f}   "
                f"select stage {sel['select_stage_seconds'][r]:8.2f} s  x{sel['select_stage_speedup'][r]:.2f}"
            )
    if args.pages.is_dir():
        print(f"extraction, {args.pages}:", flush=True)
        ext = result["extraction"] = extraction(args.pages, args.extract_rounds, args.pages_per_chunk)
        print(f"  identical output: {ext['identical_output']}")
        for label, seconds in ext["seconds"].items():
            print(f"  {label:<24} {seconds:8.2f} s  x{ext['speedup'][label]:.2f}")
    else:
        print(f"extraction skipped: {args.pages} is not a folder")
    print(f"machine: {result['machine']} (goal: x1.6 or more)")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
