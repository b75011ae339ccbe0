"""The method registry: one entry per method (name, labels, paper, family, bank, report tables, factory).
Every list of methods — the CLI's help, the app's dropdown and About, the report's tables, the metrics —
reads it; no code outside methods/ and prompts/ spells a method's name (tests/project/test_registry_names.py).
TrueMAD's advice is a plug-in of the loop that composes with any debate method."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from r2mad.methods.base import Method
from r2mad.settings.config import ConfigError, DebateSettings
from r2mad.text import quoted

DU, TIAN, BAO, JIN = ("Du et al. 2024", "Tian et al. 2026", "Bao et al. 2026; our re-implementation",
                      "Jin et al. 2026")
LIU = "Liu et al. 2025; prompts ours"


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
    description: str = ""  # what it does differently, one line (the app's method list)
    departure: str = ""  # where it always departs from its paper (eval's report, docs/methods.md)
    advice: bool = False  # always runs with TrueMAD's advice plug-in (the plug-in listed as a method)


def _mad(settings, bank, summaries):
    from r2mad.methods.mad import MAD
    return MAD(settings)


def _madm2(objective: bool):
    def build(settings, bank, summaries):
        from r2mad.methods.madm2 import MADM2
        return MADM2(settings, objective=objective)
    return build


def _dmad(settings, bank, summaries):
    from r2mad.methods.dmad import DMAD
    return DMAD(settings)


def _truedmad(settings, bank, summaries):
    from r2mad.methods.truedmad import TrueDMAD
    return TrueDMAD(settings)


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


def _ablation(name: str, label: str, changes: dict, table: str, description: str) -> MethodSpec:
    return MethodSpec(name, "ablation", label, f"R²-MAD ablation: {label}", _r2mad(name), JIN, True, (table,),
                      changes, "r2mad", description)


R2MAD_DEPARTURE = (
    "R²-MAD: the round summary is not asked once more after the last round (the authors' code does; nothing "
    "reads it); peers' responses are clipped only where the backbone's context window is known (the embedded "
    "model), and each clip is recorded. The debate state embedded for retrieval carries Cons as text beside "
    "the question, the previous response and h, and is embedded with the bank's embedder (all-MiniLM-L6-v2 "
    "offline by default, which reads 256 word pieces); the paper and the authors' code use BAAI/bge-m3 "
    "(8,192 tokens). Cons counts an unparsed answer among the n agents but agreeing with nothing "
    "([A, unparsed, unparsed] gives 1/3: Eq. 5 with y over answers); the authors' code counts the unparsed "
    "answers as one shared answer (2/3).")


REGISTRY: dict[str, MethodSpec] = {spec.name: spec for spec in (
    MethodSpec("cot", "baseline", "CoT", "CoT (one agent)", _cot, tables=("main",),
               description="one agent reasons step by step"),
    MethodSpec("sc", "baseline", "Self-Consistency", "Self-Consistency (9 samples)", _sc, tables=("main",),
               description="nine samples of one agent, majority vote"),
    MethodSpec("icl-cot", "baseline", "ICL-CoT", "ICL-CoT (one agent + cases from the bank)", _icl_cot,
               needs_bank=True, tables=("main",), section="r2mad",
               description="one agent with worked cases from the memory bank"),
    MethodSpec("mad", "debate", "MAD", "MAD", _mad, DU, tables=("main", "speed"),
               description="agents read each other's answers and revise"),
    MethodSpec("madm2-subjective", "debate", "MAD-M² (S)", "MAD-M², subjective masks", _madm2(False), TIAN,
               tables=("main", "speed"), section="madm2",
               description="the model judges each answer; unreliable ones are hidden"),
    MethodSpec("madm2-objective", "debate", "MAD-M² (O)", "MAD-M², objective masks by perplexity", _madm2(True),
               TIAN, tables=("main",), section="madm2",
               description="only the answers the model is surest of (lowest perplexity) are shown",
               departure="MAD-M² objective scores use the mean log-probability of the response's own tokens "
                         "(the paper's wording); the authors' code takes the top-1 token's log-probability at "
                         "each position."),
    MethodSpec("truemad", "debate", "TrueMAD", "TrueMAD", _mad, BAO, tables=("main", "speed"), section="truemad",
               description="agents write one-to-one advice before revising (our re-implementation)",
               departure="TrueMAD is our re-implementation from the paper: no official code exists.", advice=True),
    MethodSpec("dmad", "debate", "DMAD", "DMAD (a reasoning method per agent)", _dmad, LIU,
               description="each agent keeps one reasoning method: chain of thought, step-back or program of thought"),
    MethodSpec("truedmad", "debate", "TrueDMAD", "TrueDMAD", _truedmad, BAO, section="truemad",
               description="DMAD with TrueMAD's one-to-one advice (our re-implementation)",
               departure="TrueDMAD is our re-implementation from the TrueMAD paper: no official code exists.",
               advice=True),
    MethodSpec("r2mad", "debate", "R²-MAD", "R²-MAD", _r2mad("r2mad"), JIN, True,
               ("main", "components", "policies", "speed"), section="r2mad",
               description="agents recall similar past debates and how reliable each peer was",
               departure=R2MAD_DEPARTURE),
    _ablation("r2mad-no-confidence", "w/o Confidence", {"use_confidence": False}, "components",
              "no peer-confidence notes"),
    _ablation("r2mad-no-memory", "w/o Memory", {"use_memory": False}, "components", "no retrieved cases"),
    _ablation("r2mad-random", "Random", {"policy": "random"}, "policies", "cases drawn at random from the bank"),
    _ablation("r2mad-similarity", "Similarity-based", {"policy": "similarity"}, "policies",
              "the most similar cases, reward ignored"),
    _ablation("r2mad-positive", "Positive-only", {"policy": "positive"}, "policies",
              "the most similar cases whose agent was right"),
    _ablation("r2mad-diversity", "Diversity-only", {"policy": "diversity"}, "policies", "the least redundant cases"),
    _ablation("r2mad-fixed-0.25", "Fixed-λ (0.25)", {"policy": "fixed-0.25"}, "policies", "MMR with λ fixed at 0.25"),
    _ablation("r2mad-fixed-0.5", "Fixed-λ (0.50)", {"policy": "fixed-0.5"}, "policies", "MMR with λ fixed at 0.50"),
    _ablation("r2mad-fixed-0.75", "Fixed-λ (0.75)", {"policy": "fixed-0.75"}, "policies", "MMR with λ fixed at 0.75"),
)}
METHODS = tuple(REGISTRY)
# the methods other code reaches by their role (outside the registry no code spells a method's name)
PLAIN = "mad"  # the plain debate: the default, round 0 of every debate, the report's reference row
FULL = "r2mad"  # R²-MAD with every part on: the top row of the ablation tables
SAMPLING = "sc"  # Self-Consistency: the report's accuracy-by-sample-budget curve
SINGLE = "cot"  # one agent, one call: the cheapest run (a warm-up)
ADVISED = {"mad": "truemad", "dmad": "truedmad"}  # a debate with advice that has a name of its own


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


def with_advice(name: str) -> str:
    """The name that adds TrueMAD's advice to a method (unchanged when it has advice already)."""
    return name if name.endswith("+advice") or spec_of(name).advice else name + "+advice"


