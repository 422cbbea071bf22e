#!/usr/bin/env python3
"""Extraction speed: the lean adapters against the libraries' default calls, measured in one run.

    python benchmarks/extraction_speed.py                       # the 181 real pages of tests/data/aeb-pages
    python benchmarks/extraction_speed.py --pages 10 --rounds 1 # smoke run: the first 10 pages

The lean side is what ``content-selection extract`` runs (``selection_extraction.adapters``:
``extract_trafilatura``, ``extract_newspaper4k``, ``extract_readability``); the default side is
the libraries' default calls with the same options (``tests.support.reference_extractors``:
``trafilatura_default``, the same call: trafilatura has no lean path; ``newspaper4k_default``:
``newspaper.article(...)``, full ``parse()``, unfixed tie order; ``readability_default``: ``summary()``
then ``title()``).

a. **In one process** (this one): every page read and decoded once
   (``selection_extraction.decode.decode_html``), then for each page and extractor the
   lean and the default call alternately, alternating which goes first; ms per page for
   each extractor and for the three together (the mean over ``--rounds`` passes). The
   texts and titles of both sides are compared on every page and round (an exception
   counts as its type name); a newspaper4k mismatch is also checked against
   ``newspaper4k_full_parse`` (the full ``parse()`` with the same tie fix), which tells a
   difference of the lean path from one of the tie order. Goal: the three together at
   least 1.5x faster.
b. **End to end**: ``content-selection extract PAGES --workers 1 -o OUT`` (the console
   script, a fresh process) against a fresh plain Python process that imports the
   libraries, reads and decodes every page itself and runs the three default calls one
   after the other; both timed from process start to exit, alternating, fastest of
   ``--rounds``. Goal: at least 1.4x faster. The same plain process running the lean
   adapters instead gives the engine's own overhead (the command's time over it): start-up,
   the fork server, the hand-off of each page, decoding, the time-limit machinery.
c. **The engine** (``selection_extraction.extraction.extract_to_file`` in a fresh process,
   timed around the call, so worker start-up included) with 1 and 2 workers, "before"
   (``default_extractors()`` with newspaper4k's and readability's functions replaced by
   the default calls) and "after" (``default_extractors()`` unchanged): pages per second,
   fastest of ``--rounds``, and the articles' texts and errors of "after" against
   "before" (titles reported apart).

PAGES is the folder's ``manifest.jsonl`` (so the URLs are kept), or a manifest of the
first N pages in a temporary folder with ``--pages N``. Writes benchmarks/out/extraction_speed.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _batches import OUT, ROOT, machine, prefect_env  # noqa: E402

sys.path.insert(0, str(ROOT))  # tests.support: the libraries' default calls

PAGES_DIR = ROOT / "tests/data/aeb-pages"

#: (extractor, lean adapter of ``selection_extraction.adapters``, the library's default call of
#: ``tests.support.reference_extractors``).
PAIRS = (
    ("trafilatura", "extract_trafilatura", "trafilatura_default"),
    ("newspaper4k", "extract_newspaper4k", "newspaper4k_default"),
    ("readability", "extract_readability", "readability_default"),
)
TEXT_FIELDS = {"trafilatura": "text", "newspaper4k": "text", "readability": "cleaned_text"}

GOAL_IN_PROCESS = 1.5
GOAL_END_TO_END = 1.4


def _console_script() -> list[str]:
    script = Path(sys.executable).parent / "content-selection"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from selection_cli.main import main; sys.exit(main())"]


#: A plain Python process running the three default calls (``default``) or the lean adapters
#: (``lean``) on every page of a manifest.
PLAIN_CALLS = """
import gzip, json, logging, sys, warnings
from pathlib import Path
warnings.simplefilter("ignore")
logging.getLogger().addHandler(logging.NullHandler())
logging.getLogger().setLevel(logging.CRITICAL)
from selection_extraction import adapters
from selection_extraction.decode import decode_html
from tests.support import reference_extractors as reference
adapters.prepare_worker()  # offline tldextract, as the engine's workers have it
calls = {
    "default": (reference.trafilatura_default, reference.newspaper4k_default, reference.readability_default),
    "lean": (adapters.extract_trafilatura, adapters.extract_newspaper4k, adapters.extract_readability),
}[sys.argv[2]]
manifest = Path(sys.argv[1])
pages = errors = 0
for line in manifest.read_text(encoding="utf-8").splitlines():
    if not line.strip():
        continue
    entry = json.loads(line)
    path = manifest.parent / entry["path"]
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        html = decode_html(fh.read(), entry.get("encoding")).html
    for call in calls:
        try:
            call(html, entry.get("url"))
        except Exception:
            errors += 1
    pages += 1
