"""Typed configuration: the debate settings (dataclasses), `load_config`, which reads configs/*.yaml and the
environment, and the keys a backbone takes. The only module (with the CLI and app.py) that reads config files;
YAML reading and value checks live in config_files.py, the backbone and app settings in config_serving.py."""
from __future__ import annotations

import dataclasses
import os
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from r2mad.budget import MAX_QUESTION_CHARS, QUESTION_CHARS
from r2mad.settings.files import (  # noqa: F401 - re-exported: callers import them from here
    ConfigError,
    _check,
    _limits,
    load_mapping,
    load_yaml,
    validate,
    whole_number,
)
from r2mad.settings.serving import (  # noqa: F401 - re-exported: callers import them from here
    HF_ROUTER,
    Allowance,
    AppConfig,
    Backbone,
    allowance_from_env,
    with_router,
)
from r2mad.text import quoted

CHECKOUT = Path(__file__).resolve().parents[2]
# the checkout, or where there is none an installed package's copy of its shipped files (pyproject.toml's
# data-files: configs/, the demo questions, the example cards and the demo banks)
ROOT = CHECKOUT if (CHECKOUT / "configs").is_dir() else Path(sysconfig.get_path("data")) / "share" / "r2mad-studio"
CONFIG_DIR = ROOT / "configs"


@dataclass(frozen=True)
class R2madSettings:
    """R²-MAD (Jin et al. 2026): retrieval, its policy and the peers' confidence tags."""
    k: int = field(default=1, metadata=_limits(1, 32))  # cases per agent and round
    gamma: float = field(default=0.9, metadata=_limits(0.0, 1.0))  # lambda_t = 1 - gamma * Cons(Z^(t-1))
    policy: str = field(default="state-aware", metadata=_limits(choices=(
        "state-aware", "random", "similarity", "positive", "diversity",
        "fixed-0.25", "fixed-0.5", "fixed-0.75")))
    use_memory: bool = True
    use_confidence: bool = True
    conf_high: float = field(default=0.55, metadata=_limits(0.0, 1.0))
    conf_low: float = field(default=0.45, metadata=_limits(0.0, 1.0))
    prefetch_summaries: bool = False  # summary "pattern" only: ask h for likely patterns while agents answer
    # Where the paper text and the authors' code differ, the default is the authors' code; the other
    # choice is the paper text's reading (docs/methods.md).
    # Eq. 11 over the 3K candidates, peer j's response at the case's previous round, weighted by the
    # owner's correctness (authors), or over the K picked cases with peer j's own response and correctness
    confidence_terms: str = field(default="authors", metadata=_limits(choices=("authors", "paper")))
    # MMR reward r(e): the case agent's correctness at the case's round (authors) or at the debate's end
    reward: str = field(default="round", metadata=_limits(choices=("round", "final")))
    # h: read from the round's responses, answers and stance changes (faithful, one uncached call a round)
    # or from the abstract stance pattern alone, cached across debates (pattern: a speed variant, a departure)
    summary: str = field(default="faithful", metadata=_limits(choices=("faithful", "pattern")))
    case_tokens: int = field(default=1024, metadata=_limits(64, 32768))  # a memory case's response, at most


@dataclass(frozen=True)
class Madm2Settings:
    """MAD-M² (Tian et al. 2026): which responses the judge masks."""
    strict: bool = False  # subjective masking also masks NOT SURE
    per_agent_judge: bool = False
    fallback_subjective: bool = True  # objective masking without logprobs falls back to subjective
    # each round a fresh prompt holding the kept responses, the agent's own included (authors' code), or
    # the agent's own chat history plus its kept peers (the paper text's reading)
    context: str = field(default="fresh", metadata=_limits(choices=("fresh", "history")))


@dataclass(frozen=True)
class TrueMadSettings:
    """TrueMAD (Bao et al. 2026): one-to-one peer advice, as a plug-in of any debate method."""
    advice: bool = False
    pairing: str = field(default="all", metadata=_limits(choices=("all", "ring")))




# each seed paper's protocol, on top of PAPER_PROFILE (methods/protocols.py: its tables' rows and columns).
# rounds count round 0: TrueMAD's R1-R5 are rounds 0-4; Du et al.'s "2 rounds" are the answer and one update.
PROTOCOL_SETTINGS = {"truemad": {"agents": 4, "rounds": 5, "early_stop": False},
                     "du": {"agents": 3, "rounds": 2, "early_stop": False, "samples": 3},
                     "madm2": {"agents": 3, "rounds": 3, "early_stop": False}}
