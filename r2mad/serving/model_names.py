"""The served model names: `method@backbone?bank=memory/demo-mcq&rounds=2&kind=math` picks a debate, one name
per registered method and configured backbone. Parsing and listing only; nothing runs here."""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl

from r2mad.methods import METHODS, spec_of
from r2mad.settings.config import Config, ConfigError, DebateSettings
from r2mad.text import quoted

OPTIONS = {  # what the part after "?" may set, and how it is described in an error
    "bank": "a memory bank folder",
    "rounds": "rounds counting round 0 (1 to 10)",
    "agents": "agents (1 to 16)",
    "kind": "the answer kind (math, mcq, ...)",
}


@dataclass(frozen=True)
class ModelChoice:
    """What a model name asks for: a method on a backbone, with a few settings changed."""
    method: str
    backbone: str
    bank: str | None = None
    rounds: int | None = None
    agents: int | None = None
    kind: str | None = None

    def settings(self, base: DebateSettings) -> DebateSettings:
        changes = {k: v for k, v in (("rounds", self.rounds), ("agents", self.agents)) if v is not None}
        return base.replace(**changes) if changes else base


def model_ids(config: Config) -> list[str]:
    """Every name /v1/models lists: each registered method on each configured backbone."""
    return [f"{method}@{backbone}" for method in METHODS for backbone in config.backbones]


def parse_model(name: str, config: Config) -> ModelChoice:
    """The debate a model name picks; ConfigError names the unknown part and what to choose instead."""
    head, _, query = (name or "").strip().partition("?")
    method, _, backbone = head.partition("@")
    method, backbone = method.strip(), backbone.strip() or config.default_backbone
    if not method:
        raise ConfigError("The model name is empty; use one like "
                          f"'mad@{config.default_backbone}' (GET /v1/models lists them).")
    try:
        spec_of(method)
    except ConfigError:
        raise ConfigError(f"Unknown method {quoted(method)} in the model name; use one of: "
                          f"{', '.join(METHODS)} (as method@backbone).") from None
    if backbone not in config.backbones:
        raise ConfigError(f"Unknown backbone {quoted(backbone)} in the model name; use one of: "
                          f"{', '.join(config.backbones)} (as method@backbone).")
    values: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key not in OPTIONS:
            raise ConfigError(f"The model name sets {quoted(key)}, which is not a setting here; it may set "
                              + ", ".join(f"{k} ({v})" for k, v in OPTIONS.items()) + ".")
        values[key] = value.strip()
    return ModelChoice(method, backbone, values.get("bank") or None, _whole(values, "rounds"),
                       _whole(values, "agents"), values.get("kind") or None)


def _whole(values: dict[str, str], key: str) -> int | None:
    raw = values.get(key)
    if raw is None or raw == "":
        return None
    if not raw.isdigit():
        raise ConfigError(f"The model name sets {key}={quoted(raw)}; give {OPTIONS[key]} as a whole number.")
    return int(raw)
