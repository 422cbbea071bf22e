"""Store credentials from a Prefect ``Secret`` block, on the session's real ``prefect server start``: runs of
``select-content/manual`` created through the API (as the UI, ``run_deployment`` and the crash automation's re-run
start them: from the parameters the server stored) reach S3, Google Cloud Storage and Azure on loopback with the
credentials of the block their ``credentials_block`` names, and ``serve`` has none in its environment.

1. One run on each store completes with the bytes a run on a disk writes; the server's stored parameters hold the
   block's name, neither the credential nor its mask; an S3 run without the block fails for lack of credentials.
2. One run on each store, all three at once, is killed with ``serve``; the stage's automations mark them Crashed
   and run them again (from their stored parameters) on a restarted ``serve``, and each completes, through the block.

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
from tests.prefect.test_server_crashes import BIG_BATCH_BYTES, RECOVERY_SECONDS
from tests.support import ROOT
from tests.support.faultkit import synthetic_batch
from tests.support.object_stores import PROTOCOLS, StoreServer, running
from tests.support.prefect_server import RUN_SECONDS, SERVE_START_SECONDS, Server, start, stop, wait_until

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
    """``serve`` without any store credential in its environment, started again after a kill."""

    server: Server
    env: dict[str, str]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self) -> None:
        log = self.server.logs / f"credentials-serve-{len(self.processes) + 1}.log"
        data_root = self.server.logs  # the runs give their bucket as the data root
        args = ["serve", "--data-root", str(data_root), "--cron", "0 3 1 1 *"]
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
def serving(server: Server, stores: dict[str, Store]) -> Iterator[Serving]:
    """``serve`` with the server's environment, less every store setting."""
    env = {k: v for k, v in server.env.items() if not k.startswith(STORE_ENV_PREFIXES)}
    env.update(AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull, AWS_EC2_METADATA_DISABLED="true")
    served = Serving(server, env)
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


def test_runs_killed_with_serve_are_run_again_by_the_automations_and_reach_their_stores_through_the_block(
    server: Server, stores: dict[str, Store], serving: Serving, tmp_path: Path
) -> None:
    """The crash case once for the three stores: three runs at once, one kill, three re-runs."""
    started = time.monotonic()
    big = tmp_path / "big_extracted.json"
    big.write_bytes(synthetic_batch(BIG_BATCH_BYTES))
    for store in stores.values():
        store.server.put(store.url("in/big_extracted.json"), big.read_bytes())
    prepared = time.monotonic()
    ids = [_create(server, s.parameters("in/big_extracted.json", "out/big_selected.json")).id for s in stores.values()]

    def all_running() -> list[Any] | None:
        runs = [_read(server, flow_run_id) for flow_run_id in ids]
        assert not [r for r in runs if r.state.is_final()], "a run ended before serve was killed: use a bigger batch"
        return runs if all(r.state.is_running() for r in runs) else None

    running_runs = wait_until("the three runs to run", all_running, RUN_SECONDS, interval=0.2)
    serving.kill()
    killed = time.monotonic()
    serving.start()
    expected = select_file(big, tmp_path / "big_selected.json").output_path.read_bytes()

    final = wait_until("the killed runs to be run again to the end", lambda: _ended(server, ids), RECOVERY_SECONDS, 1)
    recovered = time.monotonic()
    for (protocol, store), before, flow_run in zip(stores.items(), running_runs, final):
        with server.client() as client:
            states = client.read_flow_run_states(flow_run.id)
        assert flow_run.state.is_completed(), f"{protocol}: {flow_run.state.message}"
        assert flow_run.run_count == 2 and flow_run.parameters == before.parameters, protocol
        assert any(s.is_crashed() and "No heartbeat" in (s.message or "") for s in states), protocol
        assert store.server.get(store.url("out/big_selected.json")) == expected, protocol
        _stores_nothing_secret(flow_run, store)
    print(
        f"\n3 batches of {BIG_BATCH_BYTES >> 20} MiB put in the stores in {prepared - started:.0f} s; killed "
        f"{killed - prepared:.0f} s after the runs were created; re-run to the end {recovered - killed:.0f} s after "
        f"the kill; {time.monotonic() - started:.0f} s in all"
    )
