"""The app's process-wide resources for the engine: `Shared` (one run store, banks opened once, backends for
configured backbones shared, a visitor's token used under its rules, the owner's allowance) and
`VisitorResources` for one visitor's request over it, in the app's line. Nothing here reads the environment;
nothing here is per browser session."""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Callable, Iterable

from r2mad.backends import make_backend
from r2mad.backends.base import BackendError, ChatBackend
from r2mad.engine.resources import backend_for, check_bank
from r2mad.engine.service import Endpoint, RunRequest, no_line
from r2mad.evaluation.costs import Prices, prices_of
from r2mad.memory.summaries import SummaryCache
from r2mad.runs.store import RunStore
from r2mad.serving.allowance import Ledger, Left, Metered, refusal
from r2mad.settings.config import ROOT, Backbone, Config, ConfigError, api_key_for
from r2mad.text import quoted, without_paths

log = logging.getLogger("r2mad.ui")  # the app's log, where these resources serve


class Shared:
    """The app's process-wide resources, created once and shared by every visitor."""

    def __init__(self, config: Config, *, secrets: Iterable[str] = ()):
        self.config = config
        self.env_secrets = [s for s in secrets if s]
        self.store_path = config.app.runs_db
        self.store = RunStore(self.store_path, secrets=lambda: self.env_secrets, taxonomy=config.taxonomy_file,
                              lock_wait_s=config.app.store_lock_wait_s, on_wait=log.info)
        for notice in self.store.take_notices():
            log.warning(notice)
        self.summaries = SummaryCache(config.app.summaries_file)  # R²-MAD's round summaries, shared
        self._lock = threading.Lock()  # held only for dictionary updates, never across slow work
        self._banks: dict[Path, Any] = {}
        self._opening: dict[Path, threading.Lock] = {}  # one opener per bank; other banks are not held up
        self.warming: dict[Path, str] = {}  # bank -> what its first opening is doing now
        self._backends: dict[str, Any] = {}
        allowance = config.app.allowance
        self.ledger = Ledger(config.app.allowance_db, allowance) if allowance.enabled else None

    # --- memory banks ---------------------------------------------------------------------------

    def resolve(self, folder: str | Path) -> Path:
        """A configured folder as given, or relative to the repository when it is not found here."""
        path = Path(folder)
        if not path.is_absolute() and not path.exists() and (ROOT / path).exists():
            return ROOT / path
        return path

    def bank_choices(self) -> list[str]:
        """Bank folders (as configured, e.g. "memory/demo-mcq") that hold a manifest.yaml."""
        found: list[str] = []
        for root in self.config.app.memory_dirs:
            base = self.resolve(root)
            if not base.is_dir():
                continue
            for sub in sorted(base.iterdir()):
                if (sub / "manifest.yaml").is_file():
                    found.append(str(Path(root) / sub.name))
        default = self.config.app.default_bank
        if default and default not in found and (self.resolve(default) / "manifest.yaml").is_file():
            found.insert(0, default)
        return found

    def listed_bank(self, name: str | None) -> str:
        """`name` when it is one of bank_choices, else ConfigError listing them: a visitor names banks, never
        folders of the server (a path outside the list is refused before anything is opened)."""
        choices = self.bank_choices()
        if name not in choices:
            which = "That bank" if any(c in (name or "") for c in "/\\~") else f"The bank {quoted(name or '')}"
            raise ConfigError(f"{which} is not one of this app's; name one of: {', '.join(choices) or 'none'}.")
        return name

    def bank(self, folder: str):
        """The bank at `folder`, opened once per process (shared by every session and the bank tab).
        The first opening loads the embedder and may build the index: call it off the event loop."""
        path = self.resolve(folder).resolve()
        with self._lock:
            if path in self._banks:
                return self._banks[path]
            opening = self._opening.setdefault(path, threading.Lock())
        with opening:
            if path not in self._banks:
                from r2mad.memory.bank import MemoryBank, own_embedder

                def progress(done: int, total: int) -> None:
                    self.warming[path] = f"indexing its cases: {done} of {total}"

                self.warming[path] = "loading the embedder"
                try:
                    embedder = own_embedder(path, self.config.app.embedder)  # the bank's own
                    self.warming[path] = "reading its cases"
                    bank = MemoryBank.open(path, embedder, index_root=self.config.app.index_root,
                                           progress=progress)
                finally:
                    self.warming.pop(path, None)
                with self._lock:
                    self._banks[path] = bank
            return self._banks[path]

    def warm_model(self, backbone: str) -> None:
        """Load an embedded backbone's model in the background (at app start), so the first debate finds it
        loaded; while it loads, a debate that waits for it says so (serving/line.py loading_words)."""
        def run() -> None:
            try:
                self.backend(backbone).process()
            except (BackendError, ConfigError):
                pass  # the first debate on it is told why
        spec = self.config.backbones.get(backbone)
        if spec is not None and spec.kind == "embedded":
            threading.Thread(target=run, name="warm-model", daemon=True).start()

    def warming_up(self, folder: str) -> str | None:
        """What the first opening of this bank is doing, while it runs."""
        return self.warming.get(self.resolve(folder).resolve())

    def warm(self, folder: str | None) -> None:
        """Open a bank in the background (at app start), so the first visitor finds it ready."""
        def run() -> None:
            try:
                self.bank(folder)
            except (ValueError, OSError):
                pass  # the visitor who picks it is told why
        if folder and (self.resolve(folder) / "manifest.yaml").is_file():
            threading.Thread(target=run, name="warm-bank", daemon=True).start()

    def bank_for_task(self, folder: str | None, task_kind: str) -> tuple[Any, list[str]]:
        """(bank or None, notices) for a debate; a bank not listed is refused (listed_bank), a mismatched or empty
        one is a notice (naming no folder of the server)."""
        if not folder:
            return None, []
        self.listed_bank(folder)
        try:
            bank = self.bank(folder)
        except (ValueError, OSError) as exc:
            return None, [f"Memory off: {without_paths(str(exc))}"]
        usable, notices = check_bank(bank, folder, task_kind)
        return usable, notices if usable is None else []  # the bank stays open for the whole process

    # --- backends -------------------------------------------------------------------------------

    def backend(self, backbone: str, *, token: str | None = None, endpoint: Endpoint | None = None,
                login_token: str | None = None, visitor: str | None = None) -> ChatBackend:
        """The backend for `backbone`, or for a custom `endpoint` (named as runs record it: "custom:MODEL"). A visitor's
        own token (pasted first, then a signed-in visitor's login token) goes only to a backbone that declares
        `visitor_token` (the Hugging Face router's), and a pasted one to a custom endpoint the visitor typed (off
        on a Space); every other backbone gets the environment's key, which on a Space serves visitors only when
        the config says so, or, for an anonymous `visitor` on the Hugging Face router, within the owner's
        allowance (allowance_backend). Backends for configured backbones with the environment's key are shared;
        the others are never cached."""
        token = (token or "").strip() or None
        if endpoint is not None:
            if not self.config.app.allow_custom_endpoint:
                raise ConfigError("Custom endpoints are switched off here; choose one of the listed backbones.")
            url = endpoint.base_url.strip()
            if not url.startswith(("http://", "https://")):
                raise ConfigError(f"The endpoint {quoted(url)} is not an http(s) URL; give one like "
                                  "http://localhost:8000/v1.")
            spec = Backbone(name=endpoint.name, kind="openai", label="custom endpoint", base_url=url,
                            model=(endpoint.model or "").strip() or None, visitor_token=True)
            return make_backend(spec, api_key=api_key_for(spec, {}, token))
        spec = self.config.backbone(backbone)
        own = (token or (login_token or "").strip() or None) if spec.visitor_token else None
        if own:
            return backend_for(self.config, backbone, pasted_token=own)
        metered = self.allowance_backend(spec, visitor)
        if metered is not None:
            return metered
        if self.config.on_space and not self.config.app.visitors_use_owner_token and spec.api_key_required:
            if spec.visitor_token:
                raise ConfigError(f"Backbone '{backbone}' runs on your own account here: sign in with Hugging "
                                  "Face (top of the page) or paste a token.")
            raise ConfigError(f"Backbone '{backbone}' needs the owner's {spec.api_key_env}, which visitors may not "
                              "use here; choose a Hugging Face backbone or the embedded model.")
        with self._lock:
            if backbone not in self._backends:
                env = {} if self.config.on_space and not self.config.app.visitors_use_owner_token else None
                self._backends[backbone] = backend_for(self.config, backbone, env=env)
            return self._backends[backbone]

    def allowance_backend(self, spec: Backbone, visitor: str | None) -> Metered | None:
        """The owner's key for an anonymous visitor's calls, metered by the allowance; None where it does not apply
        (allowance off, no visitor, or a backbone that is not on the Hugging Face router: the owner's token goes
        nowhere else). Refuses in one sentence, offering sign-in, when the visitor's allowance is spent."""
        if self.ledger is None or not visitor or not spec.visitor_token or not self.config.on_hf_router(spec):
            return None
        left = self.ledger.left(visitor)
        if left.spent:
            raise ConfigError(refusal(left, self.ledger.allowance))
        unpriced = self.ledger.allowance.unpriced_per_m
        prices = prices_of(spec) or Prices(unpriced, unpriced)
        return Metered(backend_for(self.config, spec.name), self.ledger, visitor, prices)

    def allowance_left(self, visitor: str | None) -> Left | None:
        """What this anonymous visitor may still spend today (None when there is no allowance)."""
        return self.ledger.left(visitor) if self.ledger is not None and visitor else None

    def mixed_backends(self, names: list[str], aux: str | None = None, *, n_agents: int, token: str | None = None,
                       login_token: str | None = None,
                       visitor: str | None = None) -> tuple[ChatBackend, list[ChatBackend]]:
        """(auxiliary backend, one backend per agent) for a mixed-model debate; each backbone
        under the rules of backend(), so a visitor's token reaches only the backbones declaring
        `visitor_token`; the others use the server's keys."""
        names = [(n or "").strip() for n in names]
        if len(names) != n_agents:
            raise ConfigError(f"{len(names)} agent backbones were given for {n_agents} agents; give one backbone "
                              "per agent.")
        empty = next((i for i, n in enumerate(names) if not n), None)
        if empty is not None:
            raise ConfigError(f"Agent {empty + 1} has no backbone; choose one for every agent, or run without "
                              "mixed models.")
        aux = (aux or "").strip() or names[0]
        made = {}
        for name in dict.fromkeys([aux, *names]):
            spec = self.config.backbone(name)  # unknown: one sentence listing the backbones
            try:
                made[name] = self.backend(name, token=token, login_token=login_token, visitor=visitor)
            except ConfigError:
                if spec.visitor_token or not token:
                    raise
                raise ConfigError(f"Backbone '{name}' needs {spec.api_key_env} set where the app runs; in a "
                                  "mixed-model debate a pasted token serves only Hugging Face backbones.") from None
        return made[aux], [made[n] for n in names]

    def resources(self, token: str | None = None, login_token: str | None = None, visitor: str | None = None, *,
                  line: Callable[[RunRequest], Any] | None = None) -> VisitorResources:
        """What the engine resolves a visitor's request with (see VisitorResources)."""
        return VisitorResources(self, token, login_token, visitor, line=line)

    def store_for(self, *tokens: str | None) -> RunStore:
        """The shared store, or (with a visitor's token) a store that also scrubs that token."""
        tokens = tuple(t.strip() for t in tokens if t and t.strip())
        if not tokens:
            return self.store
        return RunStore(self.store_path, secrets=lambda: [*tokens, *self.env_secrets],
                        taxonomy=self.store.taxonomy, lock_wait_s=self.store.lock_wait_s, on_wait=log.info)


