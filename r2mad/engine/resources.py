"""Where the engine (r2mad/engine/service.py) finds backends, banks and admission for a command: `Local` (the
environment's keys, a bank opened for one run, no line) and `Given` (backends a caller made); and the backend,
bank and agent-count helpers the app's resources (serving/shared.py) use too. Nothing here reads the environment."""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from r2mad.backends import make_backend
from r2mad.backends.base import ChatBackend
from r2mad.engine.service import RunRequest, no_line
from r2mad.memory.summaries import SummaryCache
from r2mad.settings.config import Config, ConfigError, api_key_for

log = logging.getLogger("r2mad.ui")  # the app's log, where these resources serve


def backend_for(config: Config, backbone: str, *, pasted_token: str | None = None,
                env: dict | None = None) -> ChatBackend:
    spec = config.backbone(backbone)
    return make_backend(spec, api_key=api_key_for(spec, env, pasted_token))


def check_agent_count(names: Sequence[str], n_agents: int) -> None:
    """Refuse a mixed-model debate that does not name one backbone per agent."""
    if len([n for n in names if n.strip()]) != n_agents:
        raise ConfigError(f"{len(names)} agent backbones were given for {n_agents} agents; give one per agent "
                          "(e.g. --agent-backbones a,b,c for 3 agents) or change --agents.")


def open_bank(path: str | Path | None, config: Config, *, task_kind: str | None = None):
    """(bank or None, notices). A missing or unusable bank is a visible notice, never a crash."""
    if not path:
        return None, []
    from r2mad.memory.bank import MemoryBank, own_embedder

    try:
        bank = MemoryBank.open(Path(path), own_embedder(path, config.app.embedder),
                               index_root=config.app.index_root, expected_task=task_kind)
    except (ValueError, OSError) as exc:  # refused before the index is built: wrong task, embedder, …
        return None, [f"Memory off: {exc}"]
    usable, notices = check_bank(bank, path, task_kind)
    if usable is None:
        bank.close()
    return usable, notices


def check_bank(bank, path, task_kind: str | None):
    """(bank or None, notices): a bank for another task kind or an empty one turns memory off, visibly."""
    held = bank.manifest.get("task")
    if task_kind is not None and held != task_kind:
        return None, [f"Memory off: bank {path} holds {held} cases but this question is {task_kind}; "
                      f"choose a bank built for {task_kind} questions."]
    if bank.is_empty:
        return None, [f"Memory off: the bank {path} holds no cases yet."]
    return bank, list(bank.notices)  # e.g. an index that was rebuilt


class Local:
    """A command's resources: backends with the environment's keys (made once per backbone), a bank opened for the
    run and closed after, no line. `wrap`: applied to every backend (e.g. blame's recording)."""

    def __init__(self, config: Config, wrap: Callable[[ChatBackend], ChatBackend] | None = None, *,
                 summaries: SummaryCache | None = None):
        self.config, self.wrap = config, wrap or (lambda backend: backend)
        self.summaries = summaries if summaries is not None else SummaryCache(config.app.summaries_file)
        self._made: dict[str, ChatBackend] = {}
        self._lock = threading.Lock()

    def _backend(self, name: str) -> ChatBackend:
        with self._lock:
            if name not in self._made:
                self._made[name] = self.wrap(backend_for(self.config, name))
            return self._made[name]

    def judge_backend(self, name: str) -> ChatBackend:
        return self._backend(name)

    def backends(self, request: RunRequest) -> tuple[ChatBackend, list[ChatBackend]]:
        names = list(request.agent_backbones)
        if names:
            check_agent_count(names, request.settings.agents)
        return self._backend(request.backbone), [self._backend(name) for name in names]

    def bank(self, folder: str | None, task_kind: str) -> tuple[Any, list[str]]:
        return open_bank(folder, self.config, task_kind=task_kind)

    def release(self, bank) -> None:
        if bank is not None:
            bank.close()

    admitted = staticmethod(no_line)


class Given:
    """Backends (and a bank) a caller already made: a benchmark's, a test's, a learning curve's growing bank.
    No line; the bank is the caller's to close."""

    def __init__(self, backend: ChatBackend, agents: Sequence[ChatBackend] = (), *, bank=None,
                 notices: Sequence[str] = (), summaries: SummaryCache | None = None, judge: ChatBackend | None = None):
        self.backend, self.agents, self.opened, self.notices = backend, list(agents), bank, list(notices)
        self.summaries, self.judge = summaries, judge

    def judge_backend(self, name: str) -> ChatBackend:
        if self.judge is None or self.judge.name != name:
            raise ConfigError(f"The judge backbone {name!r} was not given; pass its backend, or set judge to auto, "
                              "self or off.")
        return self.judge

    def backends(self, request: RunRequest) -> tuple[ChatBackend, list[ChatBackend]]:
        if [b.name for b in self.agents] != list(request.agent_backbones):
            raise ConfigError("The agents' backends do not match the run's agent backbones; pass one per agent.")
        return self.backend, list(self.agents)

    def bank(self, folder: str | None, task_kind: str) -> tuple[Any, list[str]]:
        return self.opened, list(self.notices)

    def release(self, bank) -> None:
        pass

    admitted = staticmethod(no_line)
