"""Run one measured job in a fresh process and print its figures as JSON.

Used by the benchmark scripts so that every measurement has its own peak RSS.
Time covers the work only (not interpreter start-up or imports): wall-clock
seconds, and the CPU seconds of the process, which other load on a shared
machine disturbs much less.
"""

from __future__ import annotations

import json
import resource
import sys
import time


def _rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    job, inp, out = sys.argv[1], sys.argv[2], sys.argv[3]
    import orjson

    from selection_core.io import select_file

    base = _rss_mib()
    t0 = time.perf_counter()
    c0 = time.process_time()
    if job == "floor":
        with open(inp, "rb") as fh:
            doc = orjson.loads(fh.read())
        with open(out, "wb") as fh:
            fh.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    elif job == "select":
        select_file(inp, out)
    else:
        raise SystemExit(f"unknown job {job}")
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps({"job": job, "seconds": elapsed, "cpu_seconds": cpu, "peak_rss_mib": peak, "baseline_rss_mib": base})
    )


if __name__ == "__main__":
    main()
