"""The app as a real process for `bench --memory` and `bench --load`: started as `make run` starts it (on a free
port, a fresh data folder, optionally a copy of the configs with other debate defaults), its process tree's
resident memory read from /proc (current, sampled peak, each process's high-water mark). Not a test helper."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import yaml

from r2mad.bench.children import child, free_port
from r2mad.settings.config import CONFIG_DIR, ROOT


def children(pid: int) -> list[int]:
    """Ids of the processes whose parent is `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _started(pid: int) -> str | None:
    """When a process started (field 22 of /proc/<pid>/stat), to tell it from a later one with its id."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _tree_kb(pid: int, field: str) -> int:
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue
        total += int(status.split(f"{field}:")[1].split()[0]) if f"{field}:" in status else 0
        todo += children(p)
    return total


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants (the model runs in a child), in MB."""
    return _tree_kb(pid, "VmRSS") / 1024


def tree_hwm_mb(pid: int) -> float:
    """The sum of each living process's own peak resident memory (VmHWM) over a process tree, in MB: an upper
    bound of the tree's peak, since the processes need not have peaked at the same moment."""
    return _tree_kb(pid, "VmHWM") / 1024


class Peak:
    """Samples a process tree's resident memory every `every_s` seconds while the block runs."""

    def __init__(self, pid: int, every_s: float = 0.05):
        self.pid, self.every_s, self.mb = pid, every_s, 0.0
        self._stop = threading.Event()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.mb = max(self.mb, tree_rss_mb(self.pid))
            time.sleep(self.every_s)

    def __enter__(self) -> Peak:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def config_copy(folder: Path, **defaults) -> Path:
    """A copy of the shipped configs in `folder` whose debate defaults (methods.yaml) take `defaults`."""
    target = Path(folder) / "configs"
    shutil.copytree(CONFIG_DIR, target)
    methods = yaml.safe_load((target / "methods.yaml").read_text())
    methods["defaults"].update(defaults)
    (target / "methods.yaml").write_text(yaml.safe_dump(methods, sort_keys=False))
    return target


QUICK_DEBATE = {"agents": 2, "rounds": 2, "max_tokens": 16, "answer_guard": "off"}  # the quick forms' debates
SERVE = ("import sys, app; from r2mad.settings.config import load_config; "
         "app.serve(load_config(sys.argv[1]), warm=sys.argv[2] == '1')")


class AppProcess:
    """`with AppProcess(...) as app:` the app serving on app.url (a fresh data folder each time); ended after."""

    def __init__(self, *, warm: bool = True, start_s: float = 180, **defaults):
        self.warm, self.start_s, self.defaults = warm, start_s, defaults

    def __enter__(self) -> AppProcess:
        self._tmp = tempfile.TemporaryDirectory(prefix="r2mad-bench-app-")
        configs = config_copy(Path(self._tmp.name), **self.defaults) if self.defaults else CONFIG_DIR
        port = free_port()
        self.data_dir = Path(self._tmp.name) / "var"  # the app's runs.sqlite and banks, read back by benches
        env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "R2MAD_DATA_DIR": str(self.data_dir)}
        self.log = Path(self._tmp.name) / "app.log"
        with self.log.open("wb") as log:
            self.proc = child([sys.executable, "-c", SERVE, str(configs), "1" if self.warm else "0"],
                              cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        self.pid, self.url = self.proc.pid, f"http://127.0.0.1:{port}/"
        try:
            self._wait_for(self.url + "gradio_api/info")
        except BaseException:
            self.__exit__()
            raise
        return self

    def _wait_for(self, url: str) -> None:
        deadline = time.monotonic() + self.start_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                last = self.log.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
                raise RuntimeError(f"the app exited at start-up (exit code {self.proc.returncode}): {last[0]}")
            try:
                urllib.request.urlopen(url, timeout=1).read()
                return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"the app did not answer {url} within {self.start_s:g} s")

    def __exit__(self, *exc) -> None:
        descendants, todo = [], [self.pid]
        while todo:
            found = children(todo.pop())
            todo += found
            descendants += [(pid, _started(pid)) for pid in found]
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        time.sleep(0.5)
        for pid, started in descendants:  # the model process ends when its stdin closes; this is in case it hangs
            if started is not None and _started(pid) == started:  # still that process, not a reused id
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
        self._tmp.cleanup()
