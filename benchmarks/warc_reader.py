#!/usr/bin/env python3
"""The extract step's WARC reading against an earlier revision: the same bytes on every fixture, and the time.

    python benchmarks/warc_reader.py --before e42c80c                 # every fixture, then a 1,000-page WARC
    python benchmarks/warc_reader.py --before e42c80c --pages 0       # the fixtures only

The earlier revision is checked out (``git worktree``) in a temporary folder and run from there with this venv
(``PYTHONPATH`` first: its own modules, the installed libraries). Everything is one run of each:

1. **Every web-archive fixture** of ``tests/data`` (``warc/``, ``crawl/``, ``warcio/``: warcio's own test files,
   ARC files and damaged ones among them), alone, and in a folder and a manifest with pages: ``content-selection
   extract INPUT -o OUT --workers 2`` with each revision; the exit status, the printed lines (stdout), the last line
   of stderr (a refusal) and the written bytes must be equal.
2. **Time**: ``extract`` on one WARC of ``--pages`` real pages (``scripts/make_crawl_fixtures.write_crawl``)
   with ``--workers 2``, each revision once, the earlier one first; the batches must be equal.

Nothing is asserted about time. Writes benchmarks/out/warc_reader.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _batches import OUT, ROOT, machine, prefect_env  # noqa: E402

DATA = ROOT / "tests/data"
ARCHIVE_DIRS = ("warc", "crawl", "warcio")
MAIN = "import sys; from selection_cli.main import main; sys.exit(main())"


def fixtures() -> list[Path]:
    """Every file of the fixture folders that is a web archive or is named like one."""
    names = (".warc", ".warc.gz", ".arc", ".arc.gz", ".bad")
    found = [
        path
        for folder in ARCHIVE_DIRS
        for path in (DATA / folder).rglob("*")
        if path.is_file() and path.name.lower().endswith(names)
    ]
    return sorted(found)


def mixed_inputs(work: Path) -> list[Path]:
    """A folder of pages and WARCs, and a manifest naming pages and WARCs, in one order."""
    folder = work / "mixed"
    shutil.copytree(DATA / "pages", folder)
    for name in ("pages.warc.gz", "wrong_length.warc", "truncated.warc.gz"):
        shutil.copy(DATA / "warc" / name, folder / f"m-{name}")
    manifest = work / "manifest.jsonl"
    lines = [
        {"path": str(DATA / "warc/pages_whole.warc.gz")},
        {"id": "a", "path": str(DATA / "pages" / sorted(p.name for p in (DATA / "pages").glob("*.html*"))[0])},
        {"path": str(DATA / "warcio/example.warc.gz")},
    ]
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return [folder, manifest]


def run(checkout: Path | None, args: list[str], env: dict[str, str]) -> tuple[dict[str, Any], float]:
    """``content-selection ARGS`` from ``checkout`` (None: this one); what it said and did, and its seconds."""
    env = dict(env)
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MAIN, *args], env=env, capture_output=True, text=True,
                          cwd=checkout or ROOT, check=False)  # fmt: skip
    seconds = time.perf_counter() - started
    err = done.stderr.strip().splitlines()
    return {"exit": done.returncode, "stdout": done.stdout, "stderr_last": err[-1] if err else ""}, seconds


def extract(checkout: Path | None, source: Path, target: Path, env: dict[str, str]) -> tuple[dict[str, Any], float]:
    said, seconds = run(checkout, ["extract", str(source), "-o", str(target), "--workers", "2"], env)
    said["stdout"] = said["stdout"].replace(str(target), "OUT")
    said["output"] = target.read_bytes() if target.exists() else None
    return said, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the earlier revision (a commit)")
    parser.add_argument("--pages", type=int, default=1000, help="pages of the timed WARC (0: no timing)")
    args = parser.parse_args()
    results: dict[str, Any] = {"machine": machine(), "before": args.before}
    with tempfile.TemporaryDirectory(prefix="warc-reader-") as tmp:
        work = Path(tmp)
        before = work / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(before), args.before],
                       check=True)  # fmt: skip
        try:
            env = prefect_env(work / "prefect")
            rows = []
            for source in [*fixtures(), *mixed_inputs(work)]:
                shown = str(source.relative_to(DATA)) if source.is_relative_to(DATA) else source.name
                old, _ = extract(before, source, work / "old.json", env)
                new, _ = extract(None, source, work / "new.json", env)
                for path in (work / "old.json", work / "new.json"):
                    path.unlink(missing_ok=True)
                same = old == new
                rows.append({"input": shown, "exit": new["exit"], "same": same,
                             "bytes": len(new["output"] or b""), "said": new["stderr_last"][:100]})  # fmt: skip
                print(f"{'same' if same else 'DIFFERENT':9} exit {new['exit']:3} {len(new['output'] or b''):9} B  "
                      f"{shown}  {new['stderr_last'][:90]}", flush=True)  # fmt: skip
                if not same:
                    for key in old:
                        if old[key] != new[key]:
                            print(f"    {key}: before {str(old[key])[:300]!r}")
                            print(f"    {key}: after  {str(new[key])[:300]!r}")
            results["fixtures"] = rows
            print(f"fixtures: {sum(r['same'] for r in rows)} of {len(rows)} the same", flush=True)
            if args.pages:
                sys.path.insert(0, str(ROOT / "scripts"))
                from make_crawl_fixtures import write_crawl

                write_crawl(work / "crawl", 1, args.pages)
                warc = next((work / "crawl").rglob("*.warc.gz"))
                timed = {}
                for name, checkout in (("before", before), ("after", None)):
                    said, seconds = extract(checkout, warc, work / f"{name}.json", env)
                    assert said["exit"] == 0, said
                    timed[name] = {"seconds": round(seconds, 2), "output": said["output"]}
                    print(f"extract, {args.pages} pages, 2 workers, {name}: {seconds:.1f} s", flush=True)
                equal = timed["before"]["output"] == timed["after"]["output"]
                ratio = timed["after"]["seconds"] / timed["before"]["seconds"]
                print(f"after / before: {ratio:.2f}x; batches equal: {equal}")
                results["timing"] = {"pages": args.pages, "equal": equal, "ratio": round(ratio, 3),
                                     **{k: v["seconds"] for k, v in timed.items()}}  # fmt: skip
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], check=False)
    OUT.mkdir(exist_ok=True)
    (OUT / "warc_reader.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
