"""The deployed chain under crashes, on the session's real server: no stuck run, no orphaned file, bounded load.

1. (``serve`` SIGKILLed while runs run: ``tests/prefect/test_credentials_server.py``, with runs on the stores.)
   Redis is SIGKILLed and restarted under a running selection, then the run's own process is killed: ``serve``
   lives on, the run is run again to the right bytes.
2. A burst of events for as many batches runs under the triggered deployment's concurrency limit: never
   more runs at once than the limit, one run per batch, every output right.
3. ``emit_batch_extracted`` against a server that does not answer fails the emitter, in one line.

Every wait is bounded; no assertion depends on how long anything took (the times are printed).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from content_selection.shell.events import BATCH_EXTRACTED_EVENT
from tests.support import ROOT
from tests.support.faultkit import TMP_NAME, synthetic_batch
from tests.support.prefect_fixtures import expected_output, free_port
from tests.support.prefect_server import SERVE_START_SECONDS, Server, run, start, stop, wait_until

pytestmark = [pytest.mark.server, pytest.mark.slow]

SMALL_BATCH = ROOT / "tests" / "data" / "aeb_batch_extracted.json"

#: About 5 s of selection in a flow run: long enough to be killed while it runs.
BIG_BATCH_BYTES = 60_000_000

#: Heartbeats every 30 s, dead after 90 s without one, then re-run: the whole recovery takes 2-3 minutes.
RECOVERY_SECONDS = 420
#: How long a batch announced may wait for the server to make its triggered run (it takes seconds).
TRIGGERED_RUN_SECONDS = 120

BURST = 12
BURST_LIMIT = 2

EMIT_EACH_ARGUMENT = (
    "import sys\nfrom content_selection import emit_batch_extracted\nfor p in sys.argv[1:]: emit_batch_extracted(p)"
)


def _serve(server: Server, data_root: Path, log: str, limit: int) -> subprocess.Popen[bytes]:
    args = ["serve", "--data-root", str(data_root), "--cron", "0 3 1 1 *", "--concurrency-limit", str(limit)]
    return start([sys.executable, "-m", "selection_cli.main", *args], server.env, server.logs / log)


def _wait_registered(server: Server, process: subprocess.Popen[bytes], data_root: Path, log: str) -> None:
    def registered() -> bool:
        assert process.poll() is None, (server.logs / log).read_text()[-3000:]
        triggered = server.deployment("select-content/triggered")
        names = {a.name for a in server.automations()}
        return (
            triggered is not None
            and triggered.parameters.get("data_root") == str(data_root.resolve())
            and {"content-selection-crash-silent-runs", "content-selection-rerun-crashed-runs"} <= names
        )

    wait_until("serve to register the deployments and the automations", registered, SERVE_START_SECONDS)


@pytest.fixture
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("crash-root").resolve()


@pytest.fixture
def serving(server: Server, data_root: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """The serve processes a test starts (stopped at its end, whatever happened)."""
    processes: list[subprocess.Popen[bytes]] = []
    try:
        yield processes
    finally:
        for process in processes:
            stop(process)


def _descendants(pid: int) -> list[tuple[int, int, str]]:
    """The processes under ``pid``: each one's pid, its parent's and its command line (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [], {pid}
    while frontier:
        children = {child for child, parent in parents.items() if parent in frontier}
        found += sorted(children)
        frontier = children
    lines = []
    for child in found:
        try:
            line = (Path("/proc") / str(child) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        lines.append((child, parents[child], line))
    return lines


def _flow_run_processes(serve: subprocess.Popen[bytes]) -> list[int]:
    """The flow-run processes ``serve`` started: each a new interpreter running ``python -m prefect.engine``."""
    return [pid for pid, _, line in _descendants(serve.pid) if "prefect.engine" in line]


def _run_on(server: Server, path: Path) -> Any | None:
    runs = [r for r in server.flow_runs("select-content/triggered") if r.parameters.get("input_path") == str(path)]
    assert len(runs) <= 1, f"{len(runs)} runs for {path}: an event started more than one"
    return runs[0] if runs else None


def _states(server: Server, flow_run_id: Any) -> list[Any]:
    with server.client() as client:
        return client.read_flow_run_states(flow_run_id)


def test_a_run_across_a_restart_of_redis_then_its_process_killed_is_run_again_to_the_same_bytes(
    server: Server, data_root: Path, serving: list[subprocess.Popen[bytes]]
) -> None:
    """Redis (the server's messaging, causal ordering and leases) is SIGKILLed, left down 6 s and started again
    while a triggered selection runs: the server fails ``serve``'s polls meanwhile, and Prefect's runner stops after
    three; ``serve`` starts it again. Then the run's own process, found before the outage, is SIGKILLed (``serve``
    reports it Crashed), unless the runner's stop already ended it (docs/prefect.md). The re-run automation
    schedules the same run again, ``serve`` runs it to the right bytes; a batch announced after the restart of Redis
    is selected once: by its triggered run if the server made one (then no automation action failed), else by the
    scheduled scan, the chain's safety net; ``serve`` is still serving."""
    if server.redis is None:
        pytest.skip("needs the server on Redis (CONTENT_SELECTION_REDIS=1)")
    big, small = data_root / "redis_big_extracted.json", data_root / "redis_small_extracted.json"
    big.write_bytes(synthetic_batch(BIG_BATCH_BYTES))
    small.write_bytes(SMALL_BATCH.read_bytes())
    serving.append(_serve(server, data_root, "redis-serve.log", limit=1))
    _wait_registered(server, serving[-1], data_root, "redis-serve.log")
    failed_before = _failed_actions(server)

    run([sys.executable, "-c", EMIT_EACH_ARGUMENT, str(big)], server.env)
    running = wait_until(
        "the selection of the big batch to run",
        lambda: (r := _run_on(server, big)) is not None and r.state.is_running() and r,
        RECOVERY_SECONDS,
        interval=0.2,
    )
    processes = wait_until("the run's process", lambda: _flow_run_processes(serving[-1]), 30, interval=0.1)
    server.redis.kill_and_restart(down_seconds=6)
    for pid in processes:
        with contextlib.suppress(ProcessLookupError):  # ended by the runner's stop
            os.kill(pid, signal.SIGKILL)
    run([sys.executable, "-c", EMIT_EACH_ARGUMENT, str(small)], server.env)

    final = wait_until(
        "the killed run to be run again to the end",
        lambda: (r := _run_on(server, big)) is not None and r.state.is_final() and not r.state.is_crashed() and r,
        RECOVERY_SECONDS,
        interval=1,
    )
    states = _states(server, running.id)
    crashed = [s for s in states if s.is_crashed()]
    assert final.id == running.id and final.state.is_completed(), final.state.message
    assert final.run_count == 2 and len(crashed) == 1, [(s.name, s.message) for s in states]
    rerun_at = min(s.timestamp for s in states if s.is_running() and s.timestamp > crashed[0].timestamp)
    print(f"\nCrashed -> running again in {(rerun_at - crashed[0].timestamp).total_seconds():.1f} s")
    assert _selected(big).read_bytes() == expected_output(big)
    small_run = _triggered_run_once_ended(server, small, serving[-1], "redis-serve.log")
    if small_run is None:  # Prefect retries neither a failed action nor a trigger it dropped while Redis came back
        failed = _failed_actions(server) - failed_before
        print(f"no triggered run for the batch announced after the restart after {TRIGGERED_RUN_SECONDS} s "
              f"({failed} action(s) logged as failed); the scheduled scan selects it")  # fmt: skip
        _scan(server)
    else:
        assert small_run.state.is_completed() and small_run.run_count == 1, small_run.state.message
        assert _failed_actions(server) == failed_before
    assert _selected(small).read_bytes() == expected_output(small)
    assert serving[-1].poll() is None, (server.logs / "redis-serve.log").read_text()[-3000:]
    restarts = (server.logs / "redis-serve.log").read_text().count("serving again")
    print(f"serve started Prefect's runner again {restarts} time(s)")


def test_a_burst_of_events_runs_under_the_concurrency_limit_one_run_per_batch(
    server: Server, data_root: Path, serving: list[subprocess.Popen[bytes]]
) -> None:
    """Under load, the server may fail an automation's action (``Action failed: ... 503``, SQLite busy), or drop
    the event's trigger without a word, and not retry: that batch gets no triggered run. The scheduled scan, the
    chain's safety net, then selects it; here it is started once, as its schedule would."""
    batches = [data_root / f"burst{number:03d}_extracted.json" for number in range(BURST)]
    for path in batches:
        path.write_bytes(SMALL_BATCH.read_bytes())
    serving.append(_serve(server, data_root, "burst-serve.log", limit=BURST_LIMIT))
    _wait_registered(server, serving[-1], data_root, "burst-serve.log")
    assert server.deployment("select-content/triggered").global_concurrency_limit.limit == BURST_LIMIT
    failed_before = _failed_actions(server)

    run([sys.executable, "-c", EMIT_EACH_ARGUMENT, *map(str, batches)], server.env)
    peak, seen, quiet_since = 0, -1, time.monotonic()
    started = time.monotonic()

    def settled() -> list[Any] | None:
        nonlocal peak, seen, quiet_since
        runs = [
            r
            for r in server.flow_runs("select-content/triggered")
            if Path(r.parameters["input_path"]).parent == data_root
        ]
        peak = max(peak, sum(1 for r in runs if r.state.is_running() or r.state.name == "Submitting"))
        assert peak <= BURST_LIMIT, f"{peak} runs at once under a limit of {BURST_LIMIT}"
        if len(runs) != seen:
            seen, quiet_since = len(runs), time.monotonic()
        done = all(r.state.is_final() for r in runs)
        return runs if done and (len(runs) == BURST or time.monotonic() - quiet_since > 60) else None

    runs = wait_until(f"{BURST} triggered runs to end", settled, 120 + 60 * BURST, interval=0.3)
    took = time.monotonic() - started
    print(f"\n{BURST} events: {len(runs)} triggered runs ended in {took:.0f} s, at most {peak} at once")
    missing = [p for p in batches if _run_on(server, p) is None]
    # The server may drop an event's run under load (a failed action, or a trigger it could not evaluate: SQLite
    # busy), but the trigger works: most batches have their run, and the scan below selects the others.
    assert len(missing) < BURST // 2, f"{len(missing)} of {BURST} batches got no triggered run"
    print(f"{_failed_actions(server) - failed_before} action(s) logged as failed by the server")
    for flow_run in runs:
        assert flow_run.state.is_completed() and flow_run.run_count == 1, flow_run.state.message
    if missing:
        print(f"{len(missing)} batch(es) without a triggered run; the scheduled scan selects them")
        _scan(server)
    for path in batches:
        assert _selected(path).read_bytes() == expected_output(path)


def _selected(path: Path) -> Path:
    return path.with_name(path.name.replace(".json", "_selected.json"))


def _scan(server: Server) -> None:
    """Run the scheduled scan once, as its schedule would, to its end: it selects every batch not yet selected."""
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
        scan = run_deployment("select-directory/scheduled", timeout=RECOVERY_SECONDS, poll_interval=1)
    assert scan.state.is_completed(), scan.state.message


def _triggered_run_once_ended(server: Server, path: Path, serve: subprocess.Popen[bytes], log: str) -> Any | None:
    """The triggered run of ``path`` once it ended, or None if the server has made none after
    :data:`TRIGGERED_RUN_SECONDS`; a run that does not end in :data:`RECOVERY_SECONDS` fails the test with its
    states and the end of ``serve``'s log."""
    deadline = time.monotonic() + TRIGGERED_RUN_SECONDS

    def ended() -> tuple[Any | None] | None:
        flow_run = _run_on(server, path)
        if flow_run is None:
            return (None,) if time.monotonic() > deadline else None
        return (flow_run,) if flow_run.state.is_final() else None

    try:
        return wait_until(f"the triggered run of {path.name} to end", ended, RECOVERY_SECONDS)[0]
    except pytest.fail.Exception as failure:
        flow_run = _run_on(server, path)
        states = (
            [(s.name, s.timestamp.isoformat(), s.message) for s in _states(server, flow_run.id)] if flow_run else []
        )
        pytest.fail(f"{failure}; its states: {states}; serve (alive: {serve.poll() is None}) logged, last: "
                    f"{(server.logs / log).read_text(errors='replace')[-3000:]}")  # fmt: skip


def _failed_actions(server: Server) -> int:
    """How many automation actions the server has logged as failed."""
    return (server.logs / "server.log").read_text(errors="replace").count("Action failed")


def test_an_event_emitted_while_the_server_is_down_fails_the_emitter(server: Server, data_root: Path) -> None:
    batch = data_root / "late_extracted.json"
    batch.write_bytes(SMALL_BATCH.read_bytes())
    down = {**server.env, "PREFECT_API_URL": f"http://127.0.0.1:{free_port()}/api"}  # nobody listens there
    result = subprocess.run(
        [sys.executable, "-c", EMIT_EACH_ARGUMENT, str(batch)], cwd=ROOT, env=down, capture_output=True, text=True
    )
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("content_selection.shell.events.EventNotDeliveredError: ") and str(batch) in last, last
    assert BATCH_EXTRACTED_EVENT in last and "the scheduled scan selects the batch" in last
    assert not [name for name in os.listdir(data_root) if TMP_NAME.match(name)]


#: A run of ``select-content`` whose final state is followed by one more heartbeat, sent after the server took the
#: state and before the run's process knew it: the race of Prefect's heartbeat thread (it checks the state, then
#: sends), made certain. argv: batch, output, tag, and ``no-end-hook`` to take the stage's end hook away (the
#: stage before it had one).
LATE_HEARTBEAT = """
import sys
from prefect import flow_engine, tags
from prefect.flow_engine import FlowRunEngine
from content_selection.flows.select_content import select_content

batch, output, tag, *fault = sys.argv[1:]
set_state, propose = FlowRunEngine.set_state, flow_engine.propose_state_sync

def set_state_then_beat(self, state, force=False):
    def propose_then_beat(*args, **kwargs):
        accepted = propose(*args, **kwargs)
        if accepted.is_final():
            self._emit_flow_run_heartbeat()
        return accepted
    flow_engine.propose_state_sync = propose_then_beat
    try:
        return set_state(self, state, force)
    finally:
        flow_engine.propose_state_sync = propose

FlowRunEngine.set_state = set_state_then_beat
if fault == ["no-end-hook"]:
    for hooks in (select_content.on_completion_hooks, select_content.on_failure_hooks):
        hooks.clear()
with tags("content-selection", tag):  # a run of the stage, as a deployment's run is
    select_content(input_path=batch, output_path=output)
"""

#: The window of the test's copies of the crash automation: long enough for a run of the small batch.
PROBE_WITHIN_SECONDS = 20


def _crash_automation_watching(server: Server, tag: str) -> str:
    """A copy of the stage's crash automation acting on the runs tagged ``tag`` only, with a shorter window; its id."""
    from datetime import timedelta

    from prefect.events.schemas.events import ResourceSpecification

    from content_selection.deployments.automations import load_automations

    crash = load_automations()[0]
    trigger = crash.trigger.model_copy(
        update={
            "within": timedelta(seconds=PROBE_WITHIN_SECONDS),
            "match_related": ResourceSpecification(
                {"prefect.resource.role": "tag", "prefect.resource.id": f"prefect.tag.{tag}"}
            ),
        }
    )
    with server.client() as client:
        return str(
            client.create_automation(crash.model_copy(update={"name": f"{crash.name}-{tag}", "trigger": trigger}))
        )


def _acted(server: Server, automation_id: str) -> list[str]:
    """The events of what the automation ``automation_id`` did (it fired, an action was taken or failed)."""
    import httpx

    query = {
        "filter": {
            "event": {"prefix": ["prefect.automation.triggered", "prefect.automation.action."]},
            "resource": {"id": [f"prefect.automation.{automation_id}"]},
        },
        "limit": 50,
    }
    answer = httpx.post(f"{server.api_url}/events/filter", json=query, timeout=30)
    answer.raise_for_status()
    return sorted(e["event"] for e in answer.json()["events"])


def test_a_heartbeat_sent_while_the_final_state_is_on_its_way_is_not_acted_on(server: Server, data_root: Path) -> None:
    """The late-heartbeat case: the heartbeat opens a window after Completed; the run's own end event closes it.
    Without the end hook (the control), the same heartbeat makes the automation try to crash the completed run."""
    batch = data_root / "beat_extracted.json"
    batch.write_bytes(SMALL_BATCH.read_bytes())
    ended, control = "late-heartbeat-ended", "late-heartbeat-control"
    watching = {tag: _crash_automation_watching(server, tag) for tag in (ended, control)}
    for tag, fault in ((ended, []), (control, ["no-end-hook"])):
        output = data_root / f"{tag}_selected.json"
        run([sys.executable, "-c", LATE_HEARTBEAT, str(batch), str(output), tag, *fault], server.env)
        assert output.read_bytes() == expected_output(batch)

    # The control's late window ends after the other's (its heartbeat was sent later): once it has been acted on,
    # the other's has been evaluated too.
    failed = wait_until(
        "the automation to act on the control's completed run",
        lambda: "prefect.automation.action.failed" in (acted := _acted(server, watching[control])) and acted,
        PROBE_WITHIN_SECONDS + 120,
        interval=2,
    )
    print(f"\nwithout the end event: {failed}")
    assert _acted(server, watching[ended]) == []
    with server.client() as client:
        runs = [r for r in client.read_flow_runs() if ended in (r.tags or []) or control in (r.tags or [])]
        for automation_id in watching.values():
            client.delete_automation(automation_id)
    assert len(runs) == 2 and all(r.state.is_completed() for r in runs)


def test_a_run_crashed_after_a_restart_of_the_server_is_run_again_at_once(server: Server) -> None:
    """A run's Crashed event follows its Running event, which the server processed before it was killed. Prefect's
    in-memory ordering forgets what it processed when it restarts, so it would hold the Crashed event for 15 minutes,
    waiting for the Running event; Prefect's Redis ordering (``prefect_redis.ordering``, as its production guide sets
    it) remembers, and the re-run automation schedules the run again at once."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.states import Crashed, Pending, Running

    if server.redis is None:
        pytest.skip("needs the server on Redis (CONTENT_SELECTION_REDIS=1): its in-memory ordering waits 15 minutes")
    run([sys.executable, "-m", "selection_cli.main", "automations"], server.env)
    with server.client() as client:
        flow_id = client.create_flow_from_name("restart-probe")
        deployment_id = client.create_deployment(flow_id=flow_id, name="restart-probe", tags=["content-selection"])
        flow_run = client.create_flow_run_from_deployment(deployment_id)
        for state in (Pending(), Running()):
            client.set_flow_run_state(flow_run.id, state)
    wait_until(
        "the server to store the run's Running event",
        lambda: "prefect.flow-run.Running" in _events_of(server, f"prefect.flow-run.{flow_run.id}"),
        60,
    )

    server.kill_and_restart()
    with server.client() as client:
        client.set_flow_run_state(flow_run.id, Crashed(message="its process is gone (the test)"), force=True)

    def rescheduled() -> Any | None:
        with server.client() as client:
            found = client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id])))
        return found and found[0].state.name == "AwaitingRetry" and found[0]

    again = wait_until("the crashed run to be scheduled again", rescheduled, 120, interval=1)
    assert "content-selection-rerun-crashed-runs" in (again.state.message or "")
    with server.client() as client:
        client.delete_deployment(deployment_id)  # and its run: nothing serves it


def _events_of(server: Server, resource_id: str) -> list[str]:
    """The names of the events the server has stored about ``resource_id``."""
    import httpx

    query = {"filter": {"resource": {"id": [resource_id]}}, "limit": 50}
    answer = httpx.post(f"{server.api_url}/events/filter", json=query, timeout=30)
    answer.raise_for_status()
    return [e["event"] for e in answer.json()["events"]]


def test_a_crawl_killed_with_serve_is_run_again_by_the_automation_and_ends_on_a_clean_runs_bytes(
    server: Server, data_root: Path, serving: list[subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    """The crawl deployment's run killed with ``serve`` mid-crawl: marked Crashed, run again by the automation (its
    wait for the lease covers a holder on another machine; here the holder's process is known gone), it takes the
    WARCs up from their commits and ends Completed, with the bytes of a clean run."""
    from selection_crawl.commits import COMMIT_PAGES_VARIABLE
    from selection_crawl.job import CrawlJob
    from selection_crawl.unit import crawl_warc
    from tests.support.crawls import write_crawl

    write_crawl(tmp_path / "crawl", 3, 60)
    listing = tmp_path / "crawl" / "crawl-data" / "CC-MAIN-2024-18" / "warc.paths.gz"
    reference = CrawlJob.plan(str(listing), str(tmp_path / "reference"), str(tmp_path / "crawl"), 60.0)
    for index in reference.todo:
        assert crawl_warc(reference.warc_job(index)).state == "done"
    out = tmp_path / "selected"
    env = {**server.env, COMMIT_PAGES_VARIABLE: "10"}
    args = ["serve", "--data-root", str(data_root), "--cron", "0 3 1 1 *"]
    serving.append(start([sys.executable, "-m", "selection_cli.main", *args], env, server.logs / "crawl-serve-1.log"))
    _wait_registered(server, serving[-1], data_root, "crawl-serve-1.log")
    deployment = wait_until("the crawl's deployment", lambda: server.deployment("extract-crawl/manual"), 60)
    parameters = {"listing": str(listing), "base": str(tmp_path / "crawl"), "output_prefix": str(out), "workers": 1}
    with server.client() as client:
        started = client.create_flow_run_from_deployment(deployment.id, parameters=parameters)
    wait_until("a WARC's first commit", lambda: list(out.rglob("*.commit")), RECOVERY_SECONDS, interval=0.2)
    os.killpg(serving[-1].pid, signal.SIGKILL)  # serve and the crawl's flow run under it
    serving[-1].wait()
    serving.append(start([sys.executable, "-m", "selection_cli.main", *args], env, server.logs / "crawl-serve-2.log"))
    _wait_registered(server, serving[-1], data_root, "crawl-serve-2.log")

    def ended() -> Any | None:
        with server.client() as client:
            run_now = client.read_flow_run(started.id)
        return run_now if run_now.state.is_final() and not run_now.state.is_crashed() else None

    final = wait_until("the killed crawl to be run again to the end", ended, RECOVERY_SECONDS, interval=1)
    assert final.state.is_completed(), final.state.message
    assert final.run_count == 2 and any(s.is_crashed() for s in _states(server, started.id))
    for warc in reference.warcs:
        assert (out / warc.relative).read_bytes() == (tmp_path / "reference" / warc.relative).read_bytes()
    left = [
        p.name for p in out.rglob("*") if p.name.endswith((".commit", ".tries", ".lease")) or TMP_NAME.match(p.name)
    ]
    assert left == []
