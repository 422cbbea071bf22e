"""Run one measured job in a fresh process and print its figures as JSON.

Used by the benchmark scripts so that every measurement has its own peak RSS.
Time covers the work only (not interpreter start-up or imports).

    python benchmarks/_child.py floor|floor-lines|select INPUT OUTPUT
    python benchmarks/_child.py flow INPUT OUTPUT RUNNER CHUNK_SIZE [DASK_ADDRESS]   # CHUNK_SIZE 0: the default
    python benchmarks/_child.py extract PAGES_DIR OUTPUT WORKERS
    python benchmarks/_child.py extract-flow PAGES_DIR OUTPUT RUNNER WORKERS [DASK_ADDRESS|"" [PAGES_PER_CHUNK]]

``flow`` (``extract-flow``) runs the ``select-content`` (``extract-articles``)
flow on the embedded Prefect API, started before the clock (so its start-up is not counted; ``benchmarks/overhead.py``
measures it), and reports the peak RSS of this process and, separately, of its
largest finished child (process-pool or Dask workers). ``floor`` is the orjson
load of the whole file and its write (indented, as the selected batch is);
``floor-lines`` the same for JSON Lines, line by line (compact, one object a line).

``run_tree`` (imported by the benchmark scripts, not run here) runs any command in a
fresh process and samples the memory of its whole process tree.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any


def _rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _warm_up_prefect() -> None:
    """Start the embedded API (and import the flow) before the clock starts."""
    from prefect.client.orchestration import get_client

    import content_selection.flows.extract_articles  # noqa: F401
    import content_selection.flows.select_content  # noqa: F401

    with get_client(sync_client=True) as client:
        client.api_healthcheck()


def _fixed_task_seconds(flow_run_id: object) -> float:
    """Run time of the flow's tasks other than the scoring ones (read, write, artifacts)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    deadline = time.monotonic() + 60
    with get_client(sync_client=True) as client:
        while True:
            runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            fixed = [r for r in runs if not r.name.startswith(("select-chunk", "select-extractors"))]
            if (len(fixed) >= 4 and all(r.state and r.state.is_final() for r in fixed)) or time.monotonic() > deadline:
                return sum(r.total_run_time.total_seconds() for r in fixed)
            time.sleep(0.5)


class _TreePeak(threading.Thread):
    """Every ``interval`` seconds, the sum of the RSS of process ``pid`` and all its descendants
    (psutil: ``Process.children(recursive=True)``, each one's ``memory_info().rss``); keeps the
    largest sum. Pages shared between processes (a forked worker's) are counted in each."""

    def __init__(self, pid: int, interval: float) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.stopping = threading.Event()
        self.peak_bytes = self.samples = self.most_processes = 0

    def run(self) -> None:
        import psutil

        try:
            root = psutil.Process(self.pid)
        except psutil.NoSuchProcess:
            return
        while True:
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:  # the command has ended
                return
            total = alive = 0
            for proc in procs:
                try:
                    total += proc.memory_info().rss
                    alive += 1
                except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                    continue
            self.peak_bytes = max(self.peak_bytes, total)
            self.most_processes = max(self.most_processes, alive)
            self.samples += 1
            if self.stopping.wait(self.interval):
                return


def run_tree(command: list[str], env: dict[str, str], cwd: str | Path, interval: float = 0.02) -> dict[str, Any]:
    """Run ``command`` to its end in a fresh process, sampling its process tree's memory (``_TreePeak``).

    Returns the exit status, the wall time from start to exit, the tree's peak RSS, the
    kernel's peak RSS of the command (``wait4``: the command and the descendants it
    reaped itself), the number of samples and their mean interval, the most processes
    seen at once, and the command's stdout and the end of its stderr.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        process = subprocess.Popen(command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        sampler = _TreePeak(process.pid, interval)
        sampler.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            sampler.stopping.set()
            sampler.join()
        seconds = time.perf_counter() - t0
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    return {
        "status": process.returncode,
        "seconds": seconds,
        "tree_peak_rss_mib": sampler.peak_bytes / 2**20,
        "command_peak_rss_mib": usage.ru_maxrss / 1024,
        "samples": sampler.samples,
        "mean_sample_interval_s": seconds / sampler.samples if sampler.samples else None,
        "most_processes": sampler.most_processes,
        "stdout": stdout,
        "stderr_tail": stderr[-2000:],
    }


def main() -> None:
    job, inp, out = sys.argv[1], sys.argv[2], sys.argv[3]
    extra = sys.argv[4:]
    import orjson

    from selection_cli.environment import apply_kernel_setting
    from selection_engine import select_file

    apply_kernel_setting()  # CONTENT_SELECTION_PURE=1 measures the pure-Python path, as for the command
    if job in ("flow", "extract-flow"):
        _warm_up_prefect()
    base = _rss_mib()
    info: dict[str, object] = {}
    t0 = time.perf_counter()
    c0 = time.process_time()
    if job == "floor":
        with open(inp, "rb") as fh:
            doc = orjson.loads(fh.read())
        with open(out, "wb") as fh:
            fh.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    elif job == "floor-lines":
        with open(inp, "rb") as fh, open(out, "wb") as sink:
            for line in fh:
                sink.write(orjson.dumps(orjson.loads(line)) + b"\n")
    elif job == "select":
        select_file(inp, out)
    elif job == "flow":
        from content_selection.flows.select_content import select_content

        runner, chunk_size = extra[0], int(extra[1])
        address = extra[2] if len(extra) > 2 else None
        state = select_content(
            input_path=inp,
            output_path=out,
            task_runner=runner,
            dask_address=address,
            chunk_size=chunk_size or None,
            return_state=True,
        )
        flow_seconds = time.perf_counter() - t0
        summary = state.result()
        fixed = _fixed_task_seconds(state.state_details.flow_run_id)
        info = {
            "task_runner": runner,
            "chunk_size": chunk_size or None,
            "output_sha256": summary.output_sha256,
            "fixed_tasks_seconds": fixed,
            # Everything but the flow's own read, write and artifact tasks: the
            # scoring (on the chunked path also each chunk's read and write), plus
            # the start and stop of the runner's workers.
            "select_stage_seconds": flow_seconds - fixed,
        }
    elif job == "extract-flow":
        from content_selection.flows.extract_articles import extract_articles

        runner, workers = extra[0], int(extra[1])
        state = extract_articles(
            pages=inp,
            output_path=out,
            task_runner=runner,
            dask_address=(extra[2] or None) if len(extra) > 2 else None,
            pages_per_chunk=int(extra[3]) if len(extra) > 3 else None,
            workers=workers or None,
            emit_event=False,
            return_state=True,
        )
        summary = state.result()
        info = {"task_runner": runner, "workers": workers or None, "sha256": summary.output_sha256}
    elif job == "extract":
        from selection_extraction.extraction import ExtractionSettings, extract_to_file

        workers = int(extra[0])
        result = extract_to_file(inp, out, ExtractionSettings(workers=workers))
        info = {"workers": workers, "pages": result.result.stats.pages, "sha256": result.sha256}
    else:
        raise SystemExit(f"unknown job {job}")
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - c0  # this process only; less disturbed by other load than wall time
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "job": job,
                "seconds": elapsed,
                "cpu_seconds": cpu,
                "peak_rss_mib": peak,
                "baseline_rss_mib": base,
                "largest_child_peak_rss_mib": children,
                **info,
            }
        )
    )


if __name__ == "__main__":
    main()
