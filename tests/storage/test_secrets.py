"""Credentials in storage options: masked for what Prefect records, revealed for the store's client."""

from __future__ import annotations

import json

from fastapi.encoders import jsonable_encoder
from hypothesis import given
from hypothesis import strategies as st

from selection_storage.stores.secrets import masked, revealed

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

values = st.one_of(st.text(min_size=1), st.integers(), st.booleans(), st.dictionaries(st.text(), st.integers()))
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
