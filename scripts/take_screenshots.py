"""Take the README's screenshots of the Prefect UI: a real server, the sample run, a triggered run.

What it does, all on 127.0.0.1 and in a temporary folder (nothing of the repository is written
but the pictures):

1. starts ``prefect server start`` with its UI, on a free port, with a temporary ``PREFECT_HOME``;
2. starts ``content-selection serve`` on a temporary data root (the manual, scheduled, triggered
   and extraction deployments, with their schedules and triggers);
3. runs ``content-selection run`` on a copy of ``examples/sample_extracted.json`` (the README's
   main command, against this server), and lets ``examples/upstream_flow.py`` write a batch and
   emit the event that starts ``select-content/triggered``;
4. opens the pages a user looks at in headless Chromium (Debian's ``chromium`` package, driven over
   its DevTools protocol on 127.0.0.1) and saves them under ``docs/img/``: the flow run, the
   ``selection-scores`` table, the closest calls, the ``selection-summary`` markdown, the Run form
   of ``select-content/manual``, the triggered run, and a triggered run refused because its path
   is outside the data root.

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

#: The Run form is long: tall enough to show every field down to the task runner's drop-down.
RUN_FORM_HEIGHT = 1900

#: Emits the batch-extracted event for the path given as argument, as an upstream flow does.
EMIT = "import sys\nfrom content_selection import emit_batch_extracted\nemit_batch_extracted(sys.argv[1])"

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

    def final_run(self, deployment_id: str, input_path: Path) -> dict[str, Any] | None:
        """The run of the deployment on ``input_path``, once it has reached a final state."""
        for run in self.flow_runs(deployment_id={"any_": [deployment_id]}):
            final = run["state"] and run["state"]["type"] in {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
            if final and run["parameters"].get("input_path") == str(input_path):
                return run
        return None

    def artifacts(self, flow_run_id: str) -> dict[str, dict[str, Any]]:
        body = {"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}}
        return {a["key"]: a for a in self.http.post("/artifacts/filter", json=body).json() if a.get("key")}


class Browser:
    """Headless Chromium driven over its DevTools protocol, one page after the other.

    The UI is a single-page app that fades pages in and fetches its data after the first
    paint; Chromium's ``--screenshot --virtual-time-budget`` caught some pages (the Run form)
    in the middle of that fade. Here each page gets ``SETTLE_SECONDS`` of real time after it
    was opened. (The UI scrolls inside its own panes, so a page's height cannot be read from the
    document: a long page is given its height, as the Run form is.)
    """

    SETTLE_SECONDS = 6.0

    def __init__(self, chromium: str, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.profile = tempfile.mkdtemp(prefix="content-selection-chromium-")
        port = free_port()
        self.process = subprocess.Popen(
            [
                chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                f"--user-data-dir={self.profile}", f"--remote-debugging-port={port}",
                "--remote-debugging-address=127.0.0.1", f"--window-size={width},{height}", "about:blank",
            ],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        tabs = wait_for("Chromium", lambda: self._tabs(port), 60)
        page = next(t for t in tabs if t["type"] == "page")
        from websockets.sync.client import connect

        self.ws = connect(page["webSocketDebuggerUrl"], max_size=None)
        self.calls = 0
        self.call("Page.enable")

    @staticmethod
    def _tabs(port: int) -> list[dict[str, Any]] | None:
        try:
            return list(httpx.get(f"http://127.0.0.1:{port}/json", timeout=2).json())
        except httpx.HTTPError:
            return None

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        import json

        self.calls += 1
        self.ws.send(json.dumps({"id": self.calls, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=120))
            if message.get("id") == self.calls:
                if "error" in message:
                    raise SystemExit(f"take_screenshots: Chromium refused {method}: {message['error']}")
                return dict(message.get("result", {}))

    def shoot(self, url: str, target: Path, height: int | None = None) -> None:
        """Save the page at ``url`` as it looks after ``SETTLE_SECONDS``, ``height`` pixels tall if given."""
        self.call("Emulation.setDeviceMetricsOverride", width=self.width, height=height or self.height,
                  deviceScaleFactor=1, mobile=False)  # fmt: skip
        self.call("Page.navigate", url=url)
        time.sleep(self.SETTLE_SECONDS)
        self._save(target, url)

    def _save(self, target: Path, url: str) -> None:
        import base64

        shot = self.call("Page.captureScreenshot", format="png")
        target.write_bytes(base64.b64decode(shot["data"]))
        print(f"  {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}  <- {url}")

    def close(self) -> None:
        self.ws.close()
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=30)
        shutil.rmtree(self.profile, ignore_errors=True)


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
                triggered_run = wait_for(
                    "the triggered run", lambda: api.final_run(triggered["id"], upstream_target), 300
                )

                # An event naming a batch outside the data root: the run is refused, Failed, in one line.
                outside = work / "outside_extracted.json"
                shutil.copyfile(SAMPLE, outside)
                subprocess.run(
                    [sys.executable, "-c", EMIT, str(outside)], cwd=ROOT, env=client_env, check=True, timeout=300
                )
                refused_run = wait_for("the refused run", lambda: api.final_run(triggered["id"], outside), 300)

                artifacts = api.artifacts(run["id"])
                pages = [
                    ("ui-flow-run.png", f"/runs/flow-run/{run['id']}"),
                    ("ui-selection-scores.png", f"/artifacts/artifact/{artifacts['selection-scores']['id']}"),
                    ("ui-selection-summary.png", f"/artifacts/artifact/{artifacts['selection-summary']['id']}"),
                    ("ui-run-form.png", f"/deployments/deployment/{manual['id']}/run", RUN_FORM_HEIGHT),
                    ("ui-triggered-run.png", f"/runs/flow-run/{triggered_run['id']}"),
                    ("ui-refused-run.png", f"/runs/flow-run/{refused_run['id']}"),
                ]
                if "selection-closest-calls" in artifacts:
                    closest = artifacts["selection-closest-calls"]["id"]
                    pages.insert(2, ("ui-closest-calls.png", f"/artifacts/artifact/{closest}"))
                print(f"screenshots of {ui} into {args.out}:")
                browser = Browser(chromium, args.width, args.height)
                try:
                    for name, path, *height in pages:
                        browser.shoot(ui + path, args.out / name, *height)
                finally:
                    browser.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("Now look at each picture before you commit it.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
