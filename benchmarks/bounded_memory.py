#!/usr/bin/env python3
"""Peak memory of the whole process tree, and wall time, at any batch size, JSON and JSON Lines.

    python benchmarks/bounded_memory.py                               # 10k, 100k, 300k articles (0.14, 1.4, 4.3 GB)
    python benchmarks/bounded_memory.py --server                      # also run against a `prefect server start`
    python benchmarks/bounded_memory.py --baseline ../old             # and an older checkout, in the same run
    python benchmarks/bounded_memory.py --sizes 500,2000 --server     # smoke run (a few minutes)

For every size (``--sizes``, articles) and format (``--formats``: the JSON batch
``{"articles": [...]}``, and JSON Lines, the same articles one compact object a
line, ``*_extracted.jsonl``), one batch of distinct articles is built by
``benchmarks/_batches.py`` in a temporary folder, measured, and deleted before
the next one, so only one batch is on disk at a time. Each command
(``--commands``) runs as a user runs it, a fresh process timed from start to exit:

* ``select``: ``content-selection select INPUT -o OUT``;
* ``run``: ``content-selection run INPUT -o OUT``, the default (in-process) runner, embedded API;
* ``run-server``: the same against a running ``prefect server start`` on 127.0.0.1
  (``PREFECT_API_URL``; ``--server`` starts one for the run, ``--api-url`` names one), so
  the server's memory is not in the command's tree; skipped without either option;
* ``run-process``: ``content-selection run INPUT -o OUT --task-runner process`` (embedded API);
* ``floor``: orjson's load of the file and its write (``benchmarks/_child.py floor``, indented
  as the selected batch is; for JSON Lines ``floor-lines``, line by line), skipped above
  1.5 GB of JSON batch (it holds the whole document: about 5 bytes per input byte).

Memory: the process and all its descendants (the embedded API's server, process-pool
workers) are sampled with psutil every ``--sample-seconds`` (default 0.02 s,
``benchmarks/_child.py:run_tree``): the sum of their RSS, the largest sum kept. A
peak shorter than the interval can be missed; pages that processes share are counted
in each. The kernel's peak of the command alone (``wait4``) is kept beside it.

``--baseline DIR``: a checkout of an older commit (with its compiled
``selection_core/*.so`` copied in) whose ``select``, ``run`` and ``run-process`` run the
same way in the same run (``PYTHONPATH=DIR``, from ``DIR``), so that the time against
today's is a ratio measured under the same load. It is skipped where it would need
more than 80% of the machine's memory (estimated from two smaller sizes of this run,
else from its known bytes per input byte, ``OLD_MEMORY``); so is the new build, from
two smaller sizes. Before the batches, each build runs once on a small batch (untimed:
it creates the Prefect home's database, and registers the flow with the server), and
once on a small JSON Lines batch: a build that cannot select or run JSON Lines is
reported as "not supported by this build" and its JSON Lines runs are skipped.

Every output's SHA-256 is compared with ``select``'s of the same build and format (and
the baseline's ``select`` with the new one's). ``--rounds``: each command that often per
batch, interleaved; the fastest time and the largest peak are kept. Printed: the load
average at the start, a table, and the ratios of this run: peak at the largest size over
the smallest (goal 1.25 or less for ``select`` and ``run``), peak over input near 100k
articles (goal below 0.1), ``select`` over the floor, ``run`` over ``select``, JSON Lines
over JSON, baseline over new. Writes benchmarks/out/bounded_memory.json and
docs/img/bounded_memory.png (peak against input size; the floor, the baseline, and
``--previous`` JSON of an earlier run for comparison).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _batches import OUT, ROOT, build_distinct, machine, prefect_env, prefect_server  # noqa: E402
from _child import run_tree  # noqa: E402
from overhead import CLI  # noqa: E402

PLOT = ROOT / "docs/img/bounded_memory.png"
COMMANDS = ("select", "run", "run-server", "run-process", "floor")
FORMATS = ("json", "jsonl")
#: The floor holds the whole JSON document: skipped above this many bytes of input.
FLOOR_LIMIT_BYTES = 1_500_000_000
#: Peak memory of the builds before the streamed engine (bytes per input byte, fixed GiB: select
#: 5.4 GiB and the in-process flow 7 GiB on 1.44 GB; the process pool's flow process about 1.5 GiB
#: plus its workers), for --baseline runs of such a build: only to skip what would not fit.
OLD_MEMORY = {"select": (5.5, 0.2), "run": (5.0, 0.6), "run-server": (5.0, 0.4), "run-process": (1.2, 4.0)}
#: A run is skipped if its estimated peak is above this share of the machine's memory.
MEMORY_SHARE = 0.8
#: Articles of the untimed runs that warm each build up and probe it for JSON Lines.
PROBE_ARTICLES = 20
UNSUPPORTED = "not supported by this build"
MIB = 2**20


@dataclass
class Build:
    """A checkout whose commands are measured: this one (``new``) or ``--baseline``."""

    name: str
    root: Path
    home: Path
    jsonl: dict[str, str | None]  # "select" / "run" -> None if supported, else why not

    def env(self, api_url: str | None = None) -> dict[str, str]:
        env = prefect_env(self.home)
        for key in ("CONTENT_SELECTION_TASK_RUNNER", "CONTENT_SELECTION_DASK_ADDRESS"):
            env.pop(key, None)  # the default runner is what is measured
        env.update(PYTHONPATH=str(self.root), PYTHONHASHSEED="0")
        if api_url:
            env["PREFECT_API_URL"] = api_url
        return env


def argv(command: str, fmt: str, inp: Path, out: Path) -> list[str]:
    if command == "floor":
        job = "floor" if fmt == "json" else "floor-lines"
        return [sys.executable, str(ROOT / "benchmarks/_child.py"), job, str(inp), str(out)]
    verb = "select" if command == "select" else "run"
    extra = ["--task-runner", "process"] if command == "run-process" else []
    return [*CLI, verb, str(inp), "-o", str(out), *extra]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no message)"


def measure(build: Build, command: str, fmt: str, inp: Path, interval: float, api_url: str | None) -> dict[str, Any]:
    """One command on one batch: its figures and its output's SHA-256 (the output is then deleted)."""
    out = inp.with_name(f"{build.name}_{command}_selected.{fmt}")
    env = build.env(api_url if command == "run-server" else None)
    run = run_tree(argv(command, fmt, inp, out), env, build.root, interval)
    row = {k: v for k, v in run.items() if k not in ("stdout", "stderr_tail")}
    if run["status"] == 0 and out.exists():
        row["output_sha256"] = sha256(out)
    else:
        row["error"] = f"exit {run['status']}: {last_line(run['stderr_tail'])}"
    if command == "floor" and run["status"] == 0:
        row["work_seconds"] = json.loads(run["stdout"].strip().splitlines()[-1])["seconds"]
    out.unlink(missing_ok=True)
    return row


