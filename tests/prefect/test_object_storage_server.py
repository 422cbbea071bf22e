"""The triggered deployment on objects: ``content-selection serve --data-root PROTOCOL://BUCKET/batches/`` on the
session's real ``prefect server start``, each store's server on loopback (S3, Google Cloud Storage, Azure), and the
upstream's event naming an object. Every wait is bounded; nothing asserts a duration.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator

import pytest

from selection_engine import select_file
from tests.support import ROOT
from tests.support.prefect_server import SERVE_START_SECONDS, Server, run, start, stop, wait_until

pytestmark = [pytest.mark.server, pytest.mark.slow]

GOLDEN_BATCH = ROOT / "tests" / "data" / "aeb_batch_extracted.json"

EMIT = "import sys; from content_selection import emit_batch_extracted; emit_batch_extracted(sys.argv[1])"


@pytest.fixture
def served_on_store(server: Server, store_server, bucket: str) -> Iterator[tuple[str, dict[str, str]]]:
    """``serve`` with a data root in the bucket; yields the root and the environment that reaches both servers."""
    root = store_server.url(bucket, "batches")
    env = {**server.env, **store_server.env}
    log = server.logs / f"serve-{store_server.protocol}.log"
    serve = ["serve", "--data-root", f"{root}/", "--cron", "0 3 1 1 *"]
    process = start([sys.executable, "-m", "selection_cli.main", *serve], env, log)
    try:

        def registered() -> bool:
            assert process.poll() is None, log.read_text()[-3000:]
            deployment = server.deployment("select-content/triggered")
            return deployment is not None and deployment.parameters.get("data_root") == root

        wait_until("serve to register the triggered deployment on the bucket", registered, SERVE_START_SECONDS)
        yield root, env
    finally:
        stop(process)


def test_an_event_naming_an_object_selects_it_and_one_outside_the_root_writes_nothing(
    server: Server, store_server, bucket: str, served_on_store: tuple[str, dict[str, str]], tmp_path
) -> None:
    root, env = served_on_store
    inside, outside = f"{root}/day1/crawl_extracted.json", store_server.url(bucket, "elsewhere/away_extracted.json")
    for url in (inside, outside):
        store_server.put(url, GOLDEN_BATCH.read_bytes())
        run([sys.executable, "-c", EMIT, url], env)

    selected = server.final_run("select-content/triggered", inside)
    refused = server.final_run("select-content/triggered", outside)

    assert selected.state.is_completed(), selected.state.message
    expected = select_file(GOLDEN_BATCH, tmp_path / "disk_selected.json").output_path
    assert store_server.get(f"{root}/day1/crawl_extracted_selected.json") == expected.read_bytes()
    assert refused.state.is_failed() and "outside the data root" in refused.state.message
    assert store_server.keys(bucket) == [
        f"{bucket}/batches/day1/crawl_extracted.json",
        f"{bucket}/batches/day1/crawl_extracted_selected.json",
        f"{bucket}/elsewhere/away_extracted.json",
    ]


#: The names of the options that carry a credential in each store's :attr:`options` (s3fs's key pair, gcsfs's token,
#: Azure's connection string with its account key).
CREDENTIALS = {"key", "secret", "token", "connection_string"}


def test_credentials_given_as_storage_options_are_used_by_the_run_and_never_stored_by_the_server(
    server: Server, store_server, bucket: str, tmp_path
) -> None:
    """``content-selection run`` with the store reached through ``--storage-option`` alone (no credential in the
    environment): the run reads and writes the objects, and the parameters the server holds mask every credential."""
    source, output = (
        store_server.url(bucket, "in/aeb_extracted.json"),
        store_server.url(bucket, "out/aeb_selected.json"),
    )
    store_server.put(source, GOLDEN_BATCH.read_bytes())
    store_env = ("AWS_", "AZURE_", "STORAGE_EMULATOR_HOST", "GOOGLE_")
    env = {k: v for k, v in server.env.items() if not k.startswith(store_env)}
    env.update(AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull, AWS_EC2_METADATA_DISABLED="true")
    options = [f"--storage-option={name}={json.dumps(value)}" for name, value in store_server.options.items()]

    result = run([sys.executable, "-m", "selection_cli.main", "run", source, "--output", output, *options], env)

    assert result.stdout.startswith("selected 181 articles")
    with server.client() as client:
        runs = [r for r in client.read_flow_runs() if r.parameters.get("input_path") == source]
    assert len(runs) == 1 and runs[0].state.is_completed()
    stored, shown = runs[0].parameters["storage_options"], json.dumps(runs[0].parameters)
    assert sorted(stored) == sorted(store_server.options)  # every option is there (PostgreSQL's JSONB sorts keys)
    for name, value in store_server.options.items():
        assert stored[name] == ("**********" if name in CREDENTIALS else value), name
        assert name not in CREDENTIALS or value not in shown, name
    assert (
        store_server.get(output) == select_file(GOLDEN_BATCH, tmp_path / "disk_selected.json").output_path.read_bytes()
    )