print(json.dumps({"pages": pages, "errors": errors}))
"""

#: The engine in a fresh process, with the default calls ("before") or the lean adapters ("after").
ENGINE_DRIVER = """
import dataclasses, json, sys, time
from selection_extraction.extraction import extract_to_file
from selection_extraction.extractors import default_extractors
from selection_extraction.pool import FunctionRef
from selection_extraction.settings import ExtractionSettings
source, output, workers, variant = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
extractors = default_extractors()
REFERENCE = "tests.support.reference_extractors"  # the workers resolve it from the working directory
if variant == "before":
    defaults = {"newspaper4k": "newspaper4k_default", "readability": "readability_default"}
    extractors = tuple(
        dataclasses.replace(e, function=FunctionRef(REFERENCE, defaults[e.name])) if e.name in defaults else e
        for e in extractors
    )
t0 = time.perf_counter()
run = extract_to_file(source, output, ExtractionSettings(workers=workers), extractors)
seconds = time.perf_counter() - t0
stats = run.result.stats
print(json.dumps({"pages": stats.pages, "seconds": seconds, "errors": stats.errors, "sha256": run.sha256}))
"""


def pages_manifest(limit: int | None, tmp: Path) -> Path:
    """The folder's manifest, or one of its first ``limit`` pages (absolute paths) in ``tmp``."""
    manifest = PAGES_DIR / "manifest.jsonl"
    lines = [line for line in manifest.read_text(encoding="utf-8").splitlines() if line.strip()]
    if limit is None or limit >= len(lines):
        return manifest
    out = tmp / "manifest.jsonl"
    with open(out, "w", encoding="utf-8") as fh:
        for line in lines[:limit]:
            entry = json.loads(line)
            entry["path"] = str((PAGES_DIR / entry["path"]).resolve())
            fh.write(json.dumps(entry) + "\n")
    return out


# --------------------------------------------------------------------------- a. one process


def _call(function: Any, html: str, url: str | None) -> tuple[float, tuple[Any, ...]]:
    t0 = time.perf_counter()
    try:
        text, title = function(html, url)
        outcome: tuple[Any, ...] = (text, title)
    except Exception as exc:  # noqa: BLE001 - an exception is an outcome, compared by its type name
        outcome = (type(exc).__name__,)
    return time.perf_counter() - t0, outcome


