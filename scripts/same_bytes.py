"""Run the commands of this checkout and of another on the same inputs, and compare what they write.

    python scripts/same_bytes.py /path/to/other/checkout [--skip-extract]

The other checkout needs its compiled kernel (``selection_core/*.so``) in place. Compared byte for byte:
selected batches and reports (``select``, ``run`` in-process and on the process pool), ``explain``'s text,
extracted batches and their records (``extract`` of the real pages and the WARC fixtures); and, for every
file of the bad-input corpus, the exit status and that nothing was written (the refusals' words may differ).
Prints one line per difference and exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _batches import SOURCE_BATCH, build_distinct  # noqa: E402

DATA = ROOT / "tests" / "data"


def jobs(inputs: Path, skip_extract: bool) -> list[tuple[str, list[str]]]:
    """(name, arguments of ``content-selection``) for every comparison; ``{out}`` is the run's output folder."""
    batches = [SOURCE_BATCH, ROOT / "examples/sample_extracted.json", inputs / "big_extracted.json"]
    batches.append(inputs / "big_extracted.jsonl")
    out: list[tuple[str, list[str]]] = []
    for b in batches:
        suffix = b.suffix
        out.append((f"select {b.name}", ["select", str(b), "-o", f"{{out}}/s{suffix}", "--report", "{out}/r.jsonl"]))
        out.append((f"run {b.name}", ["run", str(b), "-o", f"{{out}}/s{suffix}", "--report", "{out}/r.jsonl"]))
        out.append((f"run process {b.name}", ["run", str(b), "-o", f"{{out}}/s{suffix}", "--task-runner", "process"]))
        out.append((f"explain {b.name}", ["explain", str(b), "--index", "3"]))
    if not skip_extract:
        out.append(("extract aeb-pages", ["extract", str(DATA / "aeb-pages"), "-o", "{out}/e.json", "--workers", "2"]))
        for warc in sorted((DATA / "warc").glob("*.warc*")):
            out.append((f"extract {warc.name}", ["extract", str(warc), "-o", "{out}/e.json"]))
    for bad in sorted((DATA / "bad").glob("*.json*")):
        if bad.name != "cases.json":
            out.append((f"refuse {bad.name}", ["select", str(bad), "-o", "{out}/s.json"]))
    return out


def run(checkout: Path, args: list[str], out: Path, home: Path) -> tuple[int, str, dict[str, bytes]]:
    out.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "CONTENT_SELECTION_"))}
    env.update(PYTHONPATH=str(checkout), PREFECT_HOME=str(home), PYTHONHASHSEED="0")
    argv = [sys.executable, "-m", "selection_cli.main", *(a.replace("{out}", str(out)) for a in args)]
    done = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True, timeout=1800)
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    stdout = done.stdout.replace(str(out), "{out}") if args[0] == "explain" else ""
    return done.returncode, stdout, files


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("other", type=Path, help="the other checkout")
    ap.add_argument("--skip-extract", action="store_true", help="compare the selection only")
    args = ap.parse_args()
    differences = 0
    with tempfile.TemporaryDirectory(prefix="same-bytes-") as tmp:
        scratch = Path(tmp)
        build_distinct(scratch / "big_extracted.json", 1500)
        build_distinct(scratch / "big_extracted.jsonl", 1500)
        todo = jobs(scratch, args.skip_extract)
        for number, (name, argv) in enumerate(todo):
            this = run(ROOT, argv, scratch / f"{number}-this", scratch / "home-this")
            other = run(args.other.resolve(), argv, scratch / f"{number}-other", scratch / "home-other")
            same = this == other
            differences += not same
            print(f"{'same     ' if same else 'DIFFERENT'} {name} (exit {this[0]}, files {sorted(this[2])})")
    print(f"{len(todo) - differences} of {len(todo)} the same")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
