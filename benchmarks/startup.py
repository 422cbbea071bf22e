"""What a short command costs to start: ``content-selection select`` on the sample batch against the imports alone.

    python benchmarks/startup.py [--rounds 15]

Each round runs, in fresh processes and alternately (the machine is shared: both see the same noise), the
floor ``python -c "import orjson, ftfy, regex"`` and the installed command ``content-selection select`` on a copy
of ``examples/sample_extracted.json`` (12 articles). Printed: the median wall time and the peak resident set of
each, and their ratios (issue 30's goal: at most 2.5x the time and 2x the memory of the floor).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "sample_extracted.json"


def _run(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and peak resident MiB of one fresh process."""
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, dict(os.environ, PWD=str(cwd)), file_actions=_quiet())
    _, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed with status {os.waitstatus_to_exitcode(status)}")
    return seconds, usage.ru_maxrss / 1024


def _quiet() -> list[tuple]:
    devnull = os.open(os.devnull, os.O_WRONLY)
    return [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    command = shutil.which("content-selection") or sys.exit("content-selection is not installed in this environment")
    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        work = Path(tmp)
        batch = work / "sample_extracted.json"
        shutil.copy(SAMPLE, batch)
        jobs = {
            "imports only": [sys.executable, "-c", "import orjson, ftfy, regex"],
            "select (sample)": [command, "select", str(batch), "-o", str(work / "out.json")],
        }
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in jobs}
        for _ in range(args.rounds):
            for name, job in jobs.items():
                figures[name].append(_run(job, work))
    rows = {name: (statistics.median(s for s, _ in runs), max(m for _, m in runs)) for name, runs in figures.items()}
    floor_s, floor_mib = rows["imports only"]
    print(f"{'job':<18} {'median s':>9} {'peak MiB':>9} {'time x':>7} {'memory x':>9}")
    for name, (seconds, mib) in rows.items():
        print(f"{name:<18} {seconds:>9.3f} {mib:>9.1f} {seconds / floor_s:>7.2f} {mib / floor_mib:>9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
