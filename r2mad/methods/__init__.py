"""The method registry: one entry per method (name, labels, paper, family, bank, report tables, factory).
Every list of methods — the CLI's help, the app's dropdown and About, the report's tables, the metrics —
reads it. TrueMAD's advice is a plug-in of the loop that composes with any debate method."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from r2mad.config import ConfigError, DebateSettings
from r2mad.methods.base import Method
from r2mad.text import quoted

DU, TIAN, BAO, JIN = ("Du et al. 2024", "Tian et al. 2026", "Bao et al. 2026; our re-implementation",
                      "Jin et al. 2026")


@dataclass(frozen=True)
class MethodSpec:
    name: str
    family: str  # "debate" | "baseline" | "ablation" (of R²-MAD)
    label: str  # as in the papers' tables
    title: str  # what the app's method list says
    build: Callable[..., Method]  # (settings, bank, summaries) -> strategy
    paper: str = ""
    needs_bank: bool = False
    tables: tuple[str, ...] = ()  # report tables with a row for it: "main", "components", "policies"
    changes: Mapping[str, Any] = field(default_factory=dict)  # settings an ablation fixes
    section: str | None = None  # its own settings dataclass: DebateSettings.<section> (config.SECTIONS)


def _mad(settings, bank, summaries):
    from r2mad.methods.mad import MAD
    return MAD(settings)


def _madm2(objective: bool):
    def build(settings, bank, summaries):
        from r2mad.methods.madm2 import MADM2
        return MADM2(settings, objective=objective)
    return build


def _r2mad(name: str):
    def build(settings, bank, summaries):
        from r2mad.methods.r2mad import R2MAD
        method = R2MAD(settings, bank, summaries=summaries)
        method.name = name
        return method
    return build


def _cot(settings, bank, summaries):
    from r2mad.methods.single import CoT
    return CoT(settings)


def _sc(settings, bank, summaries):
    from r2mad.methods.single import SelfConsistency
    return SelfConsistency(settings)


def _icl_cot(settings, bank, summaries):
    from r2mad.methods.single import ICLCoT
    return ICLCoT(settings, bank)


def _ablation(name: str, label: str, changes: dict, table: str) -> MethodSpec:
    return MethodSpec(name, "ablation", label, f"R²-MAD ablation: {label}", _r2mad(name), JIN, True, (table,),
                      changes, "r2mad")


REGISTRY: dict[str, MethodSpec] = {spec.name: spec for spec in (
    MethodSpec("cot", "baseline", "CoT", "CoT (one agent)", _cot, tables=("main",)),
    MethodSpec("sc", "baseline", "Self-Consistency", "Self-Consistency (9 samples)", _sc, tables=("main",)),
    MethodSpec("icl-cot", "baseline", "ICL-CoT", "ICL-CoT (one agent + cases from the bank)", _icl_cot,
               needs_bank=True, tables=("main",), section="r2mad"),
    MethodSpec("mad", "debate", "MAD", "MAD", _mad, DU, tables=("main",)),
    MethodSpec("madm2-subjective", "debate", "MAD-M² (S)", "MAD-M², subjective masks", _madm2(False), TIAN,
               tables=("main",), section="madm2"),
    MethodSpec("madm2-objective", "debate", "MAD-M² (O)", "MAD-M², objective masks by perplexity", _madm2(True),
               TIAN, tables=("main",), section="madm2"),
    MethodSpec("truemad", "debate", "TrueMAD", "TrueMAD", _mad, BAO, tables=("main",), section="truemad"),
    MethodSpec("r2mad", "debate", "R²-MAD", "R²-MAD", _r2mad("r2mad"), JIN, True, ("main", "components", "policies"),
               section="r2mad"),
    _ablation("r2mad-no-confidence", "w/o Confidence", {"use_confidence": False}, "components"),
    _ablation("r2mad-no-memory", "w/o Memory", {"use_memory": False}, "components"),
    _ablation("r2mad-random", "Random", {"policy": "random"}, "policies"),
    _ablation("r2mad-similarity", "Similarity-based", {"policy": "similarity"}, "policies"),
    _ablation("r2mad-positive", "Positive-only", {"policy": "positive"}, "policies"),
    _ablation("r2mad-diversity", "Diversity-only", {"policy": "diversity"}, "policies"),
    _ablation("r2mad-fixed-0.25", "Fixed-λ (0.25)", {"policy": "fixed-0.25"}, "policies"),
    _ablation("r2mad-fixed-0.5", "Fixed-λ (0.50)", {"policy": "fixed-0.5"}, "policies"),
    _ablation("r2mad-fixed-0.75", "Fixed-λ (0.75)", {"policy": "fixed-0.75"}, "policies"),
)}
METHODS = tuple(REGISTRY)


def names(family: str) -> tuple[str, ...]:
    return tuple(name for name, spec in REGISTRY.items() if spec.family == family)


def spec_of(name: str) -> MethodSpec:
    """The registry entry of a method name (a `+advice` suffix names the same method with advice)."""
    base = name.removesuffix("+advice")
    if base not in REGISTRY:
        raise ConfigError(f"Unknown method {quoted(name)}; choose one of: {', '.join(METHODS)} "
                          "(debate methods also take a '+advice' suffix).")
    return REGISTRY[base]


def needs_bank(name: str) -> bool:
    return name.removesuffix("+advice") in REGISTRY and spec_of(name).needs_bank


def is_debate(name: str) -> bool:
    return name.removesuffix("+advice") not in REGISTRY or spec_of(name).family != "baseline"


def make_method(name: str, settings: DebateSettings, *, bank=None, summaries=None) -> Method:
    """Build a strategy by name. A `+advice` suffix (or settings.advice) adds TrueMAD's one-to-one peer
    advice to a debate method as a plug-in of the loop; `truemad` is MAD with advice. `summaries` is
    the cache of R²-MAD's round summaries to share across debates (none: this debate's own)."""
    spec = spec_of(name)
    advice = name.endswith("+advice") or settings.truemad.advice or spec.name == "truemad"
    if advice and spec.family == "baseline":
        raise ConfigError(f"Advice needs several agents; '{spec.name}' is a single-agent baseline.")
    if spec.changes:
        settings = settings.replace(**spec.changes)
    method = spec.build(settings, bank, summaries)
    if advice:
        from r2mad.methods.truemad import Advice

        method.plugins.append(Advice())
        method.name = "truemad" if spec.name in ("mad", "truemad") else f"{spec.name}+advice"
    return method