def prepare(build: Build, scratch: Path, interval: float, api_url: str | None) -> None:
    """Untimed runs on a small batch: the Prefect home's database (and the server's flow) exist
    before the clock; then whether the build selects and runs JSON Lines."""
    small = scratch / f"{build.name}_probe_extracted.json"
    build_distinct(small, PROBE_ARTICLES)
    for command in ("select", "run", *(("run-server",) if api_url else ())):
        row = measure(build, command, "json", small, interval, api_url)
        if "error" in row:
            raise SystemExit(f"{build.name} ({build.root}): {command} fails on a small JSON batch: {row['error']}")
    lines = small.with_suffix(".jsonl")
    build_distinct(lines, PROBE_ARTICLES)
    for command in ("select", "run"):
        out = lines.with_name(f"{build.name}_probe_{command}_selected.jsonl")
        run = run_tree(argv(command, "jsonl", lines, out), build.env(), build.root, interval)
        ok = run["status"] == 0 and out.exists()
        if ok:
            objects = [orjson.loads(line) for line in out.read_bytes().splitlines() if line.strip()]
            ok = len(objects) == PROBE_ARTICLES and all(isinstance(o, dict) for o in objects)
        build.jsonl[command] = None if ok else f"exit {run['status']}: {last_line(run['stderr_tail'])}"
        out.unlink(missing_ok=True)
    small.unlink()
    lines.unlink()


