"""Blame with intervals (`blame --samples K`) and verified corrections, by hand on a scripted backend whose
replies follow a coin drawn from each sample's seed, so every flip probability is known: agents shown an
A go along with it three times in four; agents shown none keep B three times in four."""
import asyncio
import math

from r2mad.debate import Debate
from r2mad.engine.forks import fork_debate
from r2mad.engine.runner import Setup
from r2mad.methods import make_method
from r2mad.runs.counterfactuals import corrections_of, samples_of, save_samples, write_correction
from r2mad.runs.store import RunStore
from r2mad.steer.sampling import SEED_STRIDE, sampled_blame, verdict
from r2mad.steer.verify import correction_spec, outcome_words, verify
from tests.helpers import FORK_SETTINGS as SETTINGS
from tests.helpers import PLANET_MCQ as MCQ
from tests.helpers import agent_of, save_run
from tests.scripted import ScriptedBackend, last_user


def coin_backend():
    """u = (seed // SEED_STRIDE) % 4 is sample k's coin ((k + 1) % 4; the run's own seed 3 gives 0).
    Round 0: agent 1 says A, the others B. Later: shown an A, answer A unless u == 1; shown none, B unless u == 0."""
    backend = ScriptedBackend(lambda m: "", name="b")

    def reply(m):
        u = (backend.calls[-1].seed // SEED_STRIDE) % 4
        if len(m) == 2:
            return "Mars. ((A))" if agent_of(m) == 0 else "Jupiter. ((B))"
        if "((A))" in last_user(m):
            return "Going along. ((A))" if u != 1 else "Jupiter. ((B))"
        return "Jupiter. ((B))" if u != 0 else "Mars after all. ((A))"
    backend.reply = reply
    return backend


def failed_run():
    t = asyncio.run(Debate(coin_backend(), make_method("mad", SETTINGS)).run(MCQ))
    assert t.correct is False and [[str(x.answer) for x in r.turns] for r in t.rounds] == [
        ["A", "B", "B"], ["A", "A", "A"], ["A", "A", "A"]]
    return t


def sampled(t, budget, k=8, pairs=False):
    backend = coin_backend()

    async def run_fork(spec, wrap, seed=None, parent=None):
        settings = SETTINGS.replace(seed=seed, **({"rounds": spec.rounds} if spec.rounds else {}))
        return None, await fork_debate(parent[1] if parent else t, spec, Setup(wrap(backend), settings))
    rows, skipped, spent = asyncio.run(sampled_blame(t, "run-1", run_fork, budget, k, pairs=pairs))
    assert spent == len(backend.calls)  # every call counted, the baselines' too
    return rows, skipped, backend


def wilson(x, n, z=1.959964):
    """The Wilson score interval, written out (not statsmodels), to check the library against."""
    p = x / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_each_counterfactual_is_sampled_k_times_and_its_change_has_a_newcombe_wilson_interval():
    t = failed_run()
    rows, skipped, backend = sampled(t, 240)
    by = {b.turns: b for b in rows}
    # agent 1's round-0 A hidden: round 1 all B unless u == 0 (k + 1 = 4, 8 of 1..8), then B stays: 6 of 8;
    # as it was from round 1: agents 2 and 3 see the A and go along unless u == 1 (k + 1 = 1, 5): 2 of 8
    masked = by[((0, 0, "mask"),)]
    assert (masked.correct, masked.samples, masked.base_correct, masked.base_samples) == (6, 8, 2, 8)
    (l1, u1), (l0, u0) = wilson(6, 8), wilson(2, 8)
    assert (round(l1, 4), round(u1, 4)) == (0.4093, 0.9285)
    low, high = 0.5 - math.hypot(0.75 - l1, u0 - 0.25), 0.5 + math.hypot(u1 - 0.75, 0.25 - l0)
    assert masked.change == 0.5 and math.isclose(masked.low, low, abs_tol=1e-6)
    assert math.isclose(masked.high, high, abs_tol=1e-6)
    assert (round(masked.low, 3), round(masked.high, 3)) == (0.018, 0.752)
    # round 1's changes: everyone still sees an A in round 2 (or, unmasked, the rest agree on A): no change
    later = [b for b in rows if b.turns[0][0] == 1]
    assert len(later) == 5 and all((b.correct, b.base_correct, b.change) == (2, 2, 0.0) for b in later)
    # calls: round-1 baseline 8 x 3, five round-1 changes 5 x 8 x 3, round-0 baseline and change 2 x 8 x 6
    assert len(backend.calls) == sum(b.calls for b in rows) + 24 + 48 == 240 and skipped == []
    assert "change +0.50 [95% CI +0.02, +0.75]" in verdict(masked)
    seeds = {c.seed // SEED_STRIDE for c in backend.calls}
    assert seeds == set(range(1, 9))  # K other seeds, never the run's own


def test_sampling_stays_within_budget_and_leaves_out_what_does_not_fit_whole():
    t = failed_run()
    rows, skipped, backend = sampled(t, 239)  # the round-0 change and its baseline (96 calls) no longer fit
    assert len(backend.calls) == 144 <= 239 and skipped == [((0, 0, "mask"),)]
    assert all(not b.cut for b in rows)
    rows, skipped, backend = sampled(t, 20)  # not even one round-1 baseline with a change (2 x 24)
    assert rows == [] and len(backend.calls) == 0 and len(skipped) == 6


def test_a_pair_may_span_two_rounds():
    t = failed_run()
    rows, _, backend = sampled(t, 10_000, k=4, pairs=True)
    cross = {b.turns: b for b in rows if len({r for r, _, _ in b.turns}) == 2}
    # agent 1's round-0 turn and agent 2's round-1 turn hidden: u != 0 (k + 1 = 1, 2, 3 of 1..4) -> round 1
    # all B, round 2 B; u == 0: round 1 all A, agent 1 still sees agent 3's A in round 2: 3 of 4
    pair = cross[((0, 0, "mask"), (1, 1, "mask"))]
    assert (pair.correct, pair.samples, pair.base_correct) == (3, 4, 1)
    assert len(cross) == 3 and len(backend.calls) == sum(b.calls for b in rows) + 4 * 3 + 4 * 6


def test_samples_are_stored_and_read_back(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    t = failed_run()
    run = save_run(store, t)
    rows, _, _ = sampled(t, 240)
    save_samples(store, [r.__class__(**{**r.__dict__, "run_id": run}) for r in rows])
    back = samples_of(store, run)
    assert back[0].turns == ((0, 0, "mask"),) and (back[0].correct, back[0].samples) == (6, 8)  # best lower bound first
    assert len(back) == 6


def test_an_ideal_action_is_verified_by_a_fork_and_says_whether_the_outcome_flips(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    t = failed_run()
    run = save_run(store, t)
    write_correction(store, run, 0, 0, "ana", "Jupiter is the largest planet. ((B))")
    write_correction(store, run, 1, 2, "ana", "Mars, I agree. ((A))")
    [right, wrong] = corrections_of(store, run)
    assert not right.verified and outcome_words(right, False) == "not verified yet"
    assert correction_spec(right).from_round == 1 and correction_spec(right).changes[0].agent == 0

    async def run_fork(spec):  # the run's own seed 3 (u = 0): shown no A, agents still say A in round 1
        f = await fork_debate(t, spec, Setup(coin_backend(), SETTINGS))
        return save_run(store, f), f
    done = asyncio.run(verify(store, right, run_fork))
    # round 0 all B, so round 1 shows no A; with u == 0 every agent says A there, and A spreads: no flip
    assert (done.verified, done.correct, done.final_answer) == (True, False, "A")
    assert done.fork_id in {r.id for r in store.list_runs()}
    assert outcome_words(done, False) == "does not flip: still wrong (A)"

    async def lucky(spec):  # a seed with u == 1: anyone shown no A keeps B
        return None, await fork_debate(t, spec, Setup(coin_backend(), SETTINGS.replace(seed=SEED_STRIDE + 3)))
    done = asyncio.run(verify(store, right, lucky))
    assert (done.correct, done.final_answer) == (True, "B")
    assert outcome_words(done, False) == "**flips** wrong → right (B)"
    write_correction(store, run, 0, 0, "ana", "Jupiter, surely. ((B))")  # a new text clears the verification
    assert not corrections_of(store, run)[0].verified and corrections_of(store, run)[1] == wrong
