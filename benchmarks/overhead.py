#!/usr/bin/env python3
"""Orchestration overhead: `content-selection run` (embedded Prefect API) against `content-selection select`.

    python benchmarks/overhead.py                      # 1000 and 100000 articles
    python benchmarks/overhead.py --sizes 1000 --rounds 5

Both commands run as a user runs them: a fresh process each, timed from start to
exit (wall clock), on the same batch (``benchmarks/_batches.py``), alternating.
``run`` uses the embedded (ephemeral) API of a private Prefect home whose
database was created beforehand (one warm-up run), so the figure is the
steady-state cost of a run on a machine where Prefect has run before, not the
one-off creation of its database. Printed per size: both times (fastest of
``--rounds``), the fixed overhead (run - select, seconds) and the ratio
run / select. Writes benchmarks/out/overhead.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _batches import OUT, ROOT, build_distinct, machine, prefect_env  # noqa: E402

CLI = [sys.executable, "-c", "import sys; from selection_cli.main import main; sys.exit(main())"]


def timed(args: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([*CLI, *args], env=env, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 100000])
    ap.add_argument("--rounds", type=int, default=3, help="rounds for batches under 50k articles")
    ap.add_argument("--large-rounds", type=int, default=1)
    ap.add_argument("--json", type=Path, default=OUT / "overhead.json")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="cs-overhead-") as tmp:
        env = prefect_env(Path(tmp) / "prefect-home")
        warm = Path(tmp) / "warm_extracted.json"
        build_distinct(warm, 10)
        first = timed(["run", str(warm), "-o", str(Path(tmp) / "warm_out.json")], env)
        print(f"first run on a fresh Prefect home (creates its database): {first:.2f} s", flush=True)
        for n in args.sizes:
            inp = Path(tmp) / f"overhead{n}_extracted.json"
            size = build_distinct(inp, n)
            times: dict[str, list[float]] = {"select": [], "run": []}
            for _ in range(args.rounds if n < 50000 else args.large_rounds):
                for command in ("select", "run"):
                    out = Path(tmp) / f"{command}_out.json"
                    times[command].append(timed([command, str(inp), "-o", str(out)], env))
            same = (Path(tmp) / "select_out.json").read_bytes() == (Path(tmp) / "run_out.json").read_bytes()
            inp.unlink()
            best = {k: min(v) for k, v in times.items()}
            row = {
                "articles": n,
                "input_bytes": size,
                "select_seconds": best["select"],
                "run_seconds": best["run"],
                "overhead_seconds": best["run"] - best["select"],
                "ratio": best["run"] / best["select"],
                "identical_output": same,
                "all_times": times,
            }
            rows.append(row)
            print(
                f"{n:>7} articles: select {row['select_seconds']:.2f} s, run {row['run_seconds']:.2f} s, "
                f"overhead {row['overhead_seconds']:.2f} s, ratio {row['ratio']:.2f}x, identical output: {same}",
                flush=True,
            )
    result = {"machine": machine(), "first_run_fresh_home_seconds": first, "rows": rows}
    print(f"machine: {result['machine']}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
