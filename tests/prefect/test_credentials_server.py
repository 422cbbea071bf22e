"""Store credentials from a Prefect ``Secret`` block, on the session's real ``prefect server start``: runs of
``select-content/manual`` created through the API (as the UI, ``run_deployment`` and the crash automation's re-run
start them: from the parameters the server stored) reach S3, Google Cloud Storage and Azure on loopback with the
credentials of the block their ``credentials_block`` names, and ``serve`` has none in its environment.

1. One run on each store completes with the bytes a run on a disk writes; the server's stored parameters hold the
   block's name, neither the credential nor its mask; an S3 run without the block fails for lack of credentials.
2. One run on each store and a triggered selection of a batch on a disk, all at once, are killed with ``serve``
   (its whole process group: the flow-run processes die with it). The runs' heartbeats stop; the stage's
   automation marks them Crashed, which frees the triggered deployment's one concurrency slot (a second batch,
   queued behind it, then runs); the re-run automation schedules the same runs again (from their stored
   parameters); a restarted ``serve`` runs each to the right bytes, through the block for the stores, and the
   killed selection's staged file is removed.

Every wait is bounded; the times are printed, no assertion depends on them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from selection_engine import select_file
from selection_storage.stores.secrets import PREFECT_MASK
from tests.prefect.test_server_crashes import BIG_BATCH_BYTES, EMIT_EACH_ARGUMENT, RECOVERY_SECONDS, SMALL_BATCH
from tests.support import ROOT
from tests.support.faultkit import synthetic_batch
from tests.support.object_stores import PROTOCOLS, StoreServer, running
from tests.support.prefect_fixtures import expected_output, leftover_files
from tests.support.prefect_server import RUN_SECONDS, SERVE_START_SECONDS, Server, run, start, stop, wait_until

pytestmark = [pytest.mark.server, pytest.mark.slow]

GOLDEN_BATCH = ROOT / "tests" / "data" / "aeb_batch_extracted.json"

#: The settings that give a store's client its credentials (or point it at the emulator, which the runs' storage
#: options do instead): none of them reaches ``serve``.
STORE_ENV_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_", "STORAGE_EMULATOR_HOST")

CRASH_AUTOMATIONS = {"content-selection-crash-silent-runs", "content-selection-rerun-crashed-runs"}


@dataclass
class Store:
    """A store's server, a bucket in it, the name of the ``Secret`` block of its credentials, and what a run's
    parameters give it besides (its endpoint)."""

    server: StoreServer
    bucket: str
    block: str
    reach: dict[str, Any]
    #: The credential of the block that must never reach the Prefect server.
    secret: str

    def url(self, key: str) -> str:
        return self.server.url(self.bucket, key)

    def parameters(self, source: str, output: str, *, with_block: bool = True) -> dict[str, Any]:
        """A run's parameters: the object to select, its output, the bucket as the data root, the endpoint."""
        parameters = {
            "input_path": self.url(source),
            "output_path": self.url(output),
            "data_root": self.url(""),
            "storage_options": self.reach,
        }
        return {**parameters, "credentials_block": self.block} if with_block else parameters


def _credentials(server: StoreServer) -> tuple[dict[str, Any], dict[str, Any], str]:
    """What a store's ``Secret`` block holds, what the run's parameters hold, and the block's credential."""
    if server.protocol == "s3":
        reach = {"endpoint_url": server.endpoint, "client_kwargs": {"region_name": "us-east-1"}}
        return {"key": "testing", "secret": server.secret}, reach, server.secret
    if server.protocol == "gs":
        return {"token": "anon", "project": server.secret}, {"endpoint_url": server.endpoint}, server.secret
    # Azure: the connection string holds the endpoint and the account key
    return {"connection_string": server.connection_string}, {}, server.secret  # type: ignore[attr-defined]


@dataclass
class Serving:
    """``serve`` without any store credential in its environment, its data root on a disk (the store runs give
    their bucket as theirs), one triggered run at once; started again after a kill."""

    server: Server
    env: dict[str, str]
    data_root: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self) -> None:
        log = self.server.logs / f"credentials-serve-{len(self.processes) + 1}.log"
        args = ["serve", "--data-root", str(self.data_root), "--cron", "0 3 1 1 *", "--concurrency-limit", "1"]
        process = start([sys.executable, "-m", "selection_cli.main", *args], self.env, log)
        self.processes.append(process)

        def registered() -> bool:
            assert process.poll() is None, log.read_text()[-3000:]
            names = {a.name for a in self.server.automations()}
            return self.server.deployment("select-content/manual") is not None and CRASH_AUTOMATIONS <= names

        wait_until("serve to register the deployments and the automations", registered, SERVE_START_SECONDS)

    def kill(self) -> None:
        """SIGKILL ``serve``'s process group: it and the flow-run processes under it."""
        os.killpg(self.processes[-1].pid, signal.SIGKILL)
        self.processes[-1].wait()


