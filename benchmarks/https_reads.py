#!/usr/bin/env python3
"""What a crawl over HTTPS asks the server for, for one WARC: clean, and when the crawl is killed in the middle and
run again (the WARC taken up from its last commit with a Range request, not from its start).

    python benchmarks/https_reads.py --pages 1200
    python benchmarks/https_reads.py --pages 80 --commit-pages 20     # smoke run

One WARC of ``--pages`` real pages (``scripts/make_crawl_fixtures.py``) served by Debian's nginx over TLS on
127.0.0.1 (``tests/support/https_server.py``), crawled by the command line as a user runs it (``--workers 1``,
``SSL_CERT_FILE`` the server's CA). The bytes asked for are nginx's own count (the access log's body bytes of each
GET of the WARC). Run 1 is clean. Run 2 is SIGKILLed (the command and every process under it) once the WARC has
its second commit; run 3 is the same command again. Printed: the WARC's size, each run's bytes asked for over that
size, the first byte run 3 asked for (where its last commit left the WARC), and whether run 3's output is run 1's,
byte for byte.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _gets(server: Any, path: str, after: int = 0) -> list[dict[str, Any]]:
    """The GETs of ``path`` nginx logged, from entry number ``after`` on."""
    return [r for r in server.requests()[after:] if r["method"] == "GET" and r["uri"] == path]


def _start(range_header: str) -> int:
    return int(range_header.removeprefix("bytes=").split("-")[0]) if range_header else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1200, help="HTML pages of the WARC")
    parser.add_argument("--commit-pages", type=int, default=300, help="pages between two commits (the default's)")
    args = parser.parse_args()

    import psutil

    from selection_crawl.commits import COMMIT_PAGES_VARIABLE
    from tests.support.crawls import write_crawl
    from tests.support.faultkit import child_env
    from tests.support.https_server import HttpsServer

    work = Path(tempfile.mkdtemp(prefix="https-reads-"))
    results: dict[str, Any] = {"pages": args.pages, "load_average": os.getloadavg()}
    try:
        with HttpsServer() as server:
            (key,) = write_crawl(server.root, 1, args.pages)
            warc = server.root / key
            results["warc_bytes"] = size = warc.stat().st_size
            listing = server.url("crawl-data/CC-MAIN-2024-18/warc.paths.gz")
            path = "/" + key

            def command(name: str) -> tuple[list[str], dict[str, str]]:
                argv = [sys.executable, "-m", "selection_cli.main", "crawl", listing, "--base", server.url(""),
                        "-o", str(work / name), "--workers", "1", "--time-limit", "60"]  # fmt: skip
                env = {k: v for k, v in child_env().items() if not k.startswith("PREFECT_")} | server.env
                env |= {"PREFECT_HOME": str(work / f"home-{name}"), COMMIT_PAGES_VARIABLE: str(args.commit_pages)}
                return argv, env

            def run(name: str) -> float:
                argv, env = command(name)
                started = time.perf_counter()
                subprocess.run(argv, env=env, cwd=work, check=True, capture_output=True)
                return time.perf_counter() - started

            mark = len(server.requests())
            results["clean_seconds"] = round(run("clean"), 1)
            clean = _gets(server, path, mark)
            results["clean_gets"] = len(clean)
            results["clean_requested_over_size"] = round(sum(r["body_bytes_sent"] for r in clean) / size, 4)

            mark = len(server.requests())
            argv, env = command("killed")
            victim = subprocess.Popen(argv, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 1800
            while len(list((work / "killed").rglob("*.commit"))) < 2:
                if victim.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the crawl to kill ended before its WARC had two commits: give more --pages")
                time.sleep(0.2)
            tree = [psutil.Process(victim.pid), *psutil.Process(victim.pid).children(recursive=True)]
            for process in tree:
                process.kill()
            victim.wait()
            before_kill = _gets(server, path, mark)
            results["killed_run_requested_over_size"] = round(sum(r["body_bytes_sent"] for r in before_kill) / size, 4)

            mark = len(server.requests())
            results["resumed_seconds"] = round(run("killed"), 1)
            resumed = _gets(server, path, mark)
            taken_up = [r for r in resumed if _start(r["range"]) > 0]
            offset = _start(taken_up[0]["range"]) if taken_up else 0
            results["resumed_first_byte_asked"] = offset
            results["resumed_gets_from_byte_0"] = len(resumed) - len(taken_up)
            results["resumed_bytes_from_byte_0"] = sum(r["body_bytes_sent"] for r in resumed if r not in taken_up)
            requested = sum(r["body_bytes_sent"] for r in taken_up)
            results["resumed_requested_after_the_commit_over_the_tail"] = round(requested / (size - offset), 4)
            results["resumed_requested_over_size"] = round(sum(r["body_bytes_sent"] for r in resumed) / size, 4)
            summary = json.loads((work / "killed" / "crawl.json").read_bytes())
            (line,) = summary["warcs"]
            results["resumed_from_commits_pages"] = line.get("from_commits", 0)
            output = line["output"]
            results["same_bytes_as_clean"] = (work / "killed" / output).read_bytes() == (
                work / "clean" / output
            ).read_bytes()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
