"""Where a run departs from the papers and the authors' code, in words: docs/methods.md and
`eval`'s report list these. The defaults follow the authors' code; a switch set to the paper text's
reading, a speed variant or the demo profile adds a line. No I/O; reads a settings mapping."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from r2mad.methods import REGISTRY

POLICY_NOTE = ("With K = 1 every λ picks the same first case, so the fixed-λ rows differ from the "
               "state-aware row only by sampling noise (as in the authors' scripts).")
DMAD_FAMILY = {"dmad", "truedmad"}  # TrueDMAD is DMAD with advice, so it has DMAD's departures too
DMAD_DEPARTURE = (
    "DMAD: the prompts are ours; each agent keeps MAD's task persona beside its reasoning method (DMAD's agents "
    "differ by the method alone); program of thought is written and traced in words, never run, and the answer "
    "is read from the text; the methods go in turn (chain of thought, step-back, program of thought), so a fourth "
    "agent uses chain of thought again; a tie in the final vote goes to the earliest agent holding a top answer "
    "(the authors break ties at random).")


def _clips(bases: set[str], r2: Mapping[str, Any], methods: Sequence[str]) -> list[str]:
    """The demo's clips and caps (methods.base.CLIPS) that a run of these methods meets."""
    tokens = r2.get("case_tokens", 1024)
    parts = []
    if any(b.startswith("r2mad") for b in bases):
        parts += ["the round summary within 128 tokens", f"memory cases' responses within {tokens} tokens"]
    if bases & {"madm2-subjective", "madm2-objective"}:
        parts.append("MAD-M²'s judge reading a response's last 1,500 characters, within 384 tokens")
    if "truemad" in bases or any(m.endswith("+advice") for m in methods):
        parts.append("TrueMAD's advice within 160 tokens, reading answers' last 1,500 characters and shown "
                     "by its last 800")
    if "icl-cot" in bases:
        parts.append(f"ICL-CoT examples' responses within {tokens} tokens")
    if not parts:
        return []
    return [f"Demo clips the authors do not have: {'; '.join(parts)}. `--profile paper` lifts them (a known "
            "context window, as the embedded model's, keeps them and says so)."]


def departures(settings: Mapping[str, Any], methods: Sequence[str]) -> list[str]:
    """One line per departure that applies to a run of `methods` with `settings` (DebateSettings as a dict)."""
    bases = {m.removesuffix("+advice") for m in methods}
    r2, m2 = settings.get("r2mad", {}), settings.get("madm2", {})
    uses_r2 = any(b.startswith("r2mad") for b in bases)
    out = []
    if settings.get("profile", "demo") == "demo":
        out.append(f"Demo profile: temperature {settings.get('temperature')}, top_p {settings.get('top_p')}, up to "
                   f"{settings.get('max_tokens')} output tokens, the answer format in the user prompt; the papers "
                   "used 1.0, 1.0 and 6,144 with the format in the system prompt (`--profile paper`). Benchmark "
                   "questions get their six task personas in both profiles (a typed question, three generic ones).")
        out += _clips(bases, r2, methods)
    if settings.get("answer_guard") == "on":
        out.append("The answer guard asked once more for an unparsed answer; the papers count it as unparsed.")
    if uses_r2:
        if r2.get("summary") == "pattern":
            out.append("R²-MAD summary h from the abstract stance pattern alone, cached across debates "
                       "(r2mad.summary=pattern, a speed variant); the authors' summary reads the round's "
                       "responses.")
        if r2.get("confidence_terms") == "paper":
            out.append("Peer confidence over the K picked cases with the peer's own correctness "
                       "(r2mad.confidence_terms=paper, the paper text's reading of Eq. 11).")
        if r2.get("reward") == "final":
            out.append("MMR reward = the case agent's correctness at the debate's end (r2mad.reward=final, "
                       "the paper text's reading).")
        if r2.get("k", 1) == 1 and bases & {"r2mad-fixed-0.25", "r2mad-fixed-0.5", "r2mad-fixed-0.75"}:
            out.append(POLICY_NOTE)
    if bases & {"madm2-subjective", "madm2-objective"} and m2.get("context") == "history":
        out.append("MAD-M² agents keep their own history and see only kept peers (madm2.context=history, the "
                   "paper text's reading); the authors' code gives a fresh prompt with every kept response.")
    if bases & DMAD_FAMILY:
        out.append(DMAD_DEPARTURE)
    for name, spec in REGISTRY.items():  # a method's own line, an ablation's the full method's
        if spec.departure and (name in bases or (name == "r2mad" and uses_r2) or (spec.advice and any(
                m.endswith("+advice") for m in methods))):
            out.append(spec.departure)
    return out