PROFILES = ("demo", "paper", *PROTOCOL_SETTINGS)


@dataclass(frozen=True)
class DebateSettings:
    """Everything that shapes one debate: the loop's own settings, then one section per method family.
    `rounds` counts round 0: 3 = round 0 + 2 debate rounds."""
    agents: int = field(default=3, metadata=_limits(1, 16))
    rounds: int = field(default=3, metadata=_limits(1, 10))
    early_stop: bool = True
    temperature: float = field(default=0.7, metadata=_limits(0.0, 2.0))
    top_p: float = field(default=1.0, metadata=_limits(0.0, 1.0))
    max_tokens: int = field(default=384, metadata=_limits(16, 32768))
    seed: int | None = field(default=0, metadata=_limits(0, 2**31 - 1))  # seeds derived from it stay in 32 bits
    max_question_chars: int = field(default=QUESTION_CHARS, metadata=_limits(1, MAX_QUESTION_CHARS))
    deadline_s: float = field(default=900.0, metadata=_limits(1, 86400))
    samples: int = field(default=9, metadata=_limits(1, 64))  # Self-Consistency paths
    # answer guard: after free reasoning with no answer in the task's format, one short constrained call
    # asks for the answer alone. "auto" = the backbone's own default (on for the embedded model)
    answer_guard: str = field(default="auto", metadata=_limits(choices=("auto", "on", "off")))
    # who grades the pairs of answers the rules leave undecided (grading/judge.py): "auto" = the debate's backbone
    # when it can judge (not the embedded model), "off", "self" = the debate's backbone whatever it is, or a
    # backbone's name; without a judge such pairs stay undecided
    judge: str = "auto"
    # "demo": short prompts and decoding for small models; "paper": the papers' decoding (PAPER_PROFILE),
    # the task-specific personas with the answer format in the system prompt
    # truemad / du / madm2: one seed paper's protocol (PROTOCOL_SETTINGS) on top of the papers' decoding
    profile: str = field(default="demo", metadata=_limits(choices=PROFILES))
    r2mad: R2madSettings = field(default_factory=R2madSettings)
    madm2: Madm2Settings = field(default_factory=Madm2Settings)
    truemad: TrueMadSettings = field(default_factory=TrueMadSettings)

    @classmethod
    def from_dict(cls, data: Any, where: str = "settings") -> DebateSettings:
        """From a mapping with sections (`r2mad: {k: 2}`) or, as saved runs may hold, flat names (`k: 2`)."""
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: expected a mapping of keys to values, got {type(data).__name__}.")
        nested = {key: value for key, value in data.items() if key not in SECTION_OF}
        for key, value in data.items():
            if key in SECTION_OF:
                section = nested.get(SECTION_OF[key])
                nested[SECTION_OF[key]] = {**(section if isinstance(section, dict) else {}), key: value}
        settings = validate(cls, nested, where)
        if settings.r2mad.conf_low > settings.r2mad.conf_high:
            raise ConfigError(f"{where}: r2mad.conf_low must not exceed r2mad.conf_high.")
        return settings

    def replace(self, **changes: Any) -> DebateSettings:
        """A copy with some settings changed; a method's settings may be named plainly (`k=2`)."""
        return DebateSettings.from_dict(_merge(dataclasses.asdict(self), _nest(changes)))

    def value(self, name: str) -> Any:
        """One setting by its plain name, whichever section holds it."""
        return getattr(getattr(self, SECTION_OF[name]), name) if name in SECTION_OF else getattr(self, name)


# the settings sections, by DebateSettings field name (the method families' own settings dataclasses)
SECTIONS = {f.name: f.default_factory for f in dataclasses.fields(DebateSettings)
            if dataclasses.is_dataclass(f.default_factory)}
# a method's own setting by its plain name (`k`, `strict`) -> its section: flags, forms and runs saved
# before the sections existed name them flat
SECTION_OF = {f.name: section for section, cls in SECTIONS.items() for f in dataclasses.fields(cls)}


PAPER_PROFILE = {"profile": "paper", "temperature": 1.0, "top_p": 1.0, "max_tokens": 6144}