@pytest.fixture(scope="module")
def stores(server: Server, store_servers: dict[str, StoreServer]) -> dict[str, Store]:
    """A bucket in each store, and a ``Secret`` block of its credentials saved on the server."""
    from prefect.blocks.system import Secret

    found = {}
    with server.client():  # the blocks are saved on the session's server
        for protocol in PROTOCOLS:
            store_server = running(store_servers, protocol)
            block = f"store-credentials-{protocol}-{uuid.uuid4().hex[:8]}"
            value, reach, secret = _credentials(store_server)
            Secret(value=value).save(block)
            found[protocol] = Store(store_server, store_server.new_bucket(), block, reach, secret)
    return found


@pytest.fixture(scope="module")
def serving(server: Server, stores: dict[str, Store], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serving]:
    """``serve`` with the server's environment, less every store setting."""
    env = {k: v for k, v in server.env.items() if not k.startswith(STORE_ENV_PREFIXES)}
    env.update(AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull, AWS_EC2_METADATA_DISABLED="true")
    served = Serving(server, env, tmp_path_factory.mktemp("credentials-root").resolve())
    try:
        served.start()
        yield served
    finally:
        for process in served.processes:
            stop(process)


def _create(server: Server, parameters: dict[str, Any]) -> Any:
    with server.client() as client:
        deployment = client.read_deployment_by_name("select-content/manual")
        return client.create_flow_run_from_deployment(deployment.id, parameters=parameters)


def _read(server: Server, flow_run_id: Any) -> Any:
    with server.client() as client:
        return client.read_flow_run(flow_run_id)


def _ended(server: Server, ids: list[Any]) -> list[Any] | None:
    """The runs, once each has ended (Crashed aside: the automation runs a crashed run again)."""
    runs = [_read(server, flow_run_id) for flow_run_id in ids]
    return runs if all(r.state.is_final() and not r.state.is_crashed() for r in runs) else None


def _stores_nothing_secret(flow_run: Any, store: Store) -> None:
    """The parameters the server holds name the block, and hold neither its credential nor a mask."""
    stored = json.dumps(flow_run.parameters)
    assert flow_run.parameters["credentials_block"] == store.block
    assert store.secret not in stored and PREFECT_MASK not in stored, stored


def test_a_deployment_run_reaches_each_store_through_the_block_and_the_server_never_holds_the_credential(
    server: Server, stores: dict[str, Store], serving: Serving, tmp_path: Path
) -> None:
    started = time.monotonic()
    expected = select_file(GOLDEN_BATCH, tmp_path / "disk_selected.json").output_path.read_bytes()
    for store in stores.values():
        store.server.put(store.url("in/aeb_extracted.json"), GOLDEN_BATCH.read_bytes())
    runs = {
        p: _create(server, s.parameters("in/aeb_extracted.json", "out/aeb_selected.json")) for p, s in stores.items()
    }
    s3 = stores["s3"]
    control = _create(server, s3.parameters("in/aeb_extracted.json", "out/control.json", with_block=False))

    ended = wait_until(
        "the runs to end", lambda: _ended(server, [*[r.id for r in runs.values()], control.id]), RUN_SECONDS
    )
    *done, refused = ended
    for (protocol, store), flow_run in zip(stores.items(), done):
        assert flow_run.state.is_completed(), f"{protocol}: {flow_run.state.message}"
        assert store.server.get(store.url("out/aeb_selected.json")) == expected, protocol
        _stores_nothing_secret(flow_run, store)
    # Without the block, the same run on S3 has no credentials: the block is what reached the store.
    print(f"\nwithout credentials_block, on S3: {refused.state.name}: {refused.state.message}")
    assert refused.state.is_failed() and "no credentials for the store were found" in refused.state.message
    assert not s3.server.fs().exists(s3.url("out/control.json").removeprefix("s3://"))
    print(f"3 stores through their blocks, and the control, in {time.monotonic() - started:.0f} s")


