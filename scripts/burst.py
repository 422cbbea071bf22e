"""A burst of events against a real server and ``content-selection serve``: every batch selected once, right, and
never more runs at once than the limit; prints the figures of ``docs/reliability.md``.

    python scripts/burst.py                      # 300 events, a limit of 2
    python scripts/burst.py --events 30 --limit 1

The suite runs the same check with 30 events (``tests/prefect/test_server_crashes.py``); this one runs the
300 of the issue, which takes minutes. Everything stays under ``--workdir``, the server on 127.0.0.1.
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

from soak import Dropped, healthy, right_bytes, stage_processes, stage_runs  # noqa: E402

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


def one_event(env: dict[str, str], data: Path) -> float:
    """Seconds from one event, alone, to the end of its triggered run (the burst's yardstick, in the same run)."""
    single = data / "single_extracted.json"
    single.write_bytes(SOURCE.read_bytes())
    started = time.time()
    subprocess.run([sys.executable, "-c", EMIT_ALL, str(single)], env=env, check=True)
    while True:
        runs = [run for run, _ in stage_runs(env, histories=False) if run.parameters.get("input_path") == str(single)]
        if runs and runs[0].state.is_final():
            assert runs[0].state.is_completed(), runs[0].state.message
            return time.time() - started
        time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--limit", type=int, default=2, help="the triggered deployment's concurrency limit")
    parser.add_argument("--slot-wait", type=float, default=2.0, help="the server's concurrency slot wait (s)")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--database", help="the server's database, postgresql+asyncpg://... (default: SQLite)")
    args = parser.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="burst-"))
    data = work / "data"
    options = ["--cron", "0 3 1 1 *", "--concurrency-limit", str(args.limit)]
    env, server, serve = stage_processes(work, options, slot_wait=args.slot_wait, database=args.database)
    batches = [Dropped(data / f"burst{n:04d}_extracted.json", "batch", 0.0) for n in range(args.events)]
    for item in batches:
        item.path.write_bytes(SOURCE.read_bytes())
    try:
        server.start()
        while not healthy(env["PREFECT_API_URL"]):
            time.sleep(0.5)
        serve.start()
        while "content-selection-rerun-crashed-runs" not in (work / "serve.log").read_text(errors="replace"):
            time.sleep(0.5)
        time.sleep(5)  # the deployments are registered right after the automations
        one = one_event(env, data)
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
        failed_actions = (work / "server.log").read_text(errors="replace").count("Action failed")
        selected_by_the_triggered_runs = sum(item.output.exists() for item in batches)
        if selected_by_the_triggered_runs < args.events:  # the safety net, started as its schedule would
            scan = [sys.executable, "-m", "prefect", "deployment", "run", "select-directory/scheduled", "--watch"]
            subprocess.run(scan, env=env, cwd=ROOT, check=True, capture_output=True)
    finally:
        serve.stop()
        server.stop()
    scratch = work / "scratch"
    scratch.mkdir(exist_ok=True)
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
        "one event alone, first: from the event to its run's end (s)": round(one, 1),
        "from the first event to the last triggered run's end (s)": round(elapsed, 1),
        "the burst against one event (x)": round(elapsed / one, 2),
        "server's slot wait (s)": args.slot_wait,
    }
    print("\n| what | figure |\n|---|---:|")
    for name, value in figures.items():
        print(f"| {name} | {value} |")
    ok = figures["outputs with the right bytes"] == args.events and most_at_once(histories) <= args.limit
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
