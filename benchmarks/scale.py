#!/usr/bin/env python3
"""Cost as work grows: selection time and peak memory at 1k, 10k and 100k articles, in one run.

    python benchmarks/scale.py                          # 1000 10000 100000 articles
    python benchmarks/scale.py --sizes 1000 10000 --rounds 3
    python benchmarks/scale.py --runners --sizes 10860 --rounds 3   # run in-process against the process runner

Batches are built by ``benchmarks/_batches.py`` from the 181 real articles
(distinct copies: a copy-number token appended to every text). For every size,
``content-selection select`` (the core, no orchestrator) and the orjson
load+write floor of the same file run in fresh processes (``benchmarks/_child.py``),
alternating, and the fastest of ``--rounds`` is kept (the machine is shared).
Printed: time and per-article cost, the ratio to the floor, linearity (per-article
cost relative to the smallest batch, and the exponent of a power-law fit: 1.0 is
linear), and peak memory per input byte. Writes benchmarks/out/scale.json and
the plot docs/img/scale.png.

``--runners``: instead, ``content-selection run`` on the same batches, in-process and with
``--task-runner process``, side by side: fresh processes on a private Prefect home (warmed by one
untimed run), alternating, fastest of ``--rounds``; each time also net of the same command on a
10-article batch (Prefect's start, the embedded API, the workers' start), and the net speed-up of
the process runner (goal: at least 1.6x on 2 cores). The outputs must be identical. Writes
benchmarks/out/scale_runners.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _batches import OUT, ROOT, build_distinct, machine, prefect_env  # noqa: E402
from overhead import timed  # noqa: E402
from select_speed import measure  # noqa: E402

PLOT = ROOT / "docs/img/scale.png"
#: The runners compared by ``--runners``, as the options of ``content-selection run``.
RUNNERS = {"in-process": [], "process": ["--task-runner", "process"]}
#: The batch whose time ``--runners`` subtracts: the fixed cost of a run.
SMALLEST = 10


def power_fit(xs: list[float], ys: list[float]) -> float:
    """Exponent b of y = a * x**b, least squares in log-log."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["articles"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.loglog(n, [r["select_seconds"] for r in rows], "o-", label="select (core)")
    ax1.loglog(n, [r["floor_seconds"] for r in rows], "s--", label="orjson load + write (floor)")
    ax1.set(xlabel="articles in the batch", ylabel="seconds", title="Time")
    ax2.loglog(n, [r["select_peak_rss_mib"] for r in rows], "o-", label="select (core)")
    ax2.loglog(n, [r["floor_peak_rss_mib"] for r in rows], "s--", label="floor")
    ax2.loglog(n, [r["input_bytes"] / 2**20 for r in rows], ":", label="input size")
    ax2.set(xlabel="articles in the batch", ylabel="MiB", title="Peak memory (RSS)")
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def compare_runners(sizes: list[int], rounds: int, path: Path) -> int:
    """``run`` in-process and on the process runner, side by side (``--runners``)."""
    info = machine()
    rows = []
    with tempfile.TemporaryDirectory(prefix="cs-scale-runners-") as tmp:
        env = prefect_env(Path(tmp) / "prefect-home")
        for key in ("CONTENT_SELECTION_TASK_RUNNER", "CONTENT_SELECTION_DASK_ADDRESS"):
            env.pop(key, None)
        batches = {n: Path(tmp) / f"runners{n}_extracted.json" for n in [SMALLEST, *sizes]}
        sizes_of = {n: build_distinct(inp, n) for n, inp in batches.items()}
        timed(["run", str(batches[SMALLEST]), "-o", str(Path(tmp) / "warm.json")], env)  # creates the database
        times: dict[tuple[int, str], list[float]] = {}
        for _ in range(rounds):
            for n, inp in batches.items():
                for runner, options in RUNNERS.items():
                    out = Path(tmp) / f"{runner}{n}_selected.json"
                    times.setdefault((n, runner), []).append(timed(["run", str(inp), "-o", str(out), *options], env))
        best = {key: min(v) for key, v in times.items()}
        for n in sizes:
            same = len({(Path(tmp) / f"{runner}{n}_selected.json").read_bytes() for runner in RUNNERS}) == 1
            net = {runner: best[(n, runner)] - best[(SMALLEST, runner)] for runner in RUNNERS}
            row = {
                "articles": n,
                "input_bytes": sizes_of[n],
                **{f"{runner}_seconds": best[(n, runner)] for runner in RUNNERS},
                **{f"{runner}_net_seconds": net[runner] for runner in RUNNERS},
                "net_speedup": net["in-process"] / net["process"],
                "identical_output": same,
                "all_times": {runner: times[(n, runner)] for runner in RUNNERS},
                "smallest_times": {runner: times[(SMALLEST, runner)] for runner in RUNNERS},
            }
            rows.append(row)
            print(
                f"{n:>7} articles {sizes_of[n] / 1e6:8.1f} MB | run in-process {best[(n, 'in-process')]:6.2f} s "
                f"(net {net['in-process']:.2f}) | run --task-runner process {best[(n, 'process')]:6.2f} s "
                f"(net {net['process']:.2f}) | net speed-up {row['net_speedup']:.2f}x (goal >= 1.6) | "
                f"{'same bytes' if same else 'OUTPUTS DIFFER'}",
                flush=True,
            )
    print(
        f"net of a {SMALLEST}-article run: in-process {best[(SMALLEST, 'in-process')]:.2f} s, "
        f"process {best[(SMALLEST, 'process')]:.2f} s; fastest of {rounds}; machine: {info}"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"machine": info, "rounds": rounds, "rows": rows}, indent=2) + "\n")
    return 0 if all(r["identical_output"] for r in rows) else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--rounds", type=int, default=3, help="rounds for batches under 50k articles")
    ap.add_argument("--large-rounds", type=int, default=1, help="rounds for batches of 50k articles or more")
    ap.add_argument("--json", type=Path, default=OUT / "scale.json")
    ap.add_argument("--plot", type=Path, default=PLOT)
    ap.add_argument("--runners", action="store_true", help="run in-process against the process runner instead")
    args = ap.parse_args(argv)
    if args.runners:
        return compare_runners(args.sizes, args.rounds, OUT / "scale_runners.json")
    info = machine()
    rows = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory(prefix="cs-scale-") as tmp:
            inp = Path(tmp) / f"scale{n}_extracted.json"
            size = build_distinct(inp, n)
            runs: dict[str, list[dict]] = {"floor": [], "select": []}
            for _ in range(args.rounds if n < 50000 else args.large_rounds):
                for job in ("floor", "select"):
                    runs[job].append(measure(job, inp, Path(tmp) / f"{job}_out.json"))
        best = {job: min(r, key=lambda x: x["seconds"]) for job, r in runs.items()}
        row = {
            "articles": n,
            "input_bytes": size,
            "floor_seconds": best["floor"]["seconds"],
            "select_seconds": best["select"]["seconds"],
            "ratio_to_floor": best["select"]["seconds"] / best["floor"]["seconds"],
            "select_us_per_article": 1e6 * best["select"]["seconds"] / n,
            "floor_us_per_article": 1e6 * best["floor"]["seconds"] / n,
            "select_peak_rss_mib": max(x["peak_rss_mib"] for x in runs["select"]),
            "floor_peak_rss_mib": max(x["peak_rss_mib"] for x in runs["floor"]),
            "baseline_rss_mib": min(x["baseline_rss_mib"] for x in runs["select"]),
            "all_runs": runs,
        }
        above = (row["select_peak_rss_mib"] - row["baseline_rss_mib"]) * 2**20
        row["select_peak_bytes_per_input_byte"] = above / size
        row["floor_peak_bytes_per_input_byte"] = (row["floor_peak_rss_mib"] - row["baseline_rss_mib"]) * 2**20 / size
        rows.append(row)
        print(
            f"{n:>7} articles {size / 1e6:8.1f} MB | select {row['select_seconds']:8.2f} s "
            f"({row['select_us_per_article']:.0f} us/article) | floor {row['floor_seconds']:7.2f} s | "
            f"ratio {row['ratio_to_floor']:.2f}x | peak {row['select_peak_rss_mib']:.0f} MiB = "
            f"{row['select_peak_bytes_per_input_byte']:.2f} B per input byte above baseline",
            flush=True,
        )
    result: dict = {"machine": info, "rows": rows}
    if len(rows) > 1:
        xs = [r["articles"] for r in rows]
        result["time_exponent"] = power_fit(xs, [r["select_seconds"] for r in rows])
        result["floor_time_exponent"] = power_fit(xs, [r["floor_seconds"] for r in rows])
        result["memory_exponent"] = power_fit(
            xs, [max(r["select_peak_rss_mib"] - r["baseline_rss_mib"], 1e-3) for r in rows]
        )
        result["per_article_cost_relative_to_smallest"] = [
            r["select_us_per_article"] / rows[0]["select_us_per_article"] for r in rows
        ]
        print(
            f"growth: time ~ n^{result['time_exponent']:.3f} (floor n^{result['floor_time_exponent']:.3f}), "
            f"memory above baseline ~ n^{result['memory_exponent']:.3f}; per-article cost relative to "
            f"{rows[0]['articles']}: " + ", ".join(f"{x:.2f}" for x in result["per_article_cost_relative_to_smallest"])
        )
        plot(rows, args.plot)
        print(f"plot: {args.plot}")
    print(f"machine: {info}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