class VisitorResources:
    """The engine's resources for one visitor's request: backends under the token rules of Shared.backend (or
    the custom endpoint the request carries), the process-wide banks, which stay open after the
    run, and `line`: the app's line for debates as the request enters it (serving/line.py in_line)."""

    def __init__(self, services: Shared, token: str | None = None, login_token: str | None = None,
                 visitor: str | None = None, *, line: Callable[[RunRequest], Any] | None = None):
        self.services, self.token, self.login_token, self.visitor = services, token, login_token, visitor
        self.summaries, self.admitted = services.summaries, line or no_line

    def backends(self, request: RunRequest) -> tuple[ChatBackend, list[ChatBackend]]:
        s = self.services
        if request.agent_backbones:
            return s.mixed_backends(list(request.agent_backbones), request.backbone, n_agents=request.settings.agents,
                                    token=self.token, login_token=self.login_token, visitor=self.visitor)
        return s.backend(request.backbone, token=self.token, endpoint=request.endpoint,
                         login_token=self.login_token, visitor=self.visitor), []

    def bank(self, folder: str | None, task_kind: str) -> tuple[Any, list[str]]:
        return self.services.bank_for_task(folder, task_kind)

    def judge_backend(self, name: str) -> ChatBackend:
        return self.services.backend(name, token=self.token, login_token=self.login_token, visitor=self.visitor)

    def release(self, bank) -> None:
        pass
