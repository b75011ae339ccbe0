"""The Annotate tab's counterfactuals: blame with intervals (`blame --samples K`) and the right move, verified
(an annotator's ideal text for a blamed turn, put in place by a fork that records whether the outcome
flips). Renderers are pure and escape every stored text; the handlers save through the run store and fork
through the engine (serving/visitor_runs.py)."""
from __future__ import annotations

from typing import Sequence

import gradio as gr

from r2mad.runs.counterfactuals import Correction, corrections_of, samples_of, write_correction
from r2mad.serving.admission import Refused
from r2mad.serving.line import visitor_key
from r2mad.serving.visitor_runs import fork_saved
from r2mad.serving.visitors import identify
from r2mad.steer.sampling import verdict
from r2mad.steer.verify import outcome_words, verify
from r2mad.ui.annotate_base import AnnotateBase, Profile, Req, Token
from r2mad.ui.errors import sentence
from r2mad.ui.handlers import USER_ERRORS, warn
from r2mad.ui.render.annotate_view import full_id, parse_turns, turn_name
from r2mad.ui.render.chat import esc

HOW = {"mask": "masked", "previous": "its previous answer"}


def samples_markdown(rows: Sequence) -> str:
    """Sampled blame: each counterfactual's change in P(correct) with its 95% interval, the surest first."""
    if not rows:
        return ""
    lines = ["**Blame with intervals** (each change replayed with other seeds; Δ P(correct), 95% CI):"]
    for b in rows:
        turns = " + ".join(f"{turn_name(r, a)} {HOW.get(how, how)}" for r, a, how in b.turns)
        if b.change is None or b.deterministic:
            lines.append(f"- {esc(turns)}: {esc(verdict(b))}")
            continue
        sure = "raises it" if b.low > 0 else "lowers it" if b.high < 0 else "not sure"
        lines.append(f"- {esc(turns)}: **Δ {b.change:+.2f}** [{b.low:+.2f}, {b.high:+.2f}] · {b.correct}/{b.samples} "
                     f"right vs {b.base_correct}/{b.base_samples} as it was · *{sure}*" + (" (cut)" if b.cut else ""))
    return "\n".join(lines)


def corrections_markdown(found: Sequence[Correction], me: str, visible: bool, run_correct: bool | None) -> str:
    """Verified corrections (a fork ran with the text in place) apart from opinions (not verified); others'
    hidden while their labels are (blind queues)."""
    shown = [c for c in found if visible or c.annotator == me]
    if not shown:
        return "*No ideal action written for this run yet.*"

    def line(c: Correction) -> str:
        fork = f" · fork `{esc(c.fork_id[:8])}`" if c.fork_id else ""
        return (f"- {esc(turn_name(c.round, c.agent))} by **{esc(c.annotator)}**: {outcome_words(c, run_correct)}"
                f"{fork}<br>“{esc(c.ideal[:300])}”")
    verified = [line(c) for c in shown if c.verified and c.correct is not None]
    opinions = [line(c) for c in shown if not (c.verified and c.correct is not None)]
    parts = []
    if verified:
        parts += ["**Verified corrections** (a fork ran with the text in place):", *verified]
    if opinions:
        parts += ["**Opinions** (not verified by a fork):", *opinions]
    return "\n".join(parts)


class AnnotateMoves(AnnotateBase):
    def moves_markdown(self, run_id: str, me: str, visible: bool, run_correct: bool | None) -> str:
        return corrections_markdown(corrections_of(self.store, run_id), me, visible, run_correct)

    def samples_markdown(self, run_id: str) -> str:
        return samples_markdown(samples_of(self.store, run_id))

    def _correction(self, run_id, turns, ideal, me) -> Correction | None:
        """Keep the ideal text for the one picked turn; a warning (None) when the turn or the text is missing."""
        run_id, picked = full_id(run_id), parse_turns(turns)
        if not run_id:
            warn("No run is open; open one, pick the turn, then write its ideal action.")
            return None
        if len(picked) != 1:
            warn("Pick exactly one turn (click its message, or key B on it) to write its ideal action; "
                 f"{len(picked)} are picked.")
            return None
        (round_index, agent), = picked
        try:
            write_correction(self.store, run_id, round_index, agent, me, ideal or "")
        except (ValueError, KeyError) as exc:
            warn(str(exc.args[0] if isinstance(exc, KeyError) else exc))
            return None
        return next(c for c in corrections_of(self.store, run_id)
                    if (c.round, c.agent, c.annotator) == (round_index, agent, me))

    def _moves(self, run_id: str, me: str) -> str:
        record = self.store.get_run(run_id)
        return self.moves_markdown(run_id, me, True, record.correct)

    def save_ideal(self, run_id, turns, ideal, typed, visitor_id,
                   request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """Keep the ideal action as an opinion (not verified)."""
        me = self._me(typed, visitor_id, request, profile, oauth_token)
        c = self._correction(run_id, turns, ideal, me)
        return gr.skip() if c is None else self._moves(c.run_id, me)

    async def verify_ideal(self, run_id, turns, ideal, typed, visitor_id,
                           request: Req = None, profile: Profile = None, oauth_token: Token = None):
        """Keep the ideal action and verify it: fork the run with it in place (the debate goes on live after
        that turn, in the app's line) and record whether the outcome flips."""
        me = self._me(typed, visitor_id, request, profile, oauth_token)
        c = self._correction(run_id, turns, ideal, me)
        if c is None:
            return gr.skip()
        visitor = identify(self.services.config, browser_id=visitor_id, profile=profile, token=oauth_token,
                           session=getattr(request, "session_hash", None))
        key = visitor_key(visitor.owner, visitor_id, getattr(request, "session_hash", None))

        async def run_fork(spec):
            _, fork_id, t = await fork_saved(self.services, c.run_id, spec, source="verify", visitor=visitor,
                                             line_key=key)
            return fork_id, t
        try:
            await verify(self.store, c, run_fork)
        except USER_ERRORS + (KeyError, Refused) as exc:
            warn(sentence(exc))
        return self._moves(c.run_id, me)
