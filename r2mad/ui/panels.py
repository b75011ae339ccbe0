"""Method panels as markdown, from the details each method records: R²-MAD's memory (summary h, λ,
retrieved cases, peer confidence), MAD-M²'s masks and TrueMAD's advice. A panel is empty when its
data is absent, so each lights up only for the method that produced it. Pure; no Gradio."""
from __future__ import annotations

from typing import Any, Mapping

from r2mad.grading.answers import strip_think
from r2mad.steer.fork import steer_notes
from r2mad.types import Round
from r2mad.ui.render.text import esc as _esc

MEMORY_LEGEND = ("*Similarity: how close a past case's debate state is to this one (cosine). Reward: 1 if that "
                 "case's agent was right in its round, else 0. MMR: the score that picked the case, "
                 "λ·similarity·reward − (1 − λ)·closeness to cases already picked. λ = 1 − γ·consensus: when the "
                 "agents already agree, λ is low and diverse cases win, so a case whose agent was wrong can be "
                 "retrieved as a contrast. Peer confidence c > 0.55 is shown to this agent as high, c < 0.45 as low.*")
TRUEMAD_NOTE = "*TrueMAD here is our re-implementation of Bao et al. (2026); no official code exists.*"


def _clip(text: Any, limit: int) -> str:
    text = ("" if text is None else str(text)).strip().replace("\n", " ")
    return _esc(text if len(text) <= limit else text[: limit - 1].rstrip() + "…")


def _num(value: Any, digits: int = 2) -> str:
    return "n/a" if value is None else f"{float(value):.{digits}f}"


def _agent(index: Any) -> str:
    try:
        return f"Agent {int(index) + 1}"
    except (TypeError, ValueError):
        return _esc(index)


# --- R²-MAD -------------------------------------------------------------------------------------

def memory_panel(d: Mapping[str, Any], round_summary: str | None = None) -> str:
    """R²-MAD per agent and round: state summary h (unless the round already shows the same one),
    λ_t, retrieved cases and peer confidence."""
    if not any(k in d for k in ("retrieved", "lambda", "confidence", "candidates")):
        return ""
    head = ["**Memory (R²-MAD)**"]
    if d.get("lambda") is not None:
        head.append(f"λ = {_num(d['lambda'])}")
    if d.get("consensus") is not None:
        head.append(f"previous consensus {_num(d['consensus'])}")
    if "candidates" in d:
        head.append(f"{len(d['candidates'])} candidates")
    head.append(f"{len(d.get('retrieved') or [])} retrieved")
    lines = [" · ".join(head) + " — shown to this agent before it answered", MEMORY_LEGEND]
    if d.get("summary") and d.get("summary") != round_summary:
        lines.append(f"Debate summary h: {_clip(d['summary'], 600)}")
    for case in d.get("retrieved") or []:
        verdict = "that agent was correct" if case.get("correct") else "that agent was wrong"
        lines.append(f"- Case {_esc(case.get('case_id'))} — similarity {_num(case.get('similarity'))} · "
                     f"reward {_num(case.get('reward'), 0)} · MMR {_num(case.get('mmr'), 3)} · {verdict}  \n"
                     f"  Question: {_clip(case.get('question'), 160)}  \n"
                     f"  Response: {_clip(case.get('response'), 280)} → answer "
                     f"{_esc(case.get('answer') or 'UNPARSED')}")
    confidence = d.get("confidence") or {}
    if confidence:
        parts = []
        for peer in sorted(confidence, key=lambda k: int(k) if str(k).isdigit() else 0):
            info = confidence[peer] or {}
            label = info.get("label")
            note = {"high": "annotated high confidence", "low": "annotated low confidence"}.get(
                label, "no annotation")
            parts.append(f"{_agent(peer)}: c = {_num(info.get('c'))} ({note})")
        lines.append("Confidence in peers: " + "; ".join(parts))
    return "\n\n".join(lines)


# --- MAD-M² -------------------------------------------------------------------------------------

def _objective_masks(masks: Mapping[str, Any]) -> str:
    rows = [f"- {_agent(j)}: perplexity {_num(m.get('perplexity'))} (mean logprob "
            f"{_num(m.get('mean_logprob'), 3)}) — {'shown' if m.get('keep') else 'masked'}"
            for j, m in sorted(masks.items(), key=lambda kv: str(kv[0]))]
    return "**Masks (MAD-M², objective: lowest perplexity kept)**\n\n" + "\n".join(rows)


