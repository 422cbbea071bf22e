"""Which storage options are credentials, and how they stay out of what Prefect records.

A flow run's parameters are stored by the Prefect server and shown in its UI. Prefect writes them with FastAPI's
JSON encoder, which writes pydantic's ``SecretStr`` as ``'**********'``. So every caller that builds a run's
``storage_options`` (the command line) wraps each credential in one with :func:`masked`: the server and its database
never receive it, while the run's code holds it (also on a process or Dask worker: it pickles whole), and
:func:`revealed` hands it to the store's client, the one place it is needed.

A run started from its stored parameters (a deployment's run from the UI or the API, a crashed run run again) gets
:data:`PREFECT_MASK` in place of each such credential: :func:`revealed` refuses it, in one line, before any request.
Such runs take their credentials from the worker's environment, or from a Prefect ``Secret`` block named by the
flows' ``credentials_block`` (``content_selection.shell.credentials``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from pydantic import SecretStr

from selection_core.errors import InvalidBatchError

#: The option names that carry a credential, in any store's options or in a mapping inside them (``client_kwargs``):
#: s3fs's ``key``, ``secret`` and ``token``; gcsfs's ``token``; adlfs's ``account_key``, ``sas_token``,
#: ``connection_string``, ``client_secret`` and ``credential``; and any ``password``.
SECRET_NAME: Final = re.compile(r"key|secret|token|passw(or)?d|sas|connection_string|credential", re.IGNORECASE)


#: What the Prefect server stores, and gives back to a run started from stored parameters, for a masked value.
PREFECT_MASK: Final = "**********"


class SecretJSON(SecretStr):
    """A credential that is not text (a service account's token given as a mapping), kept as its JSON."""


def masked(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with the value of every credential's name wrapped in a ``SecretStr`` (a value that is not text in
    a :class:`SecretJSON`); the other values, key order and nested mappings are kept."""
    return {name: _masked(name, value) for name, value in options.items()}


def revealed(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` as the store's client takes them: every masked credential as the value it was given.

    Raises:
        InvalidBatchError: a credential (a name of :data:`SECRET_NAME`, in a nested mapping too) is
            :data:`PREFECT_MASK`, which no store accepts: the run was started from parameters the server stored.
    """
    return _revealed_mapping(options, "")


def _masked(name: str, value: Any) -> Any:
    if isinstance(value, SecretStr):
        return value
    if SECRET_NAME.search(name):
        return SecretStr(value) if isinstance(value, str) else SecretJSON(json.dumps(value))
    if isinstance(value, Mapping):
        return masked(value)
    return value


def _revealed_mapping(options: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``options`` revealed; ``where``: the path of the mapping that holds them (``client_kwargs.``), for a message."""
    return {name: _revealed(name, value, where) for name, value in options.items()}


def _revealed(name: str, value: Any, where: str) -> Any:
    if isinstance(value, SecretJSON):
        value = json.loads(value.get_secret_value())
    elif isinstance(value, SecretStr):
        value = value.get_secret_value()
    elif isinstance(value, Mapping):
        return _revealed_mapping(value, f"{where}{name}.")
    if value == PREFECT_MASK and SECRET_NAME.search(name):
        raise InvalidBatchError(
            f"storage option {where + name!r} is {PREFECT_MASK!r}, the mask the Prefect server stores instead of a "
            "credential: a run started from stored parameters never has the credential; put it in a Prefect Secret "
            "block and pass the block's name as credentials_block, or set it in the worker's environment"
        )
    return value
