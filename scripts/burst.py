"""A burst of events against Prefect's production topology (``scripts/soak.py``: PostgreSQL, Redis, two API
servers and the services behind HAProxy) and ``content-selection serve``: every batch selected exactly once,
right, never more runs at once than the limit, and every slot kept busy: the burst's wall time (from the first
event to the last run's end) at most 1.25 x (events / limit) x the median run's time from Pending to Completed,
measured in the same run. Prints the figures of ``docs/reliability.md``; exit 1 if one of these fails.

    python scripts/burst.py                      # 300 events, a limit of 2
    python scripts/burst.py --events 60

The suite runs the same check with 12 events (``tests/prefect/test_server_crashes.py``); this one runs the
hundreds of the issue, which take many minutes. Everything stays under ``--workdir``, every server on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from soak import Dropped, right_bytes, stage_runs, topology  # noqa: E402

from tests.support.postgres import postgres_cluster  # noqa: E402

#: The most the burst may take, in medians of one run, per run a slot has to hold.
BOUND = 1.25

SOURCE = ROOT / "tests" / "data" / "aeb_batch_extracted.json"
EMIT_ALL = (
    "import sys\nfrom content_selection import emit_batch_extracted\nfor p in sys.argv[1:]: emit_batch_extracted(p)"
)


def most_at_once(histories: list[Any]) -> int:
    """The most runs holding a slot at once, from the server's state histories: from a run's last Pending state
    (the slot is taken by the move to Pending) to its final state (which gives it back). Exact, where sampling the
    API (300 runs read over two pages) is not one snapshot, and where ``serve``'s log lines come after the states."""
    changes = []
    for _, states in histories:
        pending = [state.timestamp for state in states if state.type.value == "PENDING"]
        final = [state.timestamp for state in states if state.is_final()]
        if pending and final:
            changes += [(max(pending).timestamp(), 1), (max(final).timestamp(), -1)]
    now = peak = 0
    for _, change in sorted(changes):  # at one instant, a slot given back (-1) before one taken
        now += change
        peak = max(peak, now)
    return peak


def run_seconds(states: list[Any]) -> float | None:
    """A completed run's time from its last Pending state (its slot taken, its process being started) to
    Completed."""
    pending = [state.timestamp for state in states if state.type.value == "PENDING"]
    done = [state.timestamp for state in states if state.type.value == "COMPLETED"]
    return (max(done) - max(pending)).total_seconds() if pending and done else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--limit", type=int, default=2, help="the triggered deployment's concurrency limit")
    parser.add_argument("--slot-wait", type=float, default=2.0, help="the server's concurrency slot wait (s)")
    parser.add_argument("--poll", type=int, default=None, help="serve's poll for runs (s; default: serve's)")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="burst-"))
    with postgres_cluster() as database:
        return burst(args, work, database)


def burst(args: argparse.Namespace, work: Path, database: str) -> int:
    """The burst of :func:`main` on ``database``."""
    data = work / "data"
    options = ["--cron", "0 3 1 1 *", "--concurrency-limit", str(args.limit)]
    stack = topology(work, options, slot_wait=args.slot_wait, database=database)
    env, serve = stack.env, stack.serve
    if args.poll is not None:
        serve.env = {**serve.env, "PREFECT_RUNNER_POLL_FREQUENCY": str(args.poll)}
    batches = [Dropped(data / f"burst{n:04d}_extracted.json", "batch", 0.0) for n in range(args.events)]
    for item in batches:
        item.path.write_bytes(SOURCE.read_bytes())
    try:
        while not serve.alive():
            stack.supervise()
            time.sleep(0.5)
        while "serving select-content" not in (work / "serve.log").read_text(errors="replace"):
            time.sleep(0.5)
        started = time.time()
        subprocess.run([sys.executable, "-c", EMIT_ALL, *(str(i.path) for i in batches)], env=env, check=True)
        emitted = time.time() - started
        peak_runs, peak_load, runs = 0, 0.0, []
        seen, quiet_since = -1, time.monotonic()
        while True:
            runs = [
                run
                for run, _ in stage_runs(env, histories=False)
                if run.deployment_id is not None and "burst" in Path(run.parameters.get("input_path", "")).name
            ]
            active = sum(run.state.type.value in ("RUNNING", "PENDING") for run in runs)
            peak_runs, peak_load = max(peak_runs, active), max(peak_load, os.getloadavg()[0])
            if len(runs) != seen:
                seen, quiet_since = len(runs), time.monotonic()
            quiet = time.monotonic() - quiet_since > 60  # a run whose action the server failed never comes
            if all(run.state.is_final() for run in runs) and (len(runs) >= args.events or quiet):
                break
            time.sleep(0.5)
        elapsed = time.time() - started
        histories = [(run, states) for run, states in stage_runs(env) if run.id in {r.id for r in runs}]
        failed_actions = sum(log.read_text(errors="replace").count("Action failed") for log in work.glob("*.log"))
        selected_by_the_triggered_runs = sum(item.output.exists() for item in batches)
        if selected_by_the_triggered_runs < args.events:  # the safety net, started as its schedule would
            scan = [sys.executable, "-m", "prefect", "deployment", "run", "select-directory/scheduled", "--watch"]
            subprocess.run(scan, env=env, cwd=ROOT, check=True, capture_output=True)
    finally:
        stack.stop()
    scratch = work / "scratch"
    scratch.mkdir(exist_ok=True)
    times = sorted(t for _, states in histories if (t := run_seconds(states)) is not None)
    median = times[len(times) // 2] if times else float("nan")
    bound = BOUND * args.events / args.limit * median
    per_batch: dict[str, int] = {}
    for run in runs:
        per_batch[run.parameters["input_path"]] = per_batch.get(run.parameters["input_path"], 0) + 1
    figures = {
        "events (emitted in s)": f"{args.events} ({emitted:.1f})",
        "concurrency limit (cores)": f"{args.limit} ({os.cpu_count()})",
        "runs / batches with exactly one run": f"{len(runs)} / {sum(n == 1 for n in per_batch.values())}",
        "runs Completed": sum(run.state.is_completed() for run in runs),
        "batches with no triggered run / actions the server logged as failed": f"{args.events - len(per_batch)} / "
        f"{failed_actions}",
        "batches selected by the triggered runs / then by one scheduled scan": f"{selected_by_the_triggered_runs} / "
        f"{args.events - selected_by_the_triggered_runs}",
        "outputs with the right bytes": sum(right_bytes(item, scratch) for item in batches),
        "most runs at once, from the state histories (sampling the API every 0.5 s)": f"{most_at_once(histories)} "
        f"({peak_runs})",
        "highest 1-minute load average": round(peak_load, 2),
        "median run from Pending to Completed (s)": round(median, 2),
        f"bound: {BOUND} x (events / limit) x median (s)": round(bound, 1),
        "from the first event to the last triggered run's end (s)": round(elapsed, 1),
        "wall time against the bound": round(elapsed / bound, 3),
        "server's slot wait / serve's poll (s)": f"{args.slot_wait:g} / {args.poll or 'default'}",
    }
    print("\n| what | figure |\n|---|---:|")
    for name, value in figures.items():
        print(f"| {name} | {value} |")
    once = len(runs) == args.events and all(n == 1 for n in per_batch.values())
    right = figures["outputs with the right bytes"] == args.events
    ok = once and right and most_at_once(histories) <= args.limit and elapsed <= bound
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