def takers(kind: str) -> tuple[str, ...]:
    """Methods whose hooks (or plug-ins), under the default settings, take a fork change of `kind`."""
    found = []
    for name in METHODS:
        strategy = make_method(name, DebateSettings())
        if any(kind in x.steers for x in (strategy, *strategy.plugins)):
            found.append(name)
    return tuple(found)


def make_method(name: str, settings: DebateSettings, *, bank=None, summaries=None) -> Method:
    """Build a strategy by name. A `+advice` suffix (or settings.advice) adds TrueMAD's one-to-one peer
    advice to a debate method as a plug-in of the loop; `truemad` is MAD with advice. `summaries` is
    the cache of R²-MAD's round summaries to share across debates (none: this debate's own)."""
    spec = spec_of(name)
    advice = name.endswith("+advice") or settings.truemad.advice or spec.advice
    if advice and spec.family == "baseline":
        raise ConfigError(f"Advice needs several agents; '{spec.name}' is a single-agent baseline.")
    if spec.changes:
        settings = settings.replace(**spec.changes)
    method = spec.build(settings, bank, summaries)
    if advice:
        from r2mad.methods.truemad import Advice

        method.plugins.append(Advice())
        method.name = spec.name if spec.advice else ADVISED.get(spec.name, f"{spec.name}+advice")
    return method
