"""A store's credentials from a Prefect ``Secret`` block (``credentials_block``), and the server's mask refused.

On the session's test API (``prefect_harness``) and moto's S3 server on loopback: the block's options are merged into
the run's ``storage_options``, masked; a missing block, or one that is not a JSON object, fails the run in one line;
``'**********'`` as a credential (what a run started from stored parameters gets) is refused before any request.
"""

from __future__ import annotations

import uuid

import pytest
from fastapi.encoders import jsonable_encoder

from content_selection.flows.select_content import select_content
from content_selection.shell.credentials import CredentialsBlockError, with_credentials
from selection_core.errors import EXIT_USAGE
from selection_storage.stores.secrets import PREFECT_MASK, revealed
from tests.support import ROOT

pytestmark = pytest.mark.usefixtures("prefect_harness", "no_data_root_env")

GOLDEN_BATCH = ROOT / "tests" / "data" / "aeb_batch_extracted.json"

#: What names the store's credentials in the environment (the tests that need none take them away).
STORE_CREDENTIALS_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")


def saved(value: object) -> str:
    """The name of a new ``Secret`` block holding ``value``."""
    from prefect.blocks.system import Secret

    name = f"store-credentials-{uuid.uuid4().hex[:8]}"
    Secret(value=value).save(name)
    return name


def test_the_block_is_merged_into_the_options_in_their_order_the_block_winning_and_masked() -> None:
    name = saved({"secret": "s3cr3t", "key": "AKIA-of-the-block", "client_kwargs": {"aws_session_token": "t0k"}})
    given = {"endpoint_url": "http://127.0.0.1:9", "key": PREFECT_MASK, "anon": False}

    options = with_credentials(given, name)

    assert options is not None
    assert list(options) == ["endpoint_url", "key", "anon", "secret", "client_kwargs"]
    assert revealed(options) == {
        "endpoint_url": "http://127.0.0.1:9",
        "key": "AKIA-of-the-block",  # the block's value, in place of the stored mask
        "anon": False,
        "secret": "s3cr3t",
        "client_kwargs": {"aws_session_token": "t0k"},
    }
    recorded = jsonable_encoder(options)  # what Prefect would store or show
    assert recorded["key"] == recorded["secret"] == recorded["client_kwargs"]["aws_session_token"] == PREFECT_MASK
    assert with_credentials(given, None) is given  # no block: the options as they are


def test_a_missing_block_is_one_line_naming_it_and_the_fix() -> None:
    with pytest.raises(CredentialsBlockError) as refused:
        with_credentials({"endpoint_url": "http://127.0.0.1:9"}, "no-such-block")

    message = str(refused.value)
    assert refused.value.exit_code == EXIT_USAGE and "\n" not in message
    assert message.startswith("credentials_block 'no-such-block': the Prefect server has no Secret block of that name")
    assert "Secret(value={...}).save('no-such-block', overwrite=True)" in message


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        pytest.param("not-json-the-secret", "text", id="text"),
        pytest.param(["the-secret"], "a JSON array", id="array"),
        pytest.param(7, "a JSON int", id="number"),
    ],
)
def test_a_block_whose_value_is_not_a_json_object_is_refused_without_showing_it(value: object, kind: str) -> None:
    name = saved(value)

    with pytest.raises(CredentialsBlockError) as refused:
        with_credentials(None, name)

    message = str(refused.value)
    assert f"credentials_block {name!r}: the Secret block's value is {kind}, not a JSON object" in message
    assert "the-secret" not in message


@pytest.fixture
def s3_without_credentials(s3_server, bucket: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict]:
    """The golden batch in a bucket of moto's S3 server, no credential in the environment; its URL, and the options
    that reach the server without one."""
    import fsspec

    for variable in STORE_CREDENTIALS_ENV:
        monkeypatch.delenv(variable, raising=False)
    fsspec.get_filesystem_class("s3").clear_instance_cache()  # no client made with the environment's credentials
    url = s3_server.url(bucket, "in/aeb_extracted.json")
    s3_server.fs(key="testing", secret="testing").pipe_file(url.removeprefix("s3://"), GOLDEN_BATCH.read_bytes())
    options = {"endpoint_url": s3_server.endpoint, "client_kwargs": {"region_name": "us-east-1"}}
    return url, options


def test_a_flow_run_reaches_the_store_with_the_blocks_credentials_alone(s3_without_credentials, s3_server) -> None:
    url, options = s3_without_credentials
    name = saved({"key": "testing", "secret": s3_server.secret})

    without = select_content(input_path=url, storage_options=options, return_state=True)
    with_block = select_content(input_path=url, storage_options=options, credentials_block=name, return_state=True)

    assert without.is_failed() and "no credentials for the store were found" in without.message, without.message
    assert with_block.is_completed(), with_block.message
    assert with_block.result().articles == 181


@pytest.mark.parametrize(
    ("block", "options", "expected"),
    [
        pytest.param(None, {"key": "testing", "secret": PREFECT_MASK}, "storage option 'secret' is '**********'"),
        pytest.param("no-such-block", {}, "credentials_block 'no-such-block': the Prefect server has no Secret block"),
    ],
    ids=["mask", "missing-block"],
)
def test_a_flow_run_refused_for_its_credentials_fails_with_the_one_line(
    s3_without_credentials, block: str | None, options: dict, expected: str
) -> None:
    url, reach = s3_without_credentials

    state = select_content(
        input_path=url, storage_options={**reach, **options}, credentials_block=block, return_state=True
    )

    assert state.is_failed() and state.message.startswith(expected), state.message
    assert "\n" not in state.message
