"""Blame for several turns: a label may blame a set of turns, people's blamed sets are compared by their
Jaccard overlap, and `blame --pairs` tries two turns of one round together when no single turn's replay
fixes a failed run, never past its budget of model calls."""
import asyncio

from r2mad.annotation import agreement
from r2mad.annotation.book import LabelBook, blame_turns
from r2mad.debate import Debate
from r2mad.engine.forks import fork_debate
from r2mad.engine.runner import Setup
from r2mad.exports.dataset import label_rows
from r2mad.methods import make_method
from r2mad.runs.io import export_records
from r2mad.runs.store import RunStore
from r2mad.steer.blame import blame, pair_candidates
from tests.helpers import FORK_SETTINGS as SETTINGS
from tests.helpers import PLANET_MCQ as MCQ
from tests.helpers import agent_of, save_run
from tests.scripted import ScriptedBackend, last_user


def herd(m):
    """Agent 1 starts right (B), agents 2 and 3 wrong (A); later, anyone shown an A goes along with it,
    and anyone shown no A says B. Only hiding both wrong round-0 turns lets agent 1's B spread."""
    if len(m) == 2:
        return "Jupiter. ((B))" if agent_of(m) == 0 else "Mars. ((A))"
    return "Going along. ((A))" if "((A))" in last_user(m) else "Jupiter. ((B))"


def test_pairs_are_tried_when_no_single_turn_fixes_the_run_and_stay_within_budget():
    t = asyncio.run(Debate(ScriptedBackend(herd), make_method("mad", SETTINGS)).run(MCQ))
    assert t.correct is False and [str(x.answer) for x in t.rounds[-1].turns] == ["A", "A", "A"]

    def blamed(budget, pairs=True):
        backend = ScriptedBackend(herd, name="b")

        async def run_fork(spec, wrap):
            return None, await fork_debate(t, spec, Setup(wrap(backend), SETTINGS))
        rows, skipped = asyncio.run(blame(t, "run-1", run_fork, budget, pairs=pairs))
        return rows, skipped, backend

    # singles: round 1's three masks and agent 1's own earlier answer (3 calls each: round 2 replayed),
    #   round 0's two masks (6 calls each) = 24 calls, none fixes it. Pairs of round 1: 5 (3 calls each),
    #   none fixes it; round 0's one pair (6 calls), agents 2 and 3 masked together, does: 24 + 15 + 6 = 45
    rows, skipped, backend = blamed(45)
    singles, pairs = [b for b in rows if not b.also], [b for b in rows if b.also]
    assert (len(singles), len(pairs)) == (6, 6) and not any(b.correct for b in singles)
    assert [b.turns for b in pairs if b.correct] == [((0, 1, "mask"), (0, 2, "mask"))]
    assert len(backend.calls) == sum(b.calls for b in rows) == 45 and skipped == []
    rows, skipped, backend = blamed(40)  # the fixing pair does not fit in what is left: left out, not started
    assert len(backend.calls) <= 40 and not any(b.correct for b in rows)
    assert [(c.round, c.agent, c.also) for c in skipped] == [(0, 1, ((0, 2, "mask"),))]
    rows, _, backend = blamed(45, pairs=False)
    assert all(not b.also for b in rows) and len(backend.calls) == 24
    assert len(pair_candidates(t)) == 6


def test_a_pair_is_stored_and_becomes_one_counterfactual_suggestion(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    t = asyncio.run(Debate(ScriptedBackend(herd), make_method("mad", SETTINGS)).run(MCQ))
    run = save_run(store, t)
    from r2mad.steer.links import Blame
    store.save_blame([Blame(run, 0, 1, "mask", None, "B", True, 6, 60, 0.0, ((0, 2, "mask"),)),
                       Blame(run, 0, 1, "mask", None, "A", False, 6, 60)])
    assert [b.turns for b in store.blame_of(run)] == [((0, 1, "mask"),), ((0, 1, "mask"), (0, 2, "mask"))]
    book = LabelBook(store)
    book.detect()
    [s] = [s for s in book.suggestions(run) if s.detector == "counterfactual"]
    assert (s.round, s.agents) == (0, (1, 2))
    assert s.summary.startswith("with agent 2's round 0 turn masked from its peers and agent 3's round 0 turn")
    # blaming either of its turns confirms it
    book.save_labels(run, "ana", ["other"], blame={"other": [{"round": 0, "agent": 2}]})
    assert [x.reviews for x in book.suggestions(run) if x.detector == "counterfactual"] == [{"ana": "confirmed"}]


def test_set_valued_blame_is_saved_exported_and_compared_by_jaccard(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    t = asyncio.run(Debate(ScriptedBackend(herd), make_method("mad", SETTINGS)).run(MCQ))
    run = save_run(store, t)
    book = LabelBook(store)
    book.save_labels(run, "ana", ["other"], blame={"other": [{"round": 0, "agent": 1}, {"round": 0, "agent": 2}]})
    book.save_labels(run, "bo", ["other"], blame={"other": [{"round": 0, "agent": 2}, {"round": 1, "agent": 0},
                                                            {"round": 1, "agent": 1}]})
    book.save_labels(run, "cy", ["other"], blame={"other": {"round": 0, "agent": 2}})  # one turn, as before
    assert blame_turns(store.get_run(run).annotations[0].blame["other"]) == [(0, 1), (0, 2)]
    # ana-bo: {01,02} vs {02,10,11}: 1 shared of 4 = .25; ana-cy: 1 of 2 = .5; bo-cy: 1 of 3 = .3333
    #   mean (.25 + .5 + .33333) / 3 = .36111
    rows = {b.label: b for b in agreement.blame_agreement(book.human_blame(), store.taxonomy)}
    assert (rows["other"].pairs, rows["other"].mean_jaccard) == (3, 0.3611)
    assert rows["oscillation"].pairs == 0 and rows["oscillation"].mean_jaccard is None
    labels = [r for r in label_rows(book, export_records(store, [run])) if r["kind"] == "human"]
    ana = next(r for r in labels if r["annotator"] == "ana")
    assert (ana["turns"], ana["round"], ana["agent"], ana["agents"]) == ([[0, 1], [0, 2]], 0, 1, [1, 2])
    assert ana["mast"] is None and all("mast" in r for r in labels)