def with_profile(settings: DebateSettings, profile: str) -> DebateSettings:
    """The settings under a profile: "paper" sets the papers' decoding, a paper's name (truemad, du, madm2) also
    its protocol's agents and rounds; "demo" leaves them as they are."""
    if profile not in PROFILES:
        raise ConfigError(f"Unknown profile {quoted(profile)}; choose one of: {', '.join(PROFILES)}.")
    if profile == "demo":
        return settings.replace(profile="demo")
    return settings.replace(**{**PAPER_PROFILE, **PROTOCOL_SETTINGS.get(profile, {}), "profile": profile})


def _nest(changes: dict[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for key, value in changes.items():
        if key in SECTION_OF:
            nested.setdefault(SECTION_OF[key], {})[key] = value
        else:
            nested[key] = value
    return nested


def _merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    return {**base, **{key: _merge(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict)
                       else value for key, value in changes.items()}}


def cache_dir() -> Path:
    """Derived files that can always be rebuilt (exported graphs): R2MAD_CACHE_DIR or ~/.cache/r2mad."""
    if os.environ.get("R2MAD_CACHE_DIR"):
        return Path(os.environ["R2MAD_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "r2mad"


def bounds(name: str) -> tuple[float, float]:
    """The (lowest, highest) value a debate setting allows, by its plain name: forms bound their fields by it."""
    cls = SECTIONS.get(SECTION_OF.get(name), DebateSettings)
    limits = next(f.metadata for f in dataclasses.fields(cls) if f.name == name)
    return limits["lo"], limits["hi"]


@dataclass(frozen=True)
class Config:
    settings: DebateSettings
    backbones: dict[str, Backbone]
    default_backbone: str
    app: AppConfig
    on_space: bool
    config_dir: Path = CONFIG_DIR
    hf_router: str = HF_ROUTER  # where the owner's token may go for anonymous visitors (R2MAD_HF_ROUTER_URL)

    @property
    def private_runs(self) -> bool:
        return self.app.private_runs == "on" or (self.app.private_runs == "auto" and self.on_space)

    @property
    def taxonomy_file(self) -> Path:
        return self.config_dir / "annotation.yaml"

    def backbone(self, name: str) -> Backbone:
        if name not in self.backbones:
            raise ConfigError(f"Unknown backbone {quoted(name)}; choose one of: {', '.join(self.backbones)}.")
        return self.backbones[name]

    def on_hf_router(self, backbone: Backbone) -> bool:
        """Whether the backbone's endpoint is the Hugging Face router (the only place the owner's token goes for
        anonymous visitors)."""
        return bool(backbone.base_url) and backbone.base_url.rstrip("/") == self.hf_router.rstrip("/")


def load_config(config_dir: Path | str = CONFIG_DIR, env: dict[str, str] | None = None) -> Config:
    env = os.environ if env is None else env
    config_dir = Path(config_dir)
    methods = load_mapping(config_dir / "methods.yaml")
    settings = DebateSettings.from_dict(methods.get("defaults", {}), f"{config_dir / 'methods.yaml'}: defaults")
    raw = load_mapping(config_dir / "backbones.yaml")
    path = config_dir / "backbones.yaml"
    entries = raw.get("backbones") or {}
    if not isinstance(entries, dict) or not entries:
        raise ConfigError(f"{path}: 'backbones' must map names to backbone settings.")
    for name, spec in entries.items():
        if spec is not None and not isinstance(spec, dict):
            raise ConfigError(f"{path}: backbone {quoted(name)} is given as {quoted(spec)}; give it settings as "
                              "indented `key: value` lines (kind, base_url, model, ...).")
    router = (env.get("R2MAD_HF_ROUTER_URL") or "").strip() or None
    backbones = {name: with_router(validate(Backbone, {**(spec or {}), "name": name}, f"{path}: {name}"), router)
                 for name, spec in entries.items()}
    for b in backbones.values():
        if b.visitor_token and (b.kind != "openai" or not b.api_key_env):
            raise ConfigError(f"{path}: {b.name}.visitor_token is true but the backbone names no api_key_env; give "
                              "it the key's variable (HF_TOKEN for the Hugging Face router) or remove visitor_token.")
        gguf = (b.gguf_repo, b.gguf_file)
        if any(gguf) and (b.kind != "embedded" or not all(gguf)):
            raise ConfigError(f"{path}: {b.name} names a GGUF on the Hub; give an embedded backbone both gguf_repo "
                              "and gguf_file (and gguf_sha256), or remove them.")
        if b.gguf_sha256 is not None and not _is_sha256(b.gguf_sha256):
            raise ConfigError(f"{path}: {b.name}.gguf_sha256 is not a sha256 (64 hexadecimal digits); copy it from "
                              "the file's page on huggingface.co.")
    default = raw.get("default", next(iter(backbones)))
    if default not in backbones:
        raise ConfigError(f"{path}: default {quoted(default)} is not one of the backbones listed there.")
    app_raw = load_mapping(config_dir / "app.yaml")
    app = validate(AppConfig, app_raw, str(config_dir / "app.yaml"))
    on_space = bool(env.get("SPACE_ID"))
    if on_space:
        app = dataclasses.replace(app, allow_custom_endpoint=False)
    persistent = Path(env.get("R2MAD_PERSISTENT_ROOT", "/data"))  # a Space's persistent storage
    if env.get("R2MAD_DATA_DIR"):
        app = dataclasses.replace(app, data_dir=env["R2MAD_DATA_DIR"])
    elif on_space and persistent.is_dir() and os.access(persistent, os.W_OK):
        app = dataclasses.replace(app, data_dir=str(persistent / "r2mad"))
    if env.get("R2MAD_ANNOTATORS") is not None:
        names = tuple(n.strip() for n in env["R2MAD_ANNOTATORS"].split(",") if n.strip())
        app = dataclasses.replace(app, annotators=names)
    if env.get("R2MAD_PERSIST_REPO"):
        app = dataclasses.replace(app, persist_repo=env["R2MAD_PERSIST_REPO"])
    app = dataclasses.replace(app, allowance=allowance_from_env(app.allowance, env))
    if env.get("GRADIO_SERVER_NAME"):
        app = dataclasses.replace(app, host=env["GRADIO_SERVER_NAME"])
    if env.get("GRADIO_SERVER_PORT"):
        app = dataclasses.replace(app, port=int(env["GRADIO_SERVER_PORT"]))
    return Config(settings, backbones, default, app, on_space, config_dir, router or HF_ROUTER)


def _is_sha256(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdefABCDEF" for c in text)


def config_folder(given: str | None = None, env: dict[str, str] | None = None) -> Path:
    """The config folder: `--config-dir` when given, else R2MAD_CONFIG_DIR, else the repository's configs/."""
    named = (given or (os.environ if env is None else env).get("R2MAD_CONFIG_DIR") or "").strip()
    return Path(named) if named else CONFIG_DIR


def otel_endpoint(env: dict[str, str] | None = None) -> str | None:
    """R2MAD_OTEL_ENDPOINT: where finished runs go as OpenTelemetry traces (OTLP/HTTP); None (off) by default."""
    return ((os.environ if env is None else env).get("R2MAD_OTEL_ENDPOINT") or "").strip() or None


def env_secrets(config: Config, env: dict[str, str] | None = None) -> list[str]:
    """The API keys present in the environment, so that nothing we keep or print holds them."""
    env = os.environ if env is None else env
    names = {b.api_key_env for b in config.backbones.values() if b.api_key_env} | {"HF_TOKEN"}
    return [env[n] for n in sorted(names) if env.get(n)]


def api_key_for(backbone: Backbone, env: dict[str, str] | None = None, pasted: str | None = None) -> str | None:
    """The key for a backbone: a visitor's own token (pasted, or their login's; this session only) where the
    backbone declares `visitor_token`, else the named env var; a visitor's token goes nowhere else.
    Raises before any call when a required key is missing."""
    env = os.environ if env is None else env
    own = (pasted or "").strip() if backbone.visitor_token else ""
    key = own or (env.get(backbone.api_key_env, "").strip() if backbone.api_key_env else "")
    if key and (any(c.isspace() for c in key) or not key.isprintable() or len(key) > 512):
        raise ConfigError("The API token has spaces or invalid characters; paste the token alone.")
    if backbone.api_key_required and not key:
        raise ConfigError(f"Backbone '{backbone.name}' needs an API token: set {backbone.api_key_env}"
                          + (" or paste a token in the app." if backbone.visitor_token else " where it runs."))
    return key or None
