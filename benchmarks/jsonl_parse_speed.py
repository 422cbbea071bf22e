#!/usr/bin/env python3
"""Speed of `selection_core.jsonl.parse_lines` against `selection_core.batch.parse_batch`, same articles.

    python benchmarks/jsonl_parse_speed.py              # 181 real articles x 20 (about 52 MB)
    python benchmarks/jsonl_parse_speed.py --repeat 5 --rounds 9

The 181 articles of tests/data/aeb_batch_extracted.json, repeated, are written as a
JSON batch (`dump_batch`) and as JSON Lines (`render_lines`); each parser reads its
bytes, whole and in runs of about 8 MiB of whole articles (as the streamed engine
reads a batch), and the fastest of --rounds rounds of each is compared, the two
alternating so that load from other work on the machine affects both alike.
Goal (issue 14): JSON Lines within 10% of the JSON batch. The figures are printed.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from selection_core.batch import dump_batch, parse_batch
from selection_core.jsonl import parse_lines, render_lines
from selection_core.layout import RUN_PREFIX, RUN_SUFFIX, runs_of, scan_layout

ROOT = Path(__file__).resolve().parents[1]
BATCH = ROOT / "tests/data/aeb_batch_extracted.json"
RUN_BYTES = 8 << 20


def _json_runs(data: bytes) -> list[bytes]:
    layout = scan_layout(data)
    assert layout is not None
    per_run = max(1, RUN_BYTES * layout.articles // len(data))
    return [RUN_PREFIX + data[r.begin : r.end] + RUN_SUFFIX for r in runs_of(layout, per_run).runs]


def _line_runs(data: bytes) -> list[tuple[bytes, int, int]]:
    runs, start, line = [], 0, 1
    while start < len(data):
        stop = data.find(b"\n", min(start + RUN_BYTES, len(data)) - 1)
        stop = len(data) if stop < 0 else stop + 1
        piece = data[start:stop]
        runs.append((piece, line, start))
        line += piece.count(b"\n")
        start = stop
    return runs


def _time(f: Callable[[], object], times: list[float]) -> None:
    start = time.perf_counter()
    f()
    times.append(time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    articles = orjson.loads(BATCH.read_bytes())["articles"] * args.repeat
    json_data = dump_batch({"articles": articles})
    lines_data = render_lines(articles)
    assert parse_lines(lines_data) == parse_batch(json_data)["articles"]
    json_runs, line_runs = _json_runs(json_data), _line_runs(lines_data)
    cases: dict[str, Callable[[], object]] = {
        "json whole": lambda: parse_batch(json_data),
        "jsonl whole": lambda: parse_lines(lines_data),
        "json runs": lambda: [parse_batch(r) for r in json_runs],
        "jsonl runs": lambda: [parse_lines(r, "b.jsonl", line, offset) for r, line, offset in line_runs],
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, f in cases.items():
            _time(f, times[name])
    best = {name: min(t) for name, t in times.items()}
    print(f"{len(articles)} articles; JSON {len(json_data) / 1e6:.1f} MB, JSON Lines {len(lines_data) / 1e6:.1f} MB")
    for name, seconds in best.items():
        print(f"{name:12} {seconds * 1000:8.1f} ms")
    for how in ("whole", "runs"):
        print(f"ratio jsonl/json ({how}): {best[f'jsonl {how}'] / best[f'json {how}']:.3f}")


if __name__ == "__main__":
    main()