def in_process(manifest: Path, rounds: int) -> dict[str, Any]:
    from selection_extraction import adapters
    from selection_extraction.decode import decode_html
    from selection_extraction.pages import find_pages, read_page
    from selection_extraction.pool import quiet_libraries
    from tests.support import reference_extractors as reference

    quiet_libraries()
    adapters.prepare_worker()
    pages = []
    for page in find_pages(manifest).entries:
        pages.append((page.id, decode_html(read_page(page), page.encoding).html, page.url))
    functions = {name: (getattr(adapters, lean), getattr(reference, default)) for name, lean, default in PAIRS}
    # untimed warm-up: first-call caches (stop words, compiled expressions) on both sides
    for lean, default in functions.values():
        _call(lean, pages[0][1], pages[0][2])
        _call(default, pages[0][1], pages[0][2])
    seconds = {name: {"lean": 0.0, "default": 0.0} for name in functions}
    per_page = {name: {"lean": [0.0] * len(pages), "default": [0.0] * len(pages)} for name in functions}
    text_mismatch: dict[str, set[str]] = {name: set() for name in functions}
    title_mismatch: dict[str, set[str]] = {name: set() for name in functions}
    outcome_mismatch: dict[str, set[str]] = {name: set() for name in functions}  # exception on one side only
    for r in range(rounds):
        for i, (page_id, html, url) in enumerate(pages):
            for k, (name, (lean, default)) in enumerate(functions.items()):
                lean_first = (i + r + k) % 2 == 0
                order = (("lean", lean), ("default", default)) if lean_first else (("default", default), ("lean", lean))
                outcomes = {}
                for side, function in order:
                    elapsed, outcomes[side] = _call(function, html, url)
                    seconds[name][side] += elapsed
                    per_page[name][side][i] += elapsed
                a, b = outcomes["lean"], outcomes["default"]
                if len(a) != len(b):
                    outcome_mismatch[name].add(page_id)
                elif a[0] != b[0]:
                    text_mismatch[name].add(page_id)
                elif len(a) == 2 and a[1] != b[1]:
                    title_mismatch[name].add(page_id)
    calls = len(pages) * rounds
    ms = {name: {side: 1000 * s / calls for side, s in sides.items()} for name, sides in seconds.items()}
    ms["together"] = {side: sum(ms[name][side] for name in functions) for side in ("lean", "default")}
    together_ratios = [
        sum(per_page[n]["default"][i] for n in functions) / sum(per_page[n]["lean"][i] for n in functions)
        for i in range(len(pages))
    ]
    # A newspaper4k difference: is it the tie order (the default call is unfixed) or the lean path?
    newspaper_vs_full_parse = {}
    html_of = {page_id: (html, url) for page_id, html, url in pages}
    for page_id in sorted(
        text_mismatch["newspaper4k"] | title_mismatch["newspaper4k"] | outcome_mismatch["newspaper4k"]
    ):
        html, url = html_of[page_id]
        same = (
            _call(adapters.extract_newspaper4k, html, url)[1] == _call(reference.newspaper4k_full_parse, html, url)[1]
        )
        newspaper_vs_full_parse[page_id] = "lean == full parse with the tie fix" if same else "LEAN PATH DIFFERS"
    return {
        "pages": len(pages),
        "rounds": rounds,
        "ms_per_page": ms,
        "speedup": {name: v["default"] / v["lean"] for name, v in ms.items()},
        "together_per_page_ratio": {
            "median": statistics.median(together_ratios),
            "min": min(together_ratios),
            "max": max(together_ratios),
        },
        "text_mismatches": {name: sorted(ids) for name, ids in text_mismatch.items()},
        "title_mismatches": {name: sorted(ids) for name, ids in title_mismatch.items()},
        "exception_mismatches": {name: sorted(ids) for name, ids in outcome_mismatch.items()},
        "newspaper4k_mismatch_check": newspaper_vs_full_parse,
    }


# --------------------------------------------------------------------------- b. end to end


