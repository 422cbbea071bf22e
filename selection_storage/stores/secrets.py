"""Which storage options are credentials, and how they stay out of what Prefect records.

A flow run's parameters are stored by the Prefect server and shown in its UI. Prefect writes them with FastAPI's
JSON encoder, which writes pydantic's ``SecretStr`` as ``'**********'``. So every caller that builds a run's
``storage_options`` (the command line) wraps each credential in one with :func:`masked`: the server and its database
never receive it, while the run's code holds it (also on a process or Dask worker: it pickles whole), and
:func:`revealed` hands it to the store's client, the one place it is needed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from pydantic import SecretStr

#: The option names that carry a credential, in any store's options or in a mapping inside them (``client_kwargs``):
#: s3fs's ``key``, ``secret`` and ``token``; gcsfs's ``token``; adlfs's ``account_key``, ``sas_token``,
#: ``connection_string``, ``client_secret`` and ``credential``; and any ``password``.
SECRET_NAME: Final = re.compile(r"key|secret|token|passw(or)?d|sas|connection_string|credential", re.IGNORECASE)


class SecretJSON(SecretStr):
    """A credential that is not text (a service account's token given as a mapping), kept as its JSON."""


def masked(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with the value of every credential's name wrapped in a ``SecretStr`` (a value that is not text in
    a :class:`SecretJSON`); the other values, key order and nested mappings are kept."""
    return {name: _masked(name, value) for name, value in options.items()}


def revealed(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` as the store's client takes them: every masked credential as the value it was given."""
    return {name: _revealed(value) for name, value in options.items()}


def _masked(name: str, value: Any) -> Any:
    if isinstance(value, SecretStr):
        return value
    if SECRET_NAME.search(name):
        return SecretStr(value) if isinstance(value, str) else SecretJSON(json.dumps(value))
    if isinstance(value, Mapping):
        return masked(value)
    return value


def _revealed(value: Any) -> Any:
    if isinstance(value, SecretJSON):
        return json.loads(value.get_secret_value())
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, Mapping):
        return revealed(value)
    return value
