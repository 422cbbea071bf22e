#!/usr/bin/env python3
"""Peak memory of ``content-selection select`` on very large fields and very many articles.

    python benchmarks/memory_large_fields.py                 # all shapes
    python benchmarks/memory_large_fields.py --only many-tiny --articles 100000

Each shape is a synthetic batch written to a temporary directory; the command
runs in a subprocess, and its peak resident memory is read from the kernel
(``wait4``'s ``ru_maxrss``). For comparison the same is measured for the floor:
a process that imports the core and only loads and writes the file with
orjson. Printed per shape: input size, peak RSS, peak RSS / input size (the
memory bound of the core issue is 3x), the floor's, the baseline RSS of an
interpreter that imported the core and did nothing, and the wall time (for
information; nothing is asserted). The output is checked, too: N articles
in, N out, the big text byte-identical.

Shapes:

* ``one-50mb-text``: one article whose ``newspaper4k.text`` is 50 MB (about
  8 million words), beside a 1 MB ``trafilatura.text`` and a missing readability;
* ``three-50mb-texts``: one article with three 50 MB texts that mostly agree
  (150 MB of text, the worst case of one article);
* ``many-tiny``: 200,000 tiny articles.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

MB = 1_000_000


def _words(rng: random.Random, approx_bytes: int) -> str:
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(5000)]
    out: list[str] = []
    size = 0
    while size < approx_bytes:
        chunk = " ".join(rng.choices(vocab, k=1000))
        out.append(chunk)
        size += len(chunk) + 1
    return " ".join(out)


def one_big_text(size: int) -> bytes:
    rng = random.Random(50)
    big = _words(rng, size)
    article = {
        "id": "big-1",
        "trafilatura": {"text": big[: size // 50], "error": None},
        "newspaper4k": {"text": big, "error": None},
    }
    return orjson.dumps({"articles": [article, {"id": "small", "newspaper4k": {"text": "a b c"}}]}) + b"\n"


def three_big_texts(size: int) -> bytes:
    rng = random.Random(51)
    big = _words(rng, size)
    cut = len(big) * 9 // 10
    article = {
        "id": "big-3",
        "trafilatura": {"text": big},
        "newspaper4k": {"text": big[:cut]},
        "readability": {"cleaned_text": "Menu Home " + big + " Footer"},
    }
    return orjson.dumps({"articles": [article]}) + b"\n"


def many_tiny(count: int) -> bytes:
    articles = [
        {"id": i, "trafilatura": {"text": f"w{i % 97} x y z"}, "newspaper4k": {"text": f"w{i % 97} x y z q"}}
        for i in range(count)
    ]
    return orjson.dumps({"articles": articles}, option=orjson.OPT_INDENT_2) + b"\n"


FLOOR = (
    "import sys, orjson, selection_core\n"
    "data = open(sys.argv[1], 'rb').read()\n"
    "doc = orjson.loads(data); del data\n"
    "out = orjson.dumps(doc, option=orjson.OPT_INDENT_2)\n"
    "open(sys.argv[2], 'wb').write(out)\n"
)


def peak_rss(cmd: list[str]) -> tuple[int, float, int]:
    """(peak RSS in bytes, seconds, exit status) of a child process."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.monotonic() - start
    if proc.returncode != 0 and proc.stderr is not None:
        print(proc.stderr.read().decode().strip(), file=sys.stderr)
    if proc.stderr is not None:
        proc.stderr.close()
    return usage.ru_maxrss * 1024, elapsed, proc.returncode


def measure(name: str, make: Callable[[], bytes], workdir: Path) -> dict[str, float]:
    inp = workdir / f"{name}_extracted.json"
    data = make()
    inp.write_bytes(data)
    n_articles = len(orjson.loads(data)["articles"])
    del data
    size = inp.stat().st_size
    rss, seconds, status = peak_rss([sys.executable, "-m", "selection_cli.main", "select", str(inp)])
    if status != 0:
        raise SystemExit(f"{name}: select failed with status {status}")
    out = inp.with_name(f"{name}_extracted_selected.json")
    doc_in, doc_out = orjson.loads(inp.read_bytes()), orjson.loads(out.read_bytes())
    assert len(doc_out["articles"]) == n_articles
    for a_in, a_out in zip(doc_in["articles"], doc_out["articles"], strict=True):
        assert {k: v for k, v in a_out.items() if k != "selected_extractor"} == a_in
    del doc_in, doc_out
    floor_rss, floor_s, _ = peak_rss([sys.executable, "-c", FLOOR, str(inp), str(workdir / "floor.json")])
    out.unlink()
    (workdir / "floor.json").unlink()
    inp.unlink()
    return {
        "input_mb": size / MB,
        "articles": n_articles,
        "peak_mb": rss / MB,
        "ratio": rss / size,
        "floor_mb": floor_rss / MB,
        "floor_ratio": floor_rss / size,
        "seconds": seconds,
        "floor_seconds": floor_s,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["one-50mb-text", "three-50mb-texts", "many-tiny"], action="append")
    parser.add_argument("--text-mb", type=float, default=50.0, help="size of a big text in MB (default 50)")
    parser.add_argument("--articles", type=int, default=200_000, help="articles of many-tiny (default 200000)")
    args = parser.parse_args(argv)
    size = int(args.text_mb * MB)
    shapes: dict[str, Callable[[], bytes]] = {
        "one-50mb-text": lambda: one_big_text(size),
        "three-50mb-texts": lambda: three_big_texts(size),
        "many-tiny": lambda: many_tiny(args.articles),
    }
    base_rss, _, _ = peak_rss([sys.executable, "-c", "import selection_cli.main, selection_engine"])
    print(f"baseline: an interpreter that imported the core peaks at {base_rss / MB:.0f} MB")
    header = ("shape", "input MB", "articles", "peak MB", "peak/input", "floor MB", "floor/input", "s")
    print(f"{header[0]:<18} " + " ".join(f"{h:>{w}}" for h, w in zip(header[1:], (9, 9, 8, 10, 9, 11, 6), strict=True)))
    with tempfile.TemporaryDirectory(prefix="memory-large-") as d:
        for name, make in shapes.items():
            if args.only and name not in args.only:
                continue
            r = measure(name, make, Path(d))
            print(
                f"{name:<18} {r['input_mb']:>9.1f} {r['articles']:>9} {r['peak_mb']:>8.0f} {r['ratio']:>10.2f} "
                f"{r['floor_mb']:>9.0f} {r['floor_ratio']:>11.2f} {r['seconds']:>6.1f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