def _triggered_run(server: Server, path: Path) -> Any | None:
    """The run of ``select-content/triggered`` on ``path``, if the event has started one (never more than one)."""
    runs = [r for r in server.flow_runs("select-content/triggered") if r.parameters.get("input_path") == str(path)]
    assert len(runs) <= 1, f"{len(runs)} runs for {path}: an event started more than one"
    return runs[0] if runs else None


def test_runs_killed_with_serve_are_marked_crashed_and_run_again_to_the_same_bytes_through_the_block(
    server: Server, stores: dict[str, Store], serving: Serving, tmp_path: Path
) -> None:
    """The crash case once for the three stores and a batch on a disk: four runs at once, one kill, four re-runs."""
    started = time.monotonic()
    big = serving.data_root / "big_extracted.json"
    big.write_bytes(synthetic_batch(BIG_BATCH_BYTES))
    small = serving.data_root / "small_extracted.json"
    small.write_bytes(SMALL_BATCH.read_bytes())
    for store in stores.values():
        store.server.put(store.url("in/big_extracted.json"), big.read_bytes())
    prepared = time.monotonic()
    ids = [_create(server, s.parameters("in/big_extracted.json", "out/big_selected.json")).id for s in stores.values()]
    run([sys.executable, "-c", EMIT_EACH_ARGUMENT, str(big)], server.env)
    triggered = wait_until("the event's run", lambda: _triggered_run(server, big), RUN_SECONDS, interval=0.2)
    ids.append(triggered.id)

    def all_running() -> list[Any] | None:
        runs = [_read(server, flow_run_id) for flow_run_id in ids]
        assert not [r for r in runs if r.state.is_final()], "a run ended before serve was killed: use a bigger batch"
        return runs if all(r.state.is_running() for r in runs) else None

    running_runs = wait_until("the four runs to run", all_running, RUN_SECONDS, interval=0.2)
    serving.kill()
    killed = time.monotonic()
    assert not (serving.data_root / "big_extracted_selected.json").exists()
    # The slot is held by a dead run (a limit of 1): this batch waits until the dead run is marked Crashed.
    run([sys.executable, "-c", EMIT_EACH_ARGUMENT, str(small)], server.env)
    serving.start()
    expected = select_file(big, tmp_path / "big_selected.json").output_path.read_bytes()

    final = wait_until("the killed runs to be run again to the end", lambda: _ended(server, ids), RECOVERY_SECONDS, 1)
    recovered = time.monotonic()
    crashed_at = []
    for name, before, flow_run in zip([*stores, "disk"], running_runs, final):
        with server.client() as client:
            states = client.read_flow_run_states(flow_run.id)
        crashed = [s for s in states if s.is_crashed()]
        assert flow_run.state.is_completed(), f"{name}: {flow_run.state.message}"
        assert flow_run.run_count == 2 and flow_run.parameters == before.parameters, name
        assert len(crashed) == 1 and "No heartbeat for 90 s" in (crashed[0].message or ""), name
        assert any(
            s.name == "AwaitingRetry" and "content-selection-rerun-crashed-runs" in (s.message or "") for s in states
        ), name
        crashed_at.append(crashed[0].timestamp.timestamp())
    for store, flow_run in zip(stores.values(), final):
        assert store.server.get(store.url("out/big_selected.json")) == expected, store.server.protocol
        _stores_nothing_secret(flow_run, store)
    assert (serving.data_root / "big_extracted_selected.json").read_bytes() == expected_output(big) == expected

    small_run = wait_until(
        "the queued batch to be selected",
        lambda: (r := _triggered_run(server, small)) and r.state.is_final() and r,
        120,
    )
    assert small_run.state.is_completed(), small_run.state.message
    assert (serving.data_root / "small_extracted_selected.json").read_bytes() == expected_output(small)
    assert small_run.start_time.timestamp() >= crashed_at[-1] - 1, "the queued run ran while the dead run held the slot"
    outputs = {big, small, *(big.with_name(f"{n}_extracted_selected.json") for n in ("big", "small"))}
    assert leftover_files(serving.data_root, outputs) == [], "the killed run's staged file must be gone"
    print(
        f"\n3 batches of {BIG_BATCH_BYTES >> 20} MiB put in the stores in {prepared - started:.0f} s; killed "
        f"{killed - prepared:.0f} s after the runs were created; re-run to the end {recovered - killed:.0f} s after "
        f"the kill; the queued batch started {small_run.start_time.timestamp() - crashed_at[-1]:+.0f} s after its "
        f"slot was freed; {time.monotonic() - started:.0f} s in all"
    )
