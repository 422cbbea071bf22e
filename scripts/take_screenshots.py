"""Take the README's screenshots of the Prefect UI: a real server, the sample run, a triggered run.

What it does, all on 127.0.0.1 and in a temporary folder (nothing of the repository is written
but the pictures):

1. starts ``prefect server start`` with its UI, on a free port, with a temporary ``PREFECT_HOME``;
2. starts ``content-selection serve`` on a temporary data root (the manual, scheduled, triggered
   and extraction deployments, with their schedules and triggers);
3. runs ``content-selection run`` on a copy of ``examples/sample_extracted.json`` (the README's
   main command, against this server), and lets ``examples/upstream_flow.py`` write a batch and
   emit the event that starts ``select-content/triggered``;
4. opens the pages a user looks at in headless Chromium (Debian's ``chromium`` package) and saves
   them under ``docs/img/``: the flow run, the ``selection-scores`` table, the closest calls, the
   ``selection-summary`` markdown, the Run form of ``select-content/manual``, and the triggered run.

Run it from the project root, in the project's virtual environment::

    python scripts/take_screenshots.py            # writes docs/img/ui-*.png
    python scripts/take_screenshots.py --out /tmp/shots --width 1400

Then look at every picture before committing it: the script cannot tell whether a page is readable.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "sample_extracted.json"
UPSTREAM = ROOT / "examples" / "upstream_flow.py"

T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 180.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise SystemExit(f"take_screenshots: gave up waiting for {what} after {timeout:.0f} s")
        time.sleep(1.0)


@contextmanager
def background(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A subprocess in its own session, stopped (with its children) on exit."""
    with open(log, "wb") as out:
        process = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


class Api:
    """The few REST calls the script needs (the server's own API, as the UI uses it)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(base_url=url, timeout=30)

    def healthy(self) -> bool:
        try:
            return self.http.get("/health").status_code == 200
        except httpx.HTTPError:
            return False

    def deployment(self, name: str) -> dict[str, Any] | None:
        response = self.http.get(f"/deployments/name/{name}")
        return response.json() if response.status_code == 200 else None

    def flow_runs(self, **flow_runs_filter: Any) -> list[dict[str, Any]]:
        body = {"flow_runs": flow_runs_filter, "sort": "EXPECTED_START_TIME_ASC"}
        return list(self.http.post("/flow_runs/filter", json=body).json())

    def final_run(self, deployment_id: str) -> dict[str, Any] | None:
        for run in self.flow_runs(deployment_id={"any_": [deployment_id]}):
            if run["state"] and run["state"]["type"] in {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}:
                return run
        return None

    def artifacts(self, flow_run_id: str) -> dict[str, dict[str, Any]]:
        body = {"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}}
        return {a["key"]: a for a in self.http.post("/artifacts/filter", json=body).json() if a.get("key")}


def screenshot(chromium: str, url: str, target: Path, width: int, height: int) -> None:
    """One page as Chromium draws it, after its scripts had 15 s of virtual time."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                f"--user-data-dir={profile}", f"--window-size={width},{height}",
                "--virtual-time-budget=15000", f"--screenshot={target}", url,
            ],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    print(f"  {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}  <- {url}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="folder of the pictures")
    parser.add_argument("--width", type=int, default=1400, help="window width in pixels (default: 1400)")
    parser.add_argument("--height", type=int, default=1000, help="window height in pixels (default: 1000)")
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        parser.error("chromium not found: apt-get install -y chromium")
    args.out.mkdir(parents=True, exist_ok=True)

    work = Path(tempfile.mkdtemp(prefix="content-selection-screenshots-"))
    port = free_port()
    api = Api(f"http://127.0.0.1:{port}/api")
    ui = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "CONTENT_SELECTION_"))}
    env.update(
        PREFECT_HOME=str(work / "prefect-home"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_UI_API_URL=api.url,
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    data_root = work / "data"
    data_root.mkdir()
    try:
        with background(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            env,
            work / "server.log",
        ):
            wait_for("the Prefect server", api.healthy)
            client_env = {**env, "PREFECT_API_URL": api.url, "PREFECT_RUNNER_POLL_FREQUENCY": "1"}
            with background(
                [sys.executable, "-m", "selection_cli.main", "serve", "--data-root", str(data_root)],
                client_env,
                work / "serve.log",
            ):
                manual = wait_for("the deployments", lambda: api.deployment("select-content/manual"))
                triggered = wait_for("the triggered deployment", lambda: api.deployment("select-content/triggered"))

                sample = data_root / "sample" / SAMPLE.name
                sample.parent.mkdir()
                shutil.copyfile(SAMPLE, sample)
                subprocess.run(
                    [sys.executable, "-m", "selection_cli.main", "run", str(sample)], cwd=ROOT, env=client_env,
                    check=True, timeout=300,
                )  # fmt: skip
                (run,) = [r for r in api.flow_runs() if r["name"] == f"select-{sample.name}"]

                upstream_target = data_root / "upstream" / "news_extracted.json"
                upstream_target.parent.mkdir()
                subprocess.run(
                    [sys.executable, str(UPSTREAM), str(SAMPLE), str(upstream_target)], cwd=ROOT, env=client_env,
                    check=True, timeout=300,
                )  # fmt: skip
                triggered_run = wait_for("the triggered run", lambda: api.final_run(triggered["id"]), 300)

                artifacts = api.artifacts(run["id"])
                pages = [
                    ("ui-flow-run.png", f"/runs/flow-run/{run['id']}"),
                    ("ui-selection-scores.png", f"/artifacts/artifact/{artifacts['selection-scores']['id']}"),
                    ("ui-selection-summary.png", f"/artifacts/artifact/{artifacts['selection-summary']['id']}"),
                    ("ui-run-form.png", f"/deployments/deployment/{manual['id']}/run"),
                    ("ui-triggered-run.png", f"/runs/flow-run/{triggered_run['id']}"),
                ]
                if "selection-closest-calls" in artifacts:
                    closest = artifacts["selection-closest-calls"]["id"]
                    pages.insert(2, ("ui-closest-calls.png", f"/artifacts/artifact/{closest}"))
                print(f"screenshots of {ui} into {args.out}:")
                for name, path in pages:
                    screenshot(chromium, ui + path, args.out / name, args.width, args.height)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("Now look at each picture before you commit it.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
