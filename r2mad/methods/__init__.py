"""The method registry: names -> strategies on the shared loop, including R²-MAD's ablations."""
from __future__ import annotations

from r2mad.config import ConfigError, DebateSettings
from r2mad.debate import Method

DEBATE_METHODS = ("mad", "madm2-subjective", "madm2-objective", "truemad", "r2mad")
BASELINES = ("cot", "sc", "icl-cot")
# R²-MAD ablations (paper Tables 2 and 3): name -> settings they change
ABLATIONS = {
    "r2mad-no-confidence": {"use_confidence": False},
    "r2mad-no-memory": {"use_memory": False},
    "r2mad-random": {"policy": "random"},
    "r2mad-similarity": {"policy": "similarity"},
    "r2mad-positive": {"policy": "positive"},
    "r2mad-diversity": {"policy": "diversity"},
    "r2mad-fixed-0.25": {"policy": "fixed-0.25"},
    "r2mad-fixed-0.5": {"policy": "fixed-0.5"},
    "r2mad-fixed-0.75": {"policy": "fixed-0.75"},
}
METHODS = BASELINES + DEBATE_METHODS + tuple(ABLATIONS)
NEEDS_BANK = ("r2mad", "icl-cot") + tuple(ABLATIONS)


def needs_bank(name: str) -> bool:
    return name.removesuffix("+advice") in NEEDS_BANK


def is_debate(name: str) -> bool:
    return name.removesuffix("+advice") not in BASELINES


def make_method(name: str, settings: DebateSettings, *, bank=None) -> Method:
    """Build a strategy by name. A `+advice` suffix (or settings.advice) wraps a debate method with
    TrueMAD's one-to-one peer advice; `truemad` is `mad+advice`."""
    base = name.removesuffix("+advice")
    advice = name.endswith("+advice") or settings.advice or base == "truemad"
    if base not in METHODS:
        raise ConfigError(f"Unknown method '{name}'; choose one of: {', '.join(METHODS)} "
                          "(debate methods also take a '+advice' suffix).")
    if advice and base in BASELINES:
        raise ConfigError(f"Advice needs several agents; '{base}' is a single-agent baseline.")
    if base in ABLATIONS:
        settings = settings.replace(**ABLATIONS[base])
    method = _build(base, settings, bank)
    if advice:
        from r2mad.methods.truemad import WithAdvice

        method = WithAdvice(method, name="truemad" if base in ("mad", "truemad") else f"{base}+advice")
    return method


def _build(base: str, settings: DebateSettings, bank) -> Method:
    if base in ("mad", "truemad"):
        from r2mad.methods.mad import MAD
        return MAD(settings)
    if base == "cot":
        from r2mad.methods.single import CoT
        return CoT(settings)
    if base == "sc":
        from r2mad.methods.single import SelfConsistency
        return SelfConsistency(settings)
    if base == "icl-cot":
        from r2mad.methods.single import ICLCoT
        return ICLCoT(settings, bank)
    if base.startswith("madm2"):
        from r2mad.methods.madm2 import MADM2
        return MADM2(settings, objective=base.endswith("objective"))
    from r2mad.methods.r2mad import R2MAD
    method = R2MAD(settings, bank)
    method.name = base
    return method
