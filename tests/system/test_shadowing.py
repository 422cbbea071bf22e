"""A user's project with its own ``flows`` and ``tasks`` packages can still use this one.

The project is installed, non-editable, into a folder of its own; a throw-away
project beside it has ``flows/`` and ``tasks/`` packages of its own (whose
``flows/events.py`` raises on import). Run from inside that project, with only
the installed copy on ``sys.path``:

(a) ``from content_selection import emit_batch_extracted`` imports, and the call
    returns (``None`` or an event: with no API configured Prefect emits into
    nothing; no server is started or needed);
(b) ``content-selection select`` (the installed console script) selects a batch.

The install builds offline: ``--no-build-isolation --no-index`` uses the
setuptools of this environment (at least 77, from the ``dev`` extra).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.support import PACKAGES, ROOT

pytestmark = pytest.mark.slow

#: What the install needs from the repository.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", *PACKAGES)

EMIT_SCRIPT = """
import sys
from content_selection import emit_batch_extracted
import content_selection
assert "content_selection.flows.events" not in sys.modules and "tasks" not in sys.modules, sorted(sys.modules)
event = emit_batch_extracted(sys.argv[1])
print("emitted:", type(event).__name__)
print("from:", content_selection.__file__)
"""


def _install(target: Path, scratch: Path) -> None:
    pytest.importorskip("setuptools", minversion="77", reason="the install needs setuptools>=77 (the dev extra)")
    source = scratch / "source"
    source.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        else:
            shutil.copy2(path, source / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_NO_INPUT"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--quiet"]
        + ["--disable-pip-version-check", "--target", str(target), str(source)],
        capture_output=True,
        text=True,
        env=env,
        cwd=scratch,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def _user_project(root: Path) -> Path:
    """A project whose own ``flows`` and ``tasks`` would shadow this one's."""
    for package in ("flows", "tasks"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text(f'"""The user\'s own {package}."""\n')
    (root / "flows" / "events.py").write_text(
        'raise ImportError("the user\'s content_selection.flows.events was imported")\n'
    )
    return root


def test_installed_contract_and_command_ignore_the_users_flows_and_tasks(tmp_path: Path) -> None:
    target = tmp_path / "site"
    _install(target, tmp_path)
    project = _user_project(tmp_path / "project")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "CONTENT_SELECTION_"))}
    env.update(
        PYTHONPATH=str(target),
        PREFECT_HOME=str(tmp_path / "prefect-home"),
        HOME=str(tmp_path / "home"),
        PYTHONNOUSERSITE="1",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
    )

    # (a) the contract a user's flow imports
    (project / "upstream.py").write_text(EMIT_SCRIPT)
    batch = project / "today_extracted.json"
    text = "the city council voted on tuesday evening to fund the new library"
    article = {
        "id": 1,
        "trafilatura": {"text": text, "error": None},
        "newspaper4k": {"text": text + " share this", "error": None},
        "readability": {"cleaned_text": text, "error": None},
    }
    batch.write_bytes(orjson.dumps({"articles": [article]}))
    done = subprocess.run(
        [sys.executable, "upstream.py", str(batch)], capture_output=True, text=True, env=env, cwd=project, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[0] in ("emitted: NoneType", "emitted: Event"), done.stdout
    assert done.stdout.splitlines()[1] == f"from: {target / 'content_selection' / '__init__.py'}"

    # (b) the installed command
    command = target / "bin" / "content-selection"
    argv = [str(command)] if command.exists() else [sys.executable, "-m", "selection_cli.main"]
    done = subprocess.run(
        [*argv, "select", batch.name], capture_output=True, text=True, env=env, cwd=project, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    output = project / "today_extracted_selected.json"
    assert done.stdout.splitlines()[0] == "articles: 1"
    assert done.stdout.splitlines()[-1] == f"output: {output.name}"
    assert orjson.loads(output.read_bytes())["articles"][0]["selected_extractor"] in (
        "trafilatura",
        "newspaper4k",
        "readability",
    )
