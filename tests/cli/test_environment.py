"""``selection_cli.environment``: the settings the command line reads from the environment."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest

from selection_cli.environment import PURE_ENV, apply_kernel_setting, prepare_embedded_api
from selection_core import kernel

BUILT = importlib.util.find_spec("selection_core._kernel") is not None


@pytest.fixture
def restore_kernel() -> Iterator[None]:
    was = kernel.KERNEL
    yield
    kernel.KERNEL = was


@pytest.mark.skipif(not BUILT, reason="the compiled kernel is not built")
@pytest.mark.parametrize(
    ("value", "used"),
    [
        pytest.param(None, True, id="unset"),
        pytest.param("", True, id="empty"),
        pytest.param("0", True, id="zero"),
        pytest.param("1", False, id="one"),
        pytest.param("yes", False, id="other"),
    ],
)
@pytest.mark.usefixtures("restore_kernel")
def test_pure_switch(monkeypatch: pytest.MonkeyPatch, value: str | None, used: bool) -> None:
    if value is None:
        monkeypatch.delenv(PURE_ENV, raising=False)
    else:
        monkeypatch.setenv(PURE_ENV, value)
    apply_kernel_setting()
    assert (kernel.KERNEL is not None) is used


def test_embedded_api_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"DO_NOT_TRACK": "kept"}
    monkeypatch.setattr(os, "environ", env)
    prepare_embedded_api()
    assert env == {
        "DO_NOT_TRACK": "kept",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    }
