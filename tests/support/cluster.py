"""A real Dask cluster whose workers behave like machines that share no disk with the test or with each other.

``NamespaceCluster`` starts ``dask scheduler`` on 127.0.0.1 and, with ``start_worker(name)``, one ``dask worker``
at a time, each in a mount namespace of its own (``unshare --mount --propagation private``) where a fresh tmpfs
covers ``/tmp`` (and ``/var/tmp``, ``/dev/shm`` and the test's own ``TMPDIR``): a file the test writes into its
``tmp_path`` does not exist for a worker, and a file one worker writes under ``/tmp`` exists for no one else.

The repository and the interpreter stay visible even when they live under ``/tmp`` (CI clones the repository into
a temporary folder): before the tmpfs is mounted the launcher opens each of them (``exec 3< /tmp/clone``); after,
it recreates the path inside the tmpfs and bind-mounts the open directory back over it through its
``/proc/self/fd/N`` link, which still points at the hidden directory (``mount --no-canonicalize``: without it
``mount`` resolves the link to the path, now the empty placeholder, and binds that onto itself). The launcher
checks that each path is the original (``[ path -ef /proc/self/fd/N ]``) before it starts the worker.

Each worker is started as users start one, ``dask worker ADDRESS`` with its defaults: a nanny (``unshare`` and the
launcher ``exec`` into it) and, under it, the worker process, with as many threads as cores. The nanny leads its own
session and process group: ``Worker.kill()`` is a SIGKILL of that group, a machine that dies, which nothing
restarts; ``Worker.kill_process()`` kills the worker process alone (its nanny starts another) and
``Worker.kill_nanny()`` the nanny alone. The fixture ``namespace_cluster`` yields a cluster of two workers. Without
root or ``unshare`` the tests that use it are skipped, or fail if ``CONTENT_SELECTION_REQUIRE_NAMESPACES=1``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from tests.support import ROOT
from tests.support.prefect_fixtures import free_port

#: Bounded waits, generous for a loaded two-core machine (each start imports distributed: a second or two).
START_SECONDS = 60.0
LEAVE_SECONDS = 30.0

#: The folders that get a private tmpfs in each worker (with the test's ``tempfile.gettempdir()``).
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")

#: The worker's own folder, inside its private ``/tmp``: working folder, ``HOME`` and ``--local-directory``.
WORKER_HOME = "/tmp/namespace-worker"

#: The launcher is ``/bin/sh`` (dash on Debian), whose redirections take one-digit descriptors: 3 to 9.
_FIRST_FD, _LAST_FD = 3, 9


def namespace_support() -> str | None:
    """Why namespaced workers cannot start on this machine, or ``None``."""
    if not sys.platform.startswith("linux"):
        return "mount namespaces are Linux-only"
    if os.geteuid() != 0:
        return "needs root for `unshare --mount` and `mount -t tmpfs`"
    for tool in ("unshare", "mount"):
        if shutil.which(tool) is None:
            return f"`{tool}` (util-linux) is not installed"
    return None


def require_namespaces() -> None:
    """Skip the test when namespaced workers cannot start (fail instead under ``..._REQUIRE_NAMESPACES=1``)."""
    reason = namespace_support()
    if reason is None:
        return
    if os.environ.get("CONTENT_SELECTION_REQUIRE_NAMESPACES") == "1":
        pytest.fail(f"namespaced Dask workers required but unavailable: {reason}")
    pytest.skip(reason)


def group_exists(pgid: int) -> bool:
    """Whether any process of the process group ``pgid`` is still there (zombies included)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_group(process: subprocess.Popen[bytes], wait_seconds: float = 30.0) -> None:
    """SIGKILL the process group led by ``process`` (its own session), then reap the leader."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=wait_seconds)


def _read(path: Path, limit: int = 20_000) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as error:
        return f"<cannot read {path}: {error}>"
    return text if len(text) <= limit else "...\n" + text[-limit:]


def _pythonpath(*first: Path | str) -> str:
    return os.pathsep.join([*map(str, first), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])


class Worker:
    """One ``dask worker`` process in its own mount namespace, session and process group."""

    def __init__(self, name: str, process: subprocess.Popen[bytes], log_path: Path, log: IO[bytes]) -> None:
        self.name = name
        self.process = process
        self.log_path = log_path
        self._log = log
        self._killed = False
        #: The worker's address as the scheduler knows it, once it has joined.
        self.address: str | None = None

    @property
    def pid(self) -> int:
        """The nanny's pid, which is also the process group and session id of the worker's processes."""
        return self.process.pid

    def worker_pid(self) -> int:
        """The pid of the worker process now under the nanny."""
        import psutil

        (worker,) = [c for c in psutil.Process(self.pid).children() if "spawn_main" in " ".join(c.cmdline())]
        return worker.pid

    def kill_process(self) -> int:
        """SIGKILL the worker process (not its nanny, which starts another); its pid."""
        pid = self.worker_pid()
        os.kill(pid, signal.SIGKILL)
        return pid

    def kill_nanny(self) -> bool:
        """SIGKILL the nanny alone; whether its worker process then ended by itself (within ``LEAVE_SECONDS``).
        What is left of the group is killed either way."""
        os.kill(self.pid, signal.SIGKILL)
        self.process.wait(timeout=LEAVE_SECONDS)  # reaped: a zombie nanny still counts in its group
        deadline = time.monotonic() + LEAVE_SECONDS
        while group_exists(self.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        ended = not group_exists(self.pid)
        self.kill()
        return ended

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the worker's whole process group and reap it (the machine dies; idempotent)."""
        if self._killed:
            return
        try:
            _kill_group(self.process)
            self._killed = True
            deadline = time.monotonic() + LEAVE_SECONDS  # the worker process, orphaned, is reaped by init
            while group_exists(self.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            self._log.close()

    def log(self) -> str:
        """What the launcher and the worker wrote (stdout and stderr), for error messages."""
        if not self._log.closed:
            self._log.flush()
        return _read(self.log_path)

    def __repr__(self) -> str:
        state = "alive" if self.alive else f"exited {self.process.returncode}"
        return f"Worker({self.name!r}, pid={self.pid}, {state}, address={self.address!r})"


class NamespaceCluster:
    """``dask scheduler`` on 127.0.0.1 and workers that share no disk; a context manager.

    ``repo_root`` goes first on the workers' ``PYTHONPATH`` and, like the interpreter (``sys.prefix``,
    ``sys.base_prefix``), each ``PYTHONPATH`` entry and ``extra_paths``, stays visible to the workers at its
    own path if it lives under a private folder. Logs go to ``log_dir`` (kept) or a temporary folder (removed).
    """

    def __init__(
        self,
        repo_root: Path | str = ROOT,
        extra_paths: Iterable[Path | str] = (),
        log_dir: Path | str | None = None,
        start_seconds: float = START_SECONDS,
        worker_args: Iterable[str] = (),
    ) -> None:
        self.repo_root = Path(repo_root).resolve()
        self.extra_paths = [Path(path) for path in extra_paths]
        self.start_seconds = start_seconds
        self.worker_args = list(worker_args)  # beyond a user's defaults, e.g. ("--nthreads", "4")
        self._own_log_dir = log_dir is None
        self.log_dir = Path(tempfile.mkdtemp(prefix="namespace-cluster-") if log_dir is None else log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.workers: list[Worker] = []
        self.scheduler: subprocess.Popen[bytes] | None = None
        self._scheduler_log: IO[bytes] | None = None
        self._scheduler_log_path: Path | None = None
        self._port: int | None = None
        self._client: Any = None
        self._closed = False

    # --- lifecycle ---------------------------------------------------------------------------------

    def __enter__(self) -> NamespaceCluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> NamespaceCluster:
        """Start the scheduler and wait (bounded) until it accepts connections."""
        if self.scheduler is not None:
            return self
        self.private_dirs()  # refuse a layout it cannot isolate, before starting anything
        self.binds()
        for attempt in range(3):  # the free port can be taken between free_port() and the scheduler's bind
            if self._start_scheduler(attempt):
                return self
        raise RuntimeError(f"dask scheduler did not start; its output:\n{self._scheduler_output()}")

    def close(self) -> None:
        """Kill every worker and the scheduler (their whole process groups), reap them; idempotent."""
        if self._closed:
            return
        self._closed = True
        errors: list[BaseException] = []
        if self._client is not None:
            try:
                self._client.close(timeout=10)
            except Exception as error:  # noqa: BLE001 - the processes go whatever the client says
                errors.append(error)
            self._client = None
        for worker in self.workers:
            try:
                worker.kill()
            except Exception as error:  # noqa: BLE001
                errors.append(error)
        if self.scheduler is not None:
            try:
                _kill_group(self.scheduler)
            except Exception as error:  # noqa: BLE001
                errors.append(error)
        if self._scheduler_log is not None:
            self._scheduler_log.close()
        if self._own_log_dir:
            shutil.rmtree(self.log_dir, ignore_errors=True)
        if errors:
            raise RuntimeError(f"closing the cluster: {errors!r}") from errors[0]

    @property
    def address(self) -> str:
        if self._port is None:
            raise RuntimeError("the cluster is not started")
        return f"tcp://127.0.0.1:{self._port}"

    @property
    def client(self) -> Any:
        """A ``distributed.Client`` of the cluster (not the default one), closed by ``close()``."""
        if self._client is None:
            from distributed import Client

            self._client = Client(self.address, timeout=self.start_seconds, set_as_default=False)
        return self._client

    @property
    def pids(self) -> list[int]:
        """Every process (and process group) the cluster started: the scheduler's and every worker's."""
        scheduler = [self.scheduler.pid] if self.scheduler is not None else []
        return scheduler + [worker.pid for worker in self.workers]

    # --- the scheduler -----------------------------------------------------------------------------

    def _start_scheduler(self, attempt: int) -> bool:
        port = free_port()
        self._scheduler_log_path = self.log_dir / f"scheduler-{attempt}.log"
        self._scheduler_log = open(self._scheduler_log_path, "wb")  # noqa: SIM115 - closed by close()
        # its scratch folder is its own: dask purges "stale" folders of others in a shared one
        env = {**os.environ, "PYTHONPATH": _pythonpath(self.repo_root), "DASK_TEMPORARY_DIRECTORY": str(self.log_dir)}
        command = [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port)]
        command += ["--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
        self.scheduler = subprocess.Popen(
            command,
            env=env,
            cwd=self.log_dir,
            stdin=subprocess.DEVNULL,
            stdout=self._scheduler_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        # ready: it says it listens (so the port is its own, not another process's that took it first),
        # and the port accepts connections
        listening = f"Scheduler at: tcp://127.0.0.1:{port}"
        deadline = time.monotonic() + self.start_seconds
        while self.scheduler.poll() is None:
            try:
                if listening not in " ".join(self._scheduler_output().split()):
                    raise ConnectionRefusedError
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError:
                if time.monotonic() > deadline:
                    _kill_group(self.scheduler)
                    raise RuntimeError(
                        f"dask scheduler did not accept connections on 127.0.0.1:{port} within "
                        f"{self.start_seconds:.0f} s; its output:\n{self._scheduler_output()}"
                    ) from None
                time.sleep(0.1)
                continue
            if self.scheduler.poll() is None:
                self._port = port
                return True
        self._scheduler_log.close()
        if "address already in use" in self._scheduler_output().lower() and attempt < 2:
            return False
        raise RuntimeError(
            f"dask scheduler exited with {self.scheduler.returncode}; its output:\n{self._scheduler_output()}"
        )

    def _scheduler_output(self) -> str:
        if self._scheduler_log_path is None:
            return "<not started>"
        if self._scheduler_log is not None and not self._scheduler_log.closed:
            self._scheduler_log.flush()
        return _read(self._scheduler_log_path)

    # --- the workers' mount namespaces -------------------------------------------------------------

    def private_dirs(self) -> list[Path]:
        """The folders each worker gets an empty tmpfs over: ``PRIVATE_DIRS`` and the test's temp folder."""
        found: list[Path] = []
        for candidate in (*PRIVATE_DIRS, tempfile.gettempdir()):
            path = Path(os.path.realpath(candidate))
            if not path.is_dir() or path in found:
                continue
            if path == Path(path.anchor):
                raise ValueError(f"cannot cover {candidate!r} (the root folder) with a private tmpfs")
            found.append(path)
        # a folder inside another is covered already
        return [path for path in found if not any(path != other and path.is_relative_to(other) for other in found)]

    def keep_paths(self) -> list[Path]:
        """What the workers must see at its own path: the repository, the interpreter, ``PYTHONPATH``..."""
        candidates: list[Path | str] = [
            self.repo_root,
            sys.prefix,
            sys.base_prefix,
            sys.exec_prefix,
            Path(sys.executable).resolve().parent,
            *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)),
            *self.extra_paths,
        ]
        paths = {Path(os.path.realpath(path)) for path in candidates if os.path.exists(path)}
        # a path inside another comes with it
        return sorted(
            path for path in paths if not any(path != other and path.is_relative_to(other) for other in paths)
        )

    def binds(self) -> list[tuple[Path, Path]]:
        """``(private folder, kept path)`` for each kept path that a private tmpfs would hide."""
        binds: list[tuple[Path, Path]] = []
        for private in self.private_dirs():
            for path in self.keep_paths():
                if path == private:
                    raise ValueError(f"{path} must stay visible to the workers, and cannot be private as a whole")
                if path.is_relative_to(private):
                    binds.append((private, path))
        if len(binds) > _LAST_FD - _FIRST_FD + 1:
            raise ValueError(f"too many folders to bind back into the workers' namespaces: {binds}")
        return binds

    def worker_script(self, name: str) -> str:
        """The ``/bin/sh`` launcher run by ``unshare``: private tmpfs, binds back, then ``exec`` the worker."""
        q = shlex.quote
        binds = self.binds()
        fds = {path: fd for fd, (_, path) in enumerate(binds, start=_FIRST_FD)}
        lines = ["set -eu"]
        lines += [f"exec {fd}< {q(str(path))}" for path, fd in fds.items()]  # open before they are hidden
        for private in self.private_dirs():
            lines.append(f"mount -t tmpfs -o mode=1777 namespace-cluster {q(str(private))}")
            for path in (path for owner, path in binds if owner == private):
                fd, target, link = fds[path], q(str(path)), f"/proc/self/fd/{fds[path]}"
                if path.is_dir():
                    lines.append(f"mkdir -p {target}")
                else:
                    lines.append(f"mkdir -p {q(str(path.parent))}; : > {target}")
                lines.append(f"mount --no-canonicalize --bind {link} {target}")
                lines.append(f"[ {target} -ef {link} ] || {{ echo 'bind of {path} failed' >&2; exit 70; }}")
                lines.append(f"exec {fd}<&-")
        home = q(WORKER_HOME)
        lines += [f"mkdir -p {home}/home {home}/local", f"cd {home}"]
        command = [sys.executable, "-m", "distributed.cli.dask_worker", self.address, "--name", name]
        command += ["--host", "127.0.0.1", *self.worker_args]
        command += ["--no-dashboard", "--dashboard-address", "127.0.0.1:0", "--death-timeout", "60"]
        command += ["--local-directory", f"{WORKER_HOME}/local"]
        lines.append(f"exec {shlex.join(command)}")
        return "\n".join(lines) + "\n"

    def worker_env(self) -> dict[str, str]:
        """The test's environment (``PATH``, ``VIRTUAL_ENV``, ``AWS_*``...), with the repository importable
        and ``TMPDIR``, ``HOME`` and Dask's temporary folder inside the worker's private tmpfs."""
        return {
            **os.environ,
            "PYTHONPATH": _pythonpath(self.repo_root),
            "TMPDIR": "/tmp",
            "HOME": f"{WORKER_HOME}/home",
            "DASK_TEMPORARY_DIRECTORY": f"{WORKER_HOME}/local",
        }

    # --- workers -----------------------------------------------------------------------------------

    def start_worker(self, name: str) -> Worker:
        """Start one worker in its own mount namespace and wait (bounded) until the scheduler sees it."""
        return self.start_workers([name])[0]

    def start_workers(self, names: Iterable[str]) -> list[Worker]:
        """Start workers side by side, then wait (bounded) until the scheduler sees all of them."""
        if self._closed or self.scheduler is None:
            raise RuntimeError("the cluster is not running")
        started = [self._launch(name) for name in names]
        self._wait_joined(started)
        return started

    def _launch(self, name: str) -> Worker:
        unshare = shutil.which("unshare")
        if unshare is None:
            raise RuntimeError("`unshare` (util-linux) is not installed")
        log_path = self.log_dir / f"worker-{name}.log"
        log = open(log_path, "wb")  # noqa: SIM115 - closed by Worker.kill()
        try:
            process = subprocess.Popen(
                [unshare, "--mount", "--propagation", "private", "/bin/sh", "-c", self.worker_script(name), name],
                env=self.worker_env(),
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except BaseException:
            log.close()
            raise
        worker = Worker(name, process, log_path, log)
        self.workers.append(worker)
        return worker

    def worker_addresses(self) -> dict[str, str]:
        """``{name: address}`` of the workers the scheduler knows now."""
        # asked of the scheduler itself: ``Client.scheduler_info`` returns the client's cached identity, which
        # its periodic refresh can overwrite with one holding no workers between the fetch and the return
        workers = self.client.sync(self.client.scheduler.identity, n_workers=-1)["workers"]
        return {str(info.get("name")): address for address, info in workers.items()}

    def _wait_joined(self, workers: list[Worker]) -> None:
        deadline = time.monotonic() + self.start_seconds
        while True:
            known = self.worker_addresses()
            for worker in workers:
                worker.address = known.get(worker.name, worker.address)
            pending = [worker for worker in workers if worker.name not in known]
            if not pending:
                return
            dead = [worker for worker in pending if not worker.alive]
            if dead or time.monotonic() > deadline:
                for worker in pending:
                    worker.kill()
                why = "exited before joining" if dead else f"did not join within {self.start_seconds:.0f} s"
                output = "\n".join(f"--- {worker!r}:\n{worker.log()}" for worker in pending)
                raise RuntimeError(f"dask worker {', '.join(w.name for w in pending)} {why}; output:\n{output}")
            time.sleep(0.1)

    def wait_gone(self, worker: Worker, timeout: float = LEAVE_SECONDS) -> float:
        """Wait (bounded) until the scheduler no longer lists ``worker``; the seconds it took."""
        start = time.monotonic()
        while worker.name in self.worker_addresses():
            if time.monotonic() - start > timeout:
                raise TimeoutError(f"the scheduler still lists {worker!r} after {timeout:.0f} s")
            time.sleep(0.1)
        return time.monotonic() - start


@pytest.fixture
def namespace_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NamespaceCluster]:
    """A started ``NamespaceCluster`` with two workers, ``w1`` and ``w2``, closed (every process killed) after."""
    require_namespaces()
    with NamespaceCluster(log_dir=tmp_path_factory.mktemp("namespace-cluster")) as cluster:
        cluster.start_workers(["w1", "w2"])
        yield cluster