def estimate_gib(build: Build, command: str, fmt: str, size: int, rows: list[dict[str, Any]]) -> float | None:
    """The peak to expect: a straight line through the two largest smaller sizes of this run,
    else (the baseline) its known bytes per input byte; None if nothing to go on."""
    seen = sorted(
        (r["input_bytes"], r["tree_peak_rss_mib"] / 1024)
        for r in rows
        if (r["build"], r["command"], r["format"]) == (build.name, command, fmt) and "error" not in r
    )
    points = sorted(dict(seen).items())[-2:]
    if len(points) == 2 and points[1][0] > points[0][0]:
        (x0, y0), (x1, y1) = points
        return y1 + (y1 - y0) / (x1 - x0) * (size - x1)
    if build.name == "baseline" and command in OLD_MEMORY:
        per_byte, fixed = OLD_MEMORY[command]
        return per_byte * size / 2**30 + fixed
    return None


def skip_reason(build: Build, command: str, fmt: str, size: int, api_url: str | None, rows: list, limit: float) -> str:
    if command == "floor" and fmt == "json" and size > FLOOR_LIMIT_BYTES:
        return f"the floor above {FLOOR_LIMIT_BYTES / 1e9:.1f} GB (it holds the whole document)"
    if command == "run-server" and not api_url:
        return "no server (--server or --api-url)"
    if fmt == "jsonl" and command != "floor":
        if build.jsonl["select" if command == "select" else "run"]:
            return UNSUPPORTED
    guess = estimate_gib(build, command, fmt, size, rows)
    if guess is not None and guess > limit:
        return f"would need about {guess:.1f} GiB, more than {MEMORY_SHARE:.0%} of the machine's memory"
    return ""


def batch(
    n: int,
    fmt: str,
    builds: list[Build],
    commands: list[str],
    args: argparse.Namespace,
    api_url: str | None,
    rows: list,
) -> list[dict[str, str]]:
    """Every build and command on one batch; appends to ``rows``, returns what was skipped."""
    skipped: list[dict[str, str]] = []
    limit = MEMORY_SHARE * machine()["memory_gib"]
    with tempfile.TemporaryDirectory(prefix="cs-bounded-") as tmp:
        inp = Path(tmp) / f"bounded{n}_extracted.{fmt}"
        size = build_distinct(inp, n)
        print(f"{fmt} batch of {n} articles: {size / 1e6:.1f} MB", flush=True)
        plan, reasons = [], {}
        for command in commands:
            for build in builds:
                if command == "floor" and build.name != "new":
                    continue  # the floor does not depend on the build
                why = skip_reason(build, command, fmt, size, api_url, rows, limit)
                if why:
                    skipped.append(
                        {"build": build.name, "format": fmt, "articles": n, "command": command, "reason": why}
                    )
                    reasons.setdefault((build.name, why), []).append(command)
                else:
                    plan.append((command, build))
        for (name, why), which in reasons.items():
            print(f"  {name:<8} {', '.join(which)} skipped: {why}", flush=True)
        for round_ in range(args.rounds):
            for command, build in plan:
                row = {"build": build.name, "format": fmt, "articles": n, "command": command}
                row.update(input_bytes=size, round=round_)
                row.update(measure(build, command, fmt, inp, args.sample_seconds, api_url))
                rows.append(row)
                state = row.get("error") or f"{row['seconds']:8.2f} s, tree peak {row['tree_peak_rss_mib']:7.0f} MiB"
                print(f"  {build.name:<8} {command:<12} {state}", flush=True)
    return skipped


