"""Credentials in storage options: masked for what Prefect records, revealed for the store's client."""

from __future__ import annotations

import json

import pytest
from fastapi.encoders import jsonable_encoder
from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr

from selection_core.errors import EXIT_INVALID_INPUT, InvalidBatchError
from selection_storage.stores.secrets import PREFECT_MASK, SECRET_NAME, masked, revealed

#: Names of real options of s3fs, gcsfs and adlfs, each with whether it carries a credential.
NAMES = {
    "key": True,
    "secret": True,
    "token": True,
    "account_key": True,
    "sas_token": True,
    "connection_string": True,
    "client_secret": True,
    "credential": True,
    "aws_secret_access_key": True,
    "password": True,
    "endpoint_url": False,
    "region_name": False,
    "account_name": False,
    "anon": False,
    "project": False,
    "profile": False,
    "use_ssl": False,
}

#: Any value but the server's mask, which is refused as a credential (below).
values = st.one_of(
    st.text(min_size=1).filter(lambda text: text != PREFECT_MASK),
    st.integers(),
    st.booleans(),
    # a mapping of names that are not credentials' (one that is would be masked too, at any depth)
    st.dictionaries(st.text().filter(lambda name: not SECRET_NAME.search(name)), st.integers()),
)
options = st.dictionaries(st.sampled_from(sorted(NAMES)), values)


@given(options, options)
def test_masked_options_reveal_what_was_given_and_record_no_credential(top: dict, nested: dict) -> None:
    given_options = {**top, "client_kwargs": nested}

    kept = masked(given_options)
    recorded = jsonable_encoder({"storage_options": kept})["storage_options"]  # what Prefect stores

    assert revealed(kept) == given_options and list(revealed(kept)) == list(given_options)
    assert list(recorded) == [*top, "client_kwargs"] and list(recorded["client_kwargs"]) == list(nested)
    for where, original in ((recorded, top), (recorded["client_kwargs"], nested)):
        for name, value in original.items():
            assert where[name] == ("**********" if NAMES[name] else value)
    assert masked(kept) == kept  # masking twice changes nothing


def test_a_credential_that_is_not_text_is_masked_whole() -> None:
    token = {"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----"}

    kept = masked({"token": token, "project": "p"})

    assert "PRIVATE" not in json.dumps(jsonable_encoder(kept)) and revealed(kept) == {"token": token, "project": "p"}


@pytest.mark.parametrize(
    ("options", "named"),
    [
        pytest.param({"key": "k", "secret": PREFECT_MASK}, "'secret'", id="top-level"),
        pytest.param(
            {"client_kwargs": {"region_name": "us-east-1", "aws_secret_access_key": PREFECT_MASK}},
            "'client_kwargs.aws_secret_access_key'",
            id="nested",
        ),
        pytest.param({"token": SecretStr(PREFECT_MASK)}, "'token'", id="masked-mask"),
    ],
)
def test_the_servers_mask_as_a_credential_is_refused_in_one_line(options: dict, named: str) -> None:
    with pytest.raises(InvalidBatchError) as refused:
        revealed(options)

    message = str(refused.value)
    assert refused.value.exit_code == EXIT_INVALID_INPUT and "\n" not in message
    assert message.startswith(f"storage option {named} is '**********', the mask the Prefect server stores")
    assert "pass the block's name as credentials_block, or set it in the worker's environment" in message


def test_the_mask_as_another_option_is_kept() -> None:
    assert revealed({"project": PREFECT_MASK, "client_kwargs": {"region_name": PREFECT_MASK}}) == {
        "project": PREFECT_MASK,
        "client_kwargs": {"region_name": PREFECT_MASK},
    }
