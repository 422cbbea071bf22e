#!/usr/bin/env python3
"""The extract step's own cost: ``extract`` against a plain process making the same calls, interleaved rounds.

    python benchmarks/engine_overhead.py                                  # 181 pages, 5 rounds, --workers 1 and 2
    python benchmarks/engine_overhead.py --code before=/path/to/checkout  # and another checkout's code, side by side
    python benchmarks/engine_overhead.py --pages 10 --rounds 1            # smoke run

Every round runs, in an order rotated from round to round: ``extract PAGES --workers W -o OUT``
(``python -c "...main()"`` in a temporary folder, so ``PYTHONPATH`` decides which code runs) for each code tree
(``--code LABEL=DIR``, this checkout as ``this`` first) and each ``--workers``, and the
plain lean process of ``benchmarks/extraction_speed.py`` (``PLAIN_CALLS``: the three lean
adapters one after the other on every page, in one process, no pool, no time limit). Each
is a fresh process timed from start to exit, with the peak resident set of its whole
process tree (``benchmarks/_child.run_tree``). Reports the median and range of each and
the engine's overhead: median ``extract --workers 1`` over the median plain process. The
outputs of the code trees must be byte-identical (their SHA-256 is compared).
Writes benchmarks/out/engine_overhead.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _batches import OUT, ROOT, machine, prefect_env  # noqa: E402
from _child import run_tree  # noqa: E402
from extraction_speed import PLAIN_CALLS, pages_manifest  # noqa: E402

CLI = "import sys; from selection_cli.main import main; sys.exit(main())"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=None, help="only the first N pages (default: all 181)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--code", action="append", default=[], metavar="LABEL=DIR", help="another code tree to time")
    ap.add_argument("--json", type=Path, default=OUT / "engine_overhead.json")
    args = ap.parse_args(argv)
    trees = {"this": ROOT, **{c.split("=", 1)[0]: Path(c.split("=", 1)[1]) for c in args.code}}
    code = {label: str(tree) for label, tree in trees.items()}
    result: dict[str, Any] = {"machine": machine(), "rounds": args.rounds, "code": code}
    with tempfile.TemporaryDirectory(prefix="cs-engine-overhead-") as name:
        tmp = Path(name)
        manifest = pages_manifest(args.pages, tmp)
        base_env = prefect_env(tmp / "prefect-home")
        runs: dict[str, tuple[list[str], dict[str, str], Path | None]] = {}
        for label, tree in trees.items():
            env = {**base_env, "PYTHONPATH": str(tree)}
            for workers in args.workers:
                out = tmp / f"{label}-{workers}.json"
                command = [
                    sys.executable,
                    "-c",
                    CLI,
                    "extract",
                    str(manifest),
                    "-o",
                    str(out),
                    "--workers",
                    str(workers),
                ]
                runs[f"{label}, extract --workers {workers}"] = (command, env, out)
        plain_env = {**base_env, "PYTHONPATH": str(ROOT)}
        runs["plain lean calls"] = ([sys.executable, "-c", PLAIN_CALLS, str(manifest), "lean"], plain_env, None)
        figures: dict[str, dict[str, list[float]]] = {label: {"seconds": [], "tree_peak_rss_mib": []} for label in runs}
        digests: dict[str, set[str]] = {label: set() for label, run in runs.items() if run[2] is not None}
        labels = list(runs)
        for r in range(args.rounds):
            for label in labels[r % len(labels) :] + labels[: r % len(labels)]:
                command, env, out = runs[label]
                run = run_tree(command, env, tmp, interval=0.1)  # not in a code tree: ``-c`` puts the cwd first
                if run["status"] != 0:
                    raise SystemExit(f"{label} failed: {run['stderr_tail']}")
                figures[label]["seconds"].append(run["seconds"])
                figures[label]["tree_peak_rss_mib"].append(run["tree_peak_rss_mib"])
                if out is not None:
                    digests[label].add(hashlib.sha256(out.read_bytes()).hexdigest())
                    out.unlink()
                print(f"  round {r + 1}  {label:<32} {run['seconds']:7.2f} s  {run['tree_peak_rss_mib']:7.1f} MiB")
    summary = {
        label: {
            "median_s": statistics.median(f["seconds"]),
            "min_s": min(f["seconds"]),
            "max_s": max(f["seconds"]),
            "median_tree_peak_rss_mib": statistics.median(f["tree_peak_rss_mib"]),
        }
        for label, f in figures.items()
    }
    plain = summary["plain lean calls"]["median_s"]
    print(f"\n{manifest}, {args.rounds} rounds, interleaved")
    print(f"{'run':<34} {'median s':>9} {'range s':>15} {'tree peak MiB':>14} {'/ plain':>8}")
    for label, s in summary.items():
        print(
            f"{label:<34} {s['median_s']:9.2f} {s['min_s']:7.2f}-{s['max_s']:<7.2f} "
            f"{s['median_tree_peak_rss_mib']:14.1f} {s['median_s'] / plain:8.3f}"
        )
    outputs = {d for ds in digests.values() for d in ds}
    for workers in args.workers:
        for label in trees:
            if label != "this":
                key, other = f"this, extract --workers {workers}", f"{label}, extract --workers {workers}"
                print(f"{other} / this: {summary[other]['median_s'] / summary[key]['median_s']:.3f}")
    print(f"outputs byte-identical across runs and code trees: {len(outputs) == 1}")
    result.update(summary=summary, all=figures, identical_outputs=len(outputs) == 1, sha256=sorted(outputs))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0 if len(outputs) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
