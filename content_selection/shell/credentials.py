"""A store's credentials that reach every run of a flow and never the Prefect server: a Prefect ``Secret`` block.

A flow's ``storage_options`` are stored by the server with the run's parameters; their credentials are masked
(``selection_storage.stores.secrets``), so a run started from stored parameters (the UI, the API, the crash
automation's re-run) never has them. Its ``credentials_block`` names a ``Secret`` block instead, whose value is a
JSON object of the store's credential options (fsspec's ``storage_options``: s3fs's ``key``/``secret``/``token``,
gcsfs's ``token``, adlfs's ``connection_string``/``account_key``/``sas_token``...); :func:`with_credentials` loads it
when the run starts and merges it into the run's ``storage_options``, masked. Only the block's name is stored.

Prefect's own ``Secret``, not prefect-aws's, prefect-gcp's or prefect-azure's credential blocks: one block type for
the three fsspec backends, whose value is the backend's storage options as they are, without three SDKs' dependencies.
"""

from __future__ import annotations

from typing import Any

from selection_core.errors import EXIT_USAGE, SelectionError

#: How to save a block, for the messages.
SAVE_ADVICE = "from prefect.blocks.system import Secret; Secret(value={{...}}).save({name!r}, overwrite=True)"


class CredentialsBlockError(SelectionError):
    """The ``credentials_block`` of a run names no ``Secret`` block, or one whose value is not a JSON object."""

    exit_code = EXIT_USAGE


def with_credentials(storage_options: dict[str, Any] | None, credentials_block: str | None) -> dict[str, Any] | None:
    """The run's store options: ``storage_options`` merged with the value of the ``Secret`` block named
    ``credentials_block`` (None: ``storage_options`` as they are), every credential masked.

    The merge is key by key at the top level: the options keep their order, the block's other keys follow, and a key
    in both takes the block's value (a nested mapping, such as ``client_kwargs``, whole): the block is where the
    credentials are, and a masked credential a run's stored parameters may hold is replaced by it.

    Raises:
        CredentialsBlockError: no ``Secret`` block has that name, or its value is not a JSON object; the message
            names the block and how to save it, never its value.
    """
    if credentials_block is None:
        return storage_options
    from prefect.blocks.system import Secret
    from prefect.exceptions import ObjectNotFound

    from selection_storage.stores.secrets import masked

    save = SAVE_ADVICE.format(name=credentials_block)
    try:
        value = Secret.load(credentials_block).get()
    except ValueError as error:
        if not isinstance(error.__cause__, ObjectNotFound):  # Prefect's answer for a name it does not know
            raise
        raise CredentialsBlockError(
            f"credentials_block {credentials_block!r}: the Prefect server has no Secret block of that name; "
            f"save the store's credentials in one ({save}) or leave credentials_block empty"
        ) from None
    if not isinstance(value, dict):
        raise CredentialsBlockError(
            f"credentials_block {credentials_block!r}: the Secret block's value is {_kind(value)}, not a JSON object "
            f"of storage options; save it as one ({save}, the value e.g. {{'key': ..., 'secret': ...}})"
        )
    return masked({**(storage_options or {}), **value})


def _kind(value: Any) -> str:
    """What a block's value is, without showing it."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a JSON array"
    return "null" if value is None else f"a JSON {type(value).__name__}"
