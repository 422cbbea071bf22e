"""Test session setup.

Prefect reads its settings when it is first imported, so its home directory is
pointed at a fresh temporary folder here, before any test module imports it:
tests never read or write ``~/.prefect``, never use a server or profile of the
person running them, and never reach the network (telemetry off).

Core tests need none of this and use no Prefect fixture: the Prefect fixtures
(``prefect_harness``, ``batch_factory``...) live in ``tests/support/prefect_fixtures.py`` and are
opt-in, requested by the ``test_prefect_*`` modules.
"""

from __future__ import annotations

import os
import tempfile

import pytest

_PREFECT_HOME = tempfile.mkdtemp(prefix="content-selection-prefect-home-")
os.environ["PREFECT_HOME"] = _PREFECT_HOME
os.environ["PREFECT_PROFILES_PATH"] = os.path.join(_PREFECT_HOME, "profiles.toml")
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["PREFECT_SERVER_UI_ENABLED"] = "false"
for _name in ("PREFECT_API_URL", "PREFECT_API_KEY", "PREFECT_PROFILE", "CONTENT_SELECTION_DATA_ROOT"):
    os.environ.pop(_name, None)

from hypothesis import settings  # noqa: E402

from tests.support import FULL_EXAMPLES  # noqa: E402

# The full profile runs by default (and in .ci/run); the quick loop passes --hypothesis-profile=quick.
settings.register_profile("full", max_examples=FULL_EXAMPLES)
settings.register_profile("quick", max_examples=FULL_EXAMPLES // 10)
settings.load_profile("full")

from tests.support.https_server import https_server  # noqa: E402,F401 - nginx over HTTPS on loopback
from tests.support.object_stores import (  # noqa: E402,F401 - real object stores on loopback
    bucket,
    s3_server,
    store_server,
    store_servers,
)
from tests.support.postgres import postgres_url  # noqa: E402,F401 - the real server's database
from tests.support.prefect_fixtures import (  # noqa: E402,F401 - fixtures, registered by import
    batch_factory,
    data_root,
    monkeypatch_session,
    no_data_root_env,
    prefect_harness,
    session_api,
)
from tests.support.prefect_server import server  # noqa: E402,F401 - the session's real Prefect server
from tests.support.redis import redis_server  # noqa: E402,F401 - its Redis (messaging, ordering, leases)

#: The long serial groups, each run by one xdist worker, longest first: collected first, they are the first work
#: units handed out, so they start at once on different workers instead of meeting on one at the end.
LONG_GROUPS = ("server", "crawl-cluster")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (pyproject.toml's default): one xdist worker more than the cores this process may use. The long
    tests mostly wait (a heartbeat window, a lease going stale, a minute of outage) while the CPU has room, so on two
    cores a third worker fills that time (README, "Tests"). ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides where set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    return len(os.sched_getaffinity(0)) + 1


@pytest.hookimpl(trylast=True)  # after Hypothesis's own, which ends its plugin's initialization
def pytest_sessionstart(session: pytest.Session) -> None:
    """Build Hypothesis's Unicode tables (``.hypothesis/unicode_data``) once, outside any test. A fresh clone (CI)
    has none; built inside a test's first draw, they trip Hypothesis's own warning "Do not use the `random` module
    inside strategies" (seen with hypothesis 6.155; none once the tables exist)."""
    from hypothesis import find
    from hypothesis import strategies as st

    find(st.text(min_size=1), lambda text: True)


def pytest_collection_modifyitems(items: list) -> None:
    """Under pytest-xdist (``--dist loadgroup``), every test on the real server runs in one worker: one server; and
    the groups of :data:`LONG_GROUPS` come first, in that order (the others keep theirs)."""

    def group(item: pytest.Item) -> str | None:
        marker = item.get_closest_marker("xdist_group")
        return None if marker is None else (marker.args[0] if marker.args else marker.kwargs.get("name"))

    for item in items:
        if item.get_closest_marker("server") is not None:
            item.add_marker(pytest.mark.xdist_group("server"))
    rank = {name: n for n, name in enumerate(LONG_GROUPS)}
    items.sort(key=lambda item: rank.get(group(item) or "", len(LONG_GROUPS)))