def _subjective_masks(masks: Mapping[str, Any], responses: Mapping[str, str]) -> str:
    out = ["**Masks (MAD-M², subjective: the model judged each response)**"]
    for viewer, verdicts in sorted(masks.items(), key=lambda kv: str(kv[0])):
        if viewer != "all":
            out.append(f"As judged for {_agent(viewer)}:")
        for j, v in sorted((verdicts or {}).items(), key=lambda kv: str(kv[0])):
            failed = f" (judge call failed: {_esc(v.get('error'))})" if v.get("error") else ""
            judgment = f"  \n  Judge's verdict: “{_clip(strip_think(v['judgment']), 200)}”" if v.get("judgment") else ""
            reply = strip_think(responses.get(str(j)) or "")
            said = f"  \n  {_agent(j)} said: “{_clip(reply, 200)}”" if reply else ""
            out.append(f"- {_agent(j)}'s response: {_esc(v.get('label'))} — "
                       f"{'shown' if v.get('keep') else 'masked'}{failed}{said}{judgment}")
    return "\n".join(out[:1]) + "\n\n" + "\n".join(out[1:])


def masks_panel(masks: Mapping[str, Any] | None, responses: Mapping[str, str] | None = None) -> str:
    """`responses`: the judged (previous-round) response of each agent by index, quoted beside its verdict."""
    if not masks:
        return ""
    first = next(iter(masks.values()))
    objective = isinstance(first, Mapping) and "perplexity" in first
    return _objective_masks(masks) if objective else _subjective_masks(masks, responses or {})


def shown_panel(d: Mapping[str, Any]) -> str:
    if d.get("resolved_alone"):
        return "**Masks:** every peer response was masked, so this agent solved the question again alone."
    if "shown" in d:
        shown = d.get("shown") or []
        return ("**Shown after masking:** " + ", ".join(_agent(j) for j in shown)) if shown \
            else "**Shown after masking:** none"
    return ""


# --- TrueMAD ------------------------------------------------------------------------------------

def advice_panel(rnd: Round) -> str:
    texts = {(c.source, c.target): c for c in rnd.aux if c.kind == "advice"}
    log = rnd.details.get("advice")
    if log is None and not texts:
        return ""
    entries = log if log is not None else [{"source": s, "target": g, "type": c.label}
                                           for (s, g), c in texts.items()]
    lines = ["**Advice (TrueMAD)** — who advised whom, before revising", TRUEMAD_NOTE]
    for item in entries:
        call = texts.get((item.get("source"), item.get("target")))
        said = f": “{_clip(strip_think(call.text), 240)}”" if call is not None and strip_think(call.text) else ""
        lines.append(f"- {_agent(item.get('source'))} → {_agent(item.get('target'))} "
                     f"({_esc(item.get('type') or 'other')}){said}")
    if not entries:
        lines.append("- no advice was delivered this round")
    return "\n\n".join(lines[:2]) + "\n\n" + "\n".join(lines[2:])


def advice_received_panel(d: Mapping[str, Any]) -> str:
    if "advice_from" not in d:
        return ""
    sources = d.get("advice_from") or []
    names = [(_agent(s) if isinstance(s, int) else _esc(s)) for s in sources]
    return "**Advice received from:** " + (", ".join(names) if names else "nobody")


# --- entry points -------------------------------------------------------------------------------

def turn_panels(details: Mapping[str, Any] | None, round_summary: str | None = None) -> str:
    """Everything a method recorded for one agent in one round."""
    d = details or {}
    changed = steer_notes(d)
    fork = ("**Changed by the fork:** " + _esc("; ".join(changed))) if changed else ""
    return "\n\n".join(p for p in (fork, memory_panel(d, round_summary), shown_panel(d), advice_received_panel(d))
                       if p)


def summary_input(previous: Round | None) -> str:
    """What the summary h was written from: the previous round's answers and consensus."""
    if previous is None or not previous.turns:
        return ""
    answers = ", ".join(f"{_agent(t.agent)}: {_esc(t.answer.value or 'no answer')}" for t in previous.turns)
    return f"  \n*Written from round {previous.index}: {answers}; consensus {previous.consensus:.2f}.*"


def round_panels(rnd: Round, previous: Round | None = None) -> str:
    """Everything a method recorded for a whole round (`previous`: the round its work was about)."""
    parts = []
    if rnd.details.get("summary"):
        parts.append(f"**Debate summary h^({rnd.index - 1}) (R²-MAD):** {_clip(rnd.details['summary'], 800)}"
                     + summary_input(previous))
    responses = {str(t.agent): t.text for t in previous.turns} if previous is not None else {}
    parts.append(masks_panel(rnd.details.get("masks"), responses))
    parts.append(advice_panel(rnd))
    return "\n\n".join(p for p in parts if p)
