#!/usr/bin/env python3
"""Speed and memory of `content-selection select` against the orjson floor, in one run.

    python benchmarks/select_speed.py                 # 181 real articles x 20 (about 52 MB)
    python benchmarks/select_speed.py --repeat 5 --rounds 5

The batch is the 181 real articles of tests/data/aeb_batch_extracted.json
repeated; with --distinct every copy's texts get a copy-number token so that no
two articles are equal (the core has no cross-article cache either way). Each
measurement runs in a fresh process (benchmarks/_child.py); the floor and the
selection alternate for --rounds rounds and the fastest of each is compared, so
that load from other work on this shared machine affects both alike.

Goal: time at most 4x the floor on one core; peak memory at most 3x the
input size. The figures are printed and written to benchmarks/out/select_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
BATCH = ROOT / "tests/data/aeb_batch_extracted.json"


def build(path: Path, repeat: int, distinct: bool) -> int:
    doc = orjson.loads(BATCH.read_bytes())
    articles = []
    for copy in range(repeat):
        for art in doc["articles"]:
            a = orjson.loads(orjson.dumps(art))
            a["id"] = f"{a['id']}-{copy}"
            if distinct and copy:
                for name, field in (("trafilatura", "text"), ("newspaper4k", "text"), ("readability", "cleaned_text")):
                    if a[name][field]:
                        a[name][field] += f" copy{copy}"
            articles.append(a)
    doc["articles"] = articles
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    return path.stat().st_size


def measure(job: str, inp: Path, out: Path, *extra: str, env: dict[str, str] | None = None) -> dict:
    """Run ``benchmarks/_child.py JOB INP OUT [EXTRA...]`` in a fresh process; its figures."""
    env = dict(env if env is not None else os.environ, PYTHONHASHSEED="0")
    res = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/_child.py"), job, str(inp), str(out), *extra],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--distinct", action="store_true")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks/out/select_speed.json")
    ap.add_argument("--build-into", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.build_into:
        build(args.build_into, args.repeat, args.distinct)
        return 0
    with tempfile.TemporaryDirectory(prefix="cs-bench-") as tmp:
        inp = Path(tmp) / "bench_extracted.json"
        # Built in a process of its own: a child's peak RSS (ru_maxrss) starts from its parent's
        # RSS at the fork, so a parent that held the built document would inflate every peak.
        command = [sys.executable, __file__, "--build-into", str(inp), "--repeat", str(args.repeat)]
        subprocess.run([*command, *(["--distinct"] if args.distinct else [])], check=True)
        size = inp.stat().st_size
        runs: dict[str, list[dict]] = {"floor": [], "select": []}
        for _ in range(args.rounds):
            for job in ("floor", "select"):
                runs[job].append(measure(job, inp, Path(tmp) / f"{job}_out.json"))
        n_articles = 181 * args.repeat
    best = {job: min(r, key=lambda x: x["seconds"]) for job, r in runs.items()}
    cpu = {job: min(x["cpu_seconds"] for x in r) for job, r in runs.items()}
    peak = {job: max(x["peak_rss_mib"] for x in r) for job, r in runs.items()}
    base = {job: min(x["baseline_rss_mib"] for x in r) for job, r in runs.items()}
    mib = size / 2**20
    result = {
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "input_bytes": size,
        "articles": n_articles,
        "floor_seconds": best["floor"]["seconds"],
        "select_seconds": best["select"]["seconds"],
        "time_ratio": best["select"]["seconds"] / best["floor"]["seconds"],
        "floor_cpu_seconds": cpu["floor"],
        "select_cpu_seconds": cpu["select"],
        "cpu_time_ratio": cpu["select"] / cpu["floor"],
        "select_us_per_article": 1e6 * best["select"]["seconds"] / n_articles,
        "floor_peak_rss_mib": peak["floor"],
        "select_peak_rss_mib": peak["select"],
        "select_peak_over_input": peak["select"] / mib,
        "select_peak_above_baseline_over_input": (peak["select"] - base["select"]) / mib,
        "floor_peak_above_baseline_over_input": (peak["floor"] - base["floor"]) / mib,
        "all_runs": runs,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"input: {size / 1e6:.1f} MB, {n_articles} articles, {args.rounds} rounds, best time of each")
    print(f"floor (orjson load + write): {result['floor_seconds']:.3f} s, peak RSS {peak['floor']:.0f} MiB")
    print(f"select:                      {result['select_seconds']:.3f} s, peak RSS {peak['select']:.0f} MiB")
    print(f"CPU seconds: floor {cpu['floor']:.3f}, select {cpu['select']:.3f}: ratio {result['cpu_time_ratio']:.2f}x")
    print(
        f"time ratio select/floor: {result['time_ratio']:.2f}x (goal <= 4x); "
        f"{result['select_us_per_article']:.0f} us/article"
    )
    print(
        f"peak memory / input size: {result['select_peak_over_input']:.2f}x total RSS, "
        f"{result['select_peak_above_baseline_over_input']:.2f}x above the interpreter baseline "
        f"(floor: {result['floor_peak_above_baseline_over_input']:.2f}x) (goal <= 3x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