def best(rows: list[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """Per (build, format, articles, command): the fastest round's time, the largest peak, and whether
    the output is ``select``'s (same build and format; the baseline's select against the new one's)."""
    out: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        if "error" in r:
            continue
        key = (r["build"], r["format"], r["articles"], r["command"])
        b = out.setdefault(key, {**r, "hashes": set()})
        b["seconds"] = min(b["seconds"], r["seconds"])
        b["tree_peak_rss_mib"] = max(b["tree_peak_rss_mib"], r["tree_peak_rss_mib"])
        b["hashes"].add(r["output_sha256"])
    for (build, fmt, n, command), b in out.items():
        reference = out.get((build if command != "select" else "new", fmt, n, "select"))
        same = reference is not None and len(reference["hashes"] | b["hashes"]) == 1
        b["identical_to_select"] = None if command == "floor" or reference is None else same
    for b in out.values():
        b["peak_over_input"] = b["tree_peak_rss_mib"] * MIB / b["input_bytes"]
        b["hashes"] = sorted(b["hashes"])
    return out


def ratios(table: dict[tuple, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The ratios of this run, by a readable key."""
    out: dict[str, dict[str, float]] = {
        k: {}
        for k in ("peak_largest_over_smallest", "peak_over_input", "select_over_floor", "run_over_select")
        + ("jsonl_over_json_seconds", "jsonl_over_json_peak", "baseline_over_new_seconds", "baseline_over_new_peak")
        + ("run_over_run_process", "net_run_over_net_run_process")
    }
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for (build, fmt, _n, command), b in table.items():
        groups.setdefault((build, fmt, command), []).append(b)
    for (build, fmt, command), bs in groups.items():
        bs.sort(key=lambda b: b["articles"])
        if len(bs) > 1:
            key = f"{build} {fmt} {command}: {bs[-1]['articles']} / {bs[0]['articles']}"
            out["peak_largest_over_smallest"][key] = bs[-1]["tree_peak_rss_mib"] / bs[0]["tree_peak_rss_mib"]
        near = min(bs, key=lambda b: abs(b["articles"] - 100000))
        out["peak_over_input"][f"{build} {fmt} {command} at {near['articles']}"] = near["peak_over_input"]
    for (build, fmt, n, command), b in sorted(table.items()):
        select = table.get((build, fmt, n, "select"))
        where = f"{build} {fmt} {n}"
        if command == "select" and (floor := table.get(("new", fmt, n, "floor"))):
            out["select_over_floor"][where] = b["seconds"] / floor["seconds"]
        if command.startswith("run") and select:
            out["run_over_select"][f"{where} {command}"] = b["seconds"] / select["seconds"]
        if fmt == "jsonl" and (json_ := table.get((build, "json", n, command))):
            out["jsonl_over_json_seconds"][f"{build} {n} {command}"] = b["seconds"] / json_["seconds"]
            out["jsonl_over_json_peak"][f"{build} {n} {command}"] = b["tree_peak_rss_mib"] / json_["tree_peak_rss_mib"]
        if command == "run-process" and (run := table.get((build, fmt, n, "run"))):
            out["run_over_run_process"][where] = run["seconds"] / b["seconds"]
            smallest = min(k[2] for k in table if k[:2] == (build, fmt) and k[3] == "run-process")
            run0, pool0 = table.get((build, fmt, smallest, "run")), table.get((build, fmt, smallest, "run-process"))
            if n != smallest and run0 and pool0:  # net of each runner's time on the smallest batch
                out["net_run_over_net_run_process"][where] = (run["seconds"] - run0["seconds"]) / (
                    b["seconds"] - pool0["seconds"]
                )
        if build == "baseline" and (new := table.get(("new", fmt, n, command))):
            out["baseline_over_new_seconds"][f"{fmt} {n} {command}"] = b["seconds"] / new["seconds"]
            out["baseline_over_new_peak"][f"{fmt} {n} {command}"] = b["tree_peak_rss_mib"] / new["tree_peak_rss_mib"]
    return out


def print_table(table: dict[tuple, dict[str, Any]]) -> None:
    print(
        f"{'format':<6} {'articles':>8} {'input MB':>9} {'build':<8} {'command':<12} {'seconds':>9} "
        f"{'tree peak MiB':>13} {'peak/input':>10} {'procs':>5} {'samples':>7}  same bytes as select"
    )
    for key in sorted(table, key=lambda k: (k[1], k[2], k[0] != "new", COMMANDS.index(k[3]))):
        b = table[key]
        same = {None: "-", True: "yes", False: "NO"}[b["identical_to_select"]]
        print(
            f"{b['format']:<6} {b['articles']:>8} {b['input_bytes'] / 1e6:>9.1f} {b['build']:<8} {b['command']:<12} "
            f"{b['seconds']:>9.2f} {b['tree_peak_rss_mib']:>13.0f} {b['peak_over_input']:>10.3f} "
            f"{b['most_processes']:>5} {b['samples']:>7}  {same}"
        )


GOALS = {
    "peak_largest_over_smallest": "goal <= 1.25 for select and run",
    "peak_over_input": "goal < 0.1 at 100k for select and run",
    "select_over_floor": "goal <= 4x on the 57 MB batch of benchmarks/select_speed.py",
    "baseline_over_new_seconds": "goal >= 1/1.1 = 0.91 at 100k (new no more than 10% slower)",
    "run_over_run_process": "goal > 1 at 10860: the process pool faster than in-process end to end",
    "net_run_over_net_run_process": "goal >= 1.7: each runner's time net of its time on the smallest batch",
}


def print_ratios(result: dict[str, dict[str, float]]) -> None:
    for name, values in result.items():
        if values:
            print(f"{name}" + (f" ({GOALS[name]})" if name in GOALS else "") + ":")
            for key, value in values.items():
                print(f"  {key:<44} {value:8.3f}")


def previous_rows(path: Path | None) -> list[dict[str, Any]]:
    """The best rows of the new build in an earlier run's JSON, to plot as the old curve."""
    if path is None or not path.exists():
        return []
    return [r for r in json.loads(path.read_text())["best"] if r["build"] == "new"]


def plot(table: dict[tuple, dict[str, Any]], previous: list[dict[str, Any]], formats: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(1, len(formats), figsize=(6 * len(formats), 4.5), squeeze=False, sharey=True)
    colours = {c: f"C{i}" for i, c in enumerate(COMMANDS)}
    for ax, fmt in zip(axes[0], formats, strict=True):
        curves: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for b in table.values():
            if b["format"] == fmt:
                curves.setdefault((b["build"], b["command"]), []).append(
                    (b["input_bytes"] / 1e6, b["tree_peak_rss_mib"])
                )
        for r in previous:
            if r["format"] == fmt and r["command"] != "floor":  # the floor does not depend on the build
                curves.setdefault(("previous run", r["command"]), []).append(
                    (r["input_bytes"] / 1e6, r["tree_peak_rss_mib"])
                )
        styles = {"new": "o-", "baseline": "s:", "previous run": "^-."}
        order = {"new": 0, "baseline": 1, "previous run": 2}
        for (build, command), points in sorted(curves.items(), key=lambda c: (order[c[0][0]], COMMANDS.index(c[0][1]))):
            xs, ys = zip(*sorted(points), strict=True)
            style = "d--" if command == "floor" else styles[build]
            label = "orjson floor" if command == "floor" else f"{command} ({build})"
            ax.loglog(xs, ys, style, color="k" if command == "floor" else colours[command], label=label)
        sizes = sorted({b["input_bytes"] / 1e6 for b in table.values() if b["format"] == fmt})
        if sizes:
            ax.loglog(sizes, [s * 1e6 / MIB for s in sizes], ":", color="grey", label="input size")
        ax.set(xlabel="input, MB", ylabel="peak RSS of the process tree, MiB", title=f"{fmt} batch")
        ax.xaxis.set_minor_formatter(NullFormatter())  # the decades only: minor labels overlap
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def names(text: str, allowed: tuple[str, ...]) -> list[str]:
    values = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [v for v in values if v not in allowed]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown {', '.join(unknown)}; choose from {', '.join(allowed)}")
    return values


def main(argv_: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=lambda t: [int(x) for x in t.split(",")], default=[10000, 100000, 300000])
    ap.add_argument("--formats", type=lambda t: names(t, FORMATS), default=list(FORMATS))
    ap.add_argument("--commands", type=lambda t: names(t, COMMANDS), default=list(COMMANDS))
    ap.add_argument("--baseline", type=Path, help="checkout of an older commit, its selection_core/*.so copied in")
    server = ap.add_mutually_exclusive_group()
    server.add_argument("--server", action="store_true", help="start a prefect server for run-server")
    server.add_argument("--api-url", help="a running server's API URL for run-server")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--sample-seconds", type=float, default=0.02)
    ap.add_argument("--previous", type=Path, help="bounded_memory.json of an earlier run: plotted as the old curve")
    ap.add_argument("--json", type=Path, default=OUT / "bounded_memory.json")
    ap.add_argument("--plot", type=Path, default=PLOT)
    ap.add_argument("--replot", type=Path, help="draw the plot again from a run's JSON (measures nothing)")
    args = ap.parse_args(argv_)
    if args.replot:
        recorded = json.loads(args.replot.read_text())
        plot(dict(enumerate(recorded["best"])), previous_rows(args.previous), args.formats, args.plot)
        print(f"plot: {args.plot}")
        return 0
    if args.baseline and not (args.baseline / "selection_cli/main.py").exists():
        ap.error(f"--baseline {args.baseline}: no selection_cli/main.py there")
    if args.baseline and not list((args.baseline / "selection_core").glob("*.so")):
        print(f"warning: no compiled kernel in {args.baseline}/selection_core: its pure-Python path is measured")
    info = machine()
    print(f"load average at start: {info['load_average_at_start']}; machine: {info}", flush=True)
    previous = previous_rows(args.previous)
    rows: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="cs-bounded-homes-") as homes:
        builds = [Build("new", ROOT, Path(homes) / "new", {})]
        if args.baseline:
            builds.append(Build("baseline", args.baseline.resolve(), Path(homes) / "baseline", {}))
        with server_for(args, Path(homes)) as api_url:
            for build in builds:
                prepare(build, Path(homes), args.sample_seconds, api_url)
                for kind, why in build.jsonl.items():
                    state = f"{UNSUPPORTED} ({why})" if why else "supported"
                    print(f"{build.name}: JSON Lines {kind}: {state}", flush=True)
            for n in args.sizes:
                for fmt in args.formats:
                    skipped += batch(n, fmt, builds, args.commands, args, api_url, rows)
    table = best(rows)
    result = ratios(table)
    print()
    print_table(table)
    print()
    print_ratios(result)
    end_load = [round(x, 2) for x in os.getloadavg()]
    print(f"load average at start {info['load_average_at_start']}, at the end {end_load}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "machine": info,
        "load_average_at_end": end_load,
        "arguments": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "jsonl_support": {b.name: b.jsonl for b in builds},
        "best": list(table.values()),
        "ratios": result,
        "skipped": skipped,
        "all_runs": rows,
    }
    args.json.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {args.json}")
    if table:
        plot(table, previous, args.formats, args.plot)
        print(f"plot: {args.plot}")
    return 0


def server_for(args: argparse.Namespace, scratch: Path) -> contextlib.AbstractContextManager[str | None]:
    """The API URL for ``run-server``: ``--api-url``, a server started for the run (``--server``), or None."""
    if args.server:
        return prefect_server(scratch)
    return contextlib.nullcontext(args.api_url)


if __name__ == "__main__":
    sys.exit(main())
