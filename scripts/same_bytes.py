"""Run the commands of this checkout and of another on the same inputs, and compare what they write.

    python scripts/same_bytes.py /path/to/other/checkout [--skip-extract]

The other checkout needs its compiled kernel (``selection_core/*.so``) in place. Compared byte for byte:
selected batches and reports (``select``, ``run`` in-process and on the process pool), ``explain``'s text,
extracted batches and their records (``extract`` of the real pages and the WARC fixtures); a crawl of
``tests/data/crawl`` as batches and as a dataset (every output and record; ``crawl.json`` names its run); and, for
every file of the bad-input corpus, the exit status and that nothing was written (the refusals' words may differ).
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


def crawl_here(out: Path, output_format: str) -> None:
    """Crawl ``tests/data/crawl`` into ``out`` with the checkout first on ``sys.path`` (``--crawl-into``)."""
    import selection_crawl
    from selection_crawl.job import CrawlJob
    from selection_crawl.unit import crawl_warc

    here = Path(selection_crawl.__file__).resolve()
    assert here.is_relative_to(Path.cwd().resolve()), f"{here} is not the checkout's (run from the checkout)"
    listing = DATA / "crawl/crawl-data/CC-MAIN-2024-18/warc.paths.gz"
    job = CrawlJob.plan(str(listing), str(out), f"{DATA / 'crawl'}/", 30.0, output_format=output_format)
    for index in list(job.todo):
        job.finish_warc(index, crawl_warc(job.warc_job(index)))
    job.close()


def crawl(checkout: Path, output_format: str, out: Path, home: Path) -> tuple[int, dict[str, bytes]]:
    """The files of a crawl by ``checkout`` (but ``crawl.json``, which names its run), by path under ``out``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "CONTENT_SELECTION_"))}
    env.update(PYTHONPATH=str(checkout), PREFECT_HOME=str(home), PYTHONHASHSEED="0")
    argv = [sys.executable, __file__, "--crawl-into", str(out), output_format]
    done = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True, timeout=1800)
    files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    files.pop("crawl.json", None)
    return done.returncode, files


def main() -> int:
    if sys.argv[1:2] == ["--crawl-into"]:
        crawl_here(Path(sys.argv[2]), sys.argv[3])
        return 0
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
        formats = [] if args.skip_extract else ["batch", "dataset"]
        for output_format in formats:
            mine = crawl(ROOT, output_format, scratch / f"crawl-{output_format}-this", scratch / "home-this")
            theirs = crawl(
                args.other.resolve(), output_format, scratch / f"crawl-{output_format}-other", scratch / "home-other"
            )
            same = mine == theirs and mine[0] == 0
            differences += not same
            verdict = "same     " if same else "DIFFERENT"
            print(f"{verdict} crawl as {output_format} (exit {mine[0]}, {len(mine[1])} files)")
    total = len(todo) + len(formats)
    print(f"{total - differences} of {total} the same")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