def _wall(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    return time.perf_counter() - t0, done.stdout


def end_to_end(manifest: Path, rounds: int, tmp: Path, env: dict[str, str]) -> dict[str, Any]:
    out = tmp / "cli_extracted.json"
    commands = {
        "cli": [*_console_script(), "extract", str(manifest), "--workers", "1", "-o", str(out)],
        "default_calls": [sys.executable, "-c", PLAIN_CALLS, str(manifest), "default"],
        "lean_calls": [sys.executable, "-c", PLAIN_CALLS, str(manifest), "lean"],
    }
    times: dict[str, list[float]] = {label: [] for label in commands}
    stdout = {}
    for r in range(rounds):
        order = list(commands) if r % 2 == 0 else list(reversed(commands))
        for label in order:
            out.unlink(missing_ok=True)
            elapsed, stdout[label] = _wall(commands[label], env)
            times[label].append(elapsed)
            print(f"  b. {label:<14} {elapsed:8.2f} s", flush=True)
    best = {label: min(v) for label, v in times.items()}
    return {
        "commands": {
            label: " ".join(c if c != PLAIN_CALLS else "<PLAIN_CALLS>" for c in cmd) for label, cmd in commands.items()
        },
        "seconds": best,
        "speedup": best["default_calls"] / best["cli"],
        "engine_overhead": best["cli"] / best["lean_calls"],
        "all_times": times,
        "cli_output": stdout["cli"].strip(),
        "default_calls_output": json.loads(stdout["default_calls"]),
        "lean_calls_output": json.loads(stdout["lean_calls"]),
    }


# --------------------------------------------------------------------------- c. the engine, before and after


def _articles(path: Path) -> dict[str, dict[str, tuple[Any, ...]]]:
    doc = json.loads(path.read_bytes())
    return {
        a["id"]: {n: (a[n][TEXT_FIELDS[n]], a[n]["error"], a[n].get("title")) for n in TEXT_FIELDS}
        for a in doc["articles"]
    }


def engine(manifest: Path, rounds: int, tmp: Path, env: dict[str, str]) -> dict[str, Any]:
    runs = [(variant, workers) for workers in (1, 2) for variant in ("before", "after")]
    figures: dict[str, list[dict[str, Any]]] = {f"{v}, {w} worker{'s' * (w > 1)}": [] for v, w in runs}
    articles: dict[tuple[str, int], list[dict[str, dict[str, tuple[Any, ...]]]]] = {run: [] for run in runs}
    for r in range(rounds):
        for workers in (1, 2):
            variants = ("before", "after") if (r + workers) % 2 else ("after", "before")
            for variant in variants:
                out = tmp / f"engine-{variant}-{workers}.json"
                out.unlink(missing_ok=True)
                command = [sys.executable, "-c", ENGINE_DRIVER, str(manifest), str(out), str(workers), variant]
                wall, stdout = _wall(command, env)
                info = {**json.loads(stdout), "process_seconds": wall}
                info["pages_per_second"] = info["pages"] / info["seconds"]
                label = f"{variant}, {workers} worker{'s' * (workers > 1)}"
                figures[label].append(info)
                articles[(variant, workers)].append(_articles(out))
                print(f"  c. {label:<18} {info['seconds']:8.2f} s  {info['pages_per_second']:6.2f} pages/s", flush=True)
    best = {label: max(v, key=lambda x: x["pages_per_second"]) for label, v in figures.items()}
    pps = {label: b["pages_per_second"] for label, b in best.items()}
    # "after" against "before", run by run (same round, same workers): texts and errors, titles apart
    text_diff: dict[str, set[str]] = {n: set() for n in TEXT_FIELDS}
    title_diff: dict[str, set[str]] = {n: set() for n in TEXT_FIELDS}
    for workers in (1, 2):
        for before, after in zip(articles[("before", workers)], articles[("after", workers)]):
            for article_id, blocks in after.items():
                for n, (text, error, title) in blocks.items():
                    b_text, b_error, b_title = before[article_id][n]
                    if (text, error) != (b_text, b_error):
                        text_diff[n].add(article_id)
                    elif title != b_title:
                        title_diff[n].add(article_id)
    # each variant against itself over every run (rounds and worker counts)
    unstable: dict[str, dict[str, list[str]]] = {}
    for variant in ("before", "after"):
        batches = [b for (v, _), bs in articles.items() if v == variant for b in bs]
        unstable[variant] = {
            n: sorted(i for i in batches[0] if len({b[i][n] for b in batches}) > 1) for n in TEXT_FIELDS
        }
    return {
        "pages_per_second": pps,
        "seconds": {label: b["seconds"] for label, b in best.items()},
        "speedup": {
            "1 worker": pps["after, 1 worker"] / pps["before, 1 worker"],
            "2 workers": pps["after, 2 workers"] / pps["before, 2 workers"],
            "before, 2 workers / 1": pps["before, 2 workers"] / pps["before, 1 worker"],
            "after, 2 workers / 1": pps["after, 2 workers"] / pps["after, 1 worker"],
        },
        "after_vs_before_text_or_error_differs": {n: sorted(ids) for n, ids in text_diff.items()},
        "after_vs_before_title_differs": {n: sorted(ids) for n, ids in title_diff.items()},
        "differs_between_runs_of_one_variant": unstable,
        "all_runs": figures,
    }


# --------------------------------------------------------------------------- report


def _ids(ids: list[str]) -> str:
    return f"{len(ids)}" + (f" ({', '.join(ids)})" if ids else "")


def _goal(ratio: float, goal: float) -> str:
    return f"x{ratio:.2f} (goal x{goal:g}: {'met' if ratio >= goal else 'NOT met'})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=None, help="only the first N pages (smoke runs)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--skip", nargs="*", default=[], choices=["a", "b", "c"], help="parts to leave out")
    ap.add_argument("--json", type=Path, default=OUT / "extraction_speed.json")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    result: dict[str, Any] = {"machine": machine(), "rounds": args.rounds}
    with tempfile.TemporaryDirectory(prefix="cs-extraction-speed-") as name:
        tmp = Path(name)
        manifest = pages_manifest(args.pages, tmp)
        result["pages_input"] = (
            str(manifest.relative_to(ROOT)) if manifest.is_relative_to(ROOT) else f"first {args.pages} pages"
        )
        env = prefect_env(tmp / "prefect-home")
        if "a" not in args.skip:
            print("a. one process, lean against default, interleaved per page:", flush=True)
            a = result["in_process"] = in_process(manifest, args.rounds)
            print(f"   {a['pages']} pages x {a['rounds']} rounds")
            print(
                f"   {'extractor':<12} {'default ms/page':>16} {'lean ms/page':>13} {'speed-up':>9}"
                f"  {'text diff':>9} {'title diff':>10} {'exc diff':>8}"
            )
            for name_ in (*(p[0] for p in PAIRS), "together"):
                ms = a["ms_per_page"][name_]
                diffs = (
                    (
                        len(a["text_mismatches"][name_]),
                        len(a["title_mismatches"][name_]),
                        len(a["exception_mismatches"][name_]),
                    )
                    if name_ != "together"
                    else ("", "", "")
                )
                print(
                    f"   {name_:<12} {ms['default']:16.1f} {ms['lean']:13.1f} {a['speedup'][name_]:8.2f}x"
                    f"  {diffs[0]!s:>9} {diffs[1]!s:>10} {diffs[2]!s:>8}"
                )
            ratio = a["together_per_page_ratio"]
            print(
                f"   per page, the three together: median x{ratio['median']:.2f} "
                f"(min x{ratio['min']:.2f}, max x{ratio['max']:.2f})"
            )
            for kind in ("text_mismatches", "title_mismatches", "exception_mismatches"):
                for name_, ids in a[kind].items():
                    if ids:
                        print(f"   {kind.replace('_', ' ')}, {name_}: {_ids(ids)}")
            for page_id, verdict in a["newspaper4k_mismatch_check"].items():
                print(f"   newspaper4k {page_id}: {verdict}")
            print(f"   the three together: {_goal(a['speedup']['together'], GOAL_IN_PROCESS)}", flush=True)
        if "b" not in args.skip:
            print("b. end to end, fresh processes, wall clock, alternating:", flush=True)
            b = result["end_to_end"] = end_to_end(manifest, args.rounds, tmp, env)
            print(
                f"   content-selection extract --workers 1: {b['seconds']['cli']:.2f} s; "
                f"default calls in a plain process: {b['seconds']['default_calls']:.2f} s (fastest of {args.rounds})"
            )
            print(f"   end to end: {_goal(b['speedup'], GOAL_END_TO_END)}", flush=True)
            print(
                f"   the engine's own overhead: the command takes x{b['engine_overhead']:.3f} the time of the same "
                f"lean calls in a plain process ({b['seconds']['lean_calls']:.2f} s)",
                flush=True,
            )
        if "c" not in args.skip:
            print("c. the engine (extract_to_file), before (default calls) and after (lean adapters):", flush=True)
            c = result["engine"] = engine(manifest, args.rounds, tmp, env)
            for label, pps in c["pages_per_second"].items():
                print(f"   {label:<18} {pps:7.2f} pages/s  ({c['seconds'][label]:.2f} s, fastest of {args.rounds})")
            for label, ratio in c["speedup"].items():
                print(f"   {label:<22} x{ratio:.2f}")
            for name_, ids in c["after_vs_before_text_or_error_differs"].items():
                print(f"   after vs before, {name_} text or error differs: {_ids(ids)}")
            for name_, ids in c["after_vs_before_title_differs"].items():
                if ids:
                    print(f"   after vs before, {name_} title differs: {_ids(ids)}")
            for variant, per in c["differs_between_runs_of_one_variant"].items():
                for name_, ids in per.items():
                    if ids:
                        print(f"   {variant}: {name_} differs between its own runs: {_ids(ids)}")
    result["run_seconds"] = time.perf_counter() - started
    print(f"run time {result['run_seconds']:.0f} s; machine: {result['machine']}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
