"""Fair admission (r2mad.serving.admission): caps and their sentences, round-robin order across visitors, place in
line, leaving the line, and an estimate only after a measured debate. A hand-driven clock; no waiting."""
from __future__ import annotations

import asyncio

import pytest

from r2mad.serving.admission import Admission, Refused, about, waiting_words


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def line(slots=1, max_waiting=8, per_visitor=4, waiting_per_visitor=4, clock=None):
    return Admission({"cpu": slots, "net": 8}, max_waiting=max_waiting, per_visitor=per_visitor,
                     waiting_per_visitor=waiting_per_visitor, clock=clock or Clock())


def test_a_free_slot_admits_at_once_and_the_next_one_waits_at_place_1():
    a = line(slots=1)
    first, second = a.enter("ann", "cpu"), a.enter("bob", "cpu")
    assert first.running and a.place(first) == 0
    assert second.waiting and a.place(second) == 1
    a.leave(first, measured=True)
    assert second.running and a.place(second) == 0


def test_the_line_advances_round_robin_across_visitors():
    a = line(slots=1)
    a1 = a.enter("ann", "cpu")  # runs
    a2, a3, a4 = (a.enter("ann", "cpu") for _ in range(3))
    b1 = a.enter("bob", "cpu")
    c1, c2 = a.enter("cid", "cpu"), a.enter("cid", "cpu")
    # one per visitor per turn, visitors in the order they joined: ann's many entries do not push bob back
    assert [a.place(t) for t in (a2, b1, c1, a3, c2, a4)] == [1, 2, 3, 4, 5, 6]
    started = []
    current = a1
    for _ in range(6):
        a.leave(current)
        current = next(t for t in (a2, a3, a4, b1, c1, c2) if t.running)
        started.append(current)
    assert started == [a2, b1, c1, a3, c2, a4]


def test_a_late_visitor_goes_ahead_of_others_second_entries_but_not_their_first():
    a = line(slots=1)
    a.enter("ann", "cpu")
    a2, a3 = a.enter("ann", "cpu"), a.enter("ann", "cpu")
    d1 = a.enter("dan", "cpu")
    assert (a.place(a2), a.place(d1), a.place(a3)) == (1, 2, 3)


def test_leaving_the_line_moves_the_others_up_and_never_takes_a_slot():
    a = line(slots=1)
    running = a.enter("ann", "cpu")
    b1, c1 = a.enter("bob", "cpu"), a.enter("cid", "cpu")
    a.leave(b1)  # Stop while waiting
    assert b1.left and not b1.running and a.place(b1) == 0
    assert a.place(c1) == 1 and a.waiting_count() == 1 and a.running_count("cpu") == 1
    a.leave(b1)  # twice: nothing more happens
    a.leave(running)
    assert c1.running


def test_lanes_have_their_own_slots():
    a = line(slots=1)
    a.enter("ann", "cpu")
    waiting, remote = a.enter("bob", "cpu"), a.enter("bob", "net")
    assert waiting.waiting and remote.running


def test_one_waiting_debate_per_visitor_says_where_it_is_and_how_to_stop_it():
    a = line(slots=1, per_visitor=2, waiting_per_visitor=1)
    a.enter("ann", "cpu")
    a.enter("bob", "cpu")
    with pytest.raises(Refused) as refused:
        a.enter("bob", "cpu")
    assert str(refused.value) == ("Your other debate is still waiting in line (place 1); press Stop where it runs "
                                  "to take it out of the line, or wait until it starts.")


def test_the_cap_per_visitor_counts_running_and_waiting_debates():
    a = line(slots=4, per_visitor=2)
    a.enter("ann", "cpu"), a.enter("ann", "net")
    with pytest.raises(Refused, match="You already have 2 debates running or waiting"):
        a.enter("ann", "cpu")
    a.enter("bob", "cpu")  # another visitor is not held by ann's cap


def test_a_full_line_refuses_in_one_sentence():
    a = line(slots=1, max_waiting=2)
    a.enter("ann", "cpu"), a.enter("bob", "cpu"), a.enter("cid", "cpu")
    with pytest.raises(Refused) as refused:
        a.enter("dan", "cpu")
    assert str(refused.value) == "The line is full (2 debates waiting); try again in a few minutes."
    assert a.enter("dan", "net").running  # a free slot in another lane needs no line


def test_no_estimate_before_a_debate_ran_to_its_end_then_one_from_the_measured_mean():
    clock = Clock()
    a = line(slots=1, clock=clock)
    first = a.enter("ann", "cpu")
    second, third = a.enter("bob", "cpu"), a.enter("cid", "cpu")
    assert a.estimate_s(second) is None
    clock.now += 5
    a.leave(first)  # stopped: not a measurement
    assert a.mean_duration("cpu") is None and a.estimate_s(third) is None
    clock.now += 40
    a.leave(second, measured=True)  # ran 40 s
    assert a.mean_duration("cpu") == 40
    fourth = a.enter("dan", "cpu")
    clock.now += 10  # third has run 10 s of its expected 40
    assert a.estimate_s(fourth) == 30
    fifth = a.enter("eve", "cpu")
    assert a.estimate_s(fifth) == 70
    assert a.estimate_s(third) is None  # running: no estimate


def test_two_slots_share_the_line():
    clock = Clock()
    a = line(slots=2, clock=clock)
    done = a.enter("x", "cpu")
    clock.now += 20
    a.leave(done, measured=True)  # mean 20 s
    r1, r2 = a.enter("ann", "cpu"), a.enter("bob", "cpu")
    w1, w2, w3 = a.enter("cid", "cpu"), a.enter("dan", "cpu"), a.enter("eve", "cpu")
    clock.now += 5
    assert r1.running and r2.running
    assert [a.estimate_s(t) for t in (w1, w2, w3)] == [15, 15, 35]


def test_a_ticket_is_awaited_until_a_slot_frees():
    async def scenario():
        a = line(slots=1)
        first, second = a.enter("ann", "cpu"), a.enter("bob", "cpu")
        await asyncio.wait_for(first.admitted(), 1)
        waiter = asyncio.ensure_future(second.admitted())
        await asyncio.sleep(0)
        assert not waiter.done()
        a.leave(first)
        await asyncio.wait_for(waiter, 1)
    asyncio.run(scenario())


def test_waiting_words_give_an_estimate_only_when_there_is_one():
    assert waiting_words(3, None, 12.4) == "Waiting in line: place 3 · waited 12 s. Press Stop to leave the line."
    assert waiting_words(1, 41, 0, "pick Qwen (HF) under Advanced") == (
        "Waiting in line: place 1 — starts in about 45 s · waited 0 s. Press Stop to leave the line; or pick "
        "Qwen (HF) under Advanced to skip the line.")
    assert about(2) == "about 5 s" and about(150) == "about 3 min"


def test_the_app_puts_debates_on_the_embedded_model_in_its_lane_and_names_a_backbone_that_skips_it():
    from r2mad.serving.line import EMBEDDED, REMOTE, lane_of, skip_hint, with_hint
    from r2mad.settings.config import load_config

    config = load_config()  # the shipped backbones: the embedded SmolLM2 and Hugging Face ones
    assert lane_of(config, ["smollm2-135m"]) == EMBEDDED
    assert lane_of(config, ["qwen2.5-7b", "smollm2-135m"]) == EMBEDDED  # a mixed debate with one embedded agent
    assert lane_of(config, ["qwen2.5-7b"]) == REMOTE and lane_of(config, ["smollm2-135m"], custom=True) == REMOTE
    hint = skip_hint(config, EMBEDDED, lambda name: name == "qwen2.5-7b")
    assert hint == "pick Qwen2.5-7B-Instruct (HF Inference Providers) under Advanced"
    assert skip_hint(config, EMBEDDED, lambda name: False) == ""  # no token for any: no hint
    assert skip_hint(config, REMOTE, lambda name: True) == ""  # already off the line
    assert with_hint("The line is full (32 debates waiting); try again in a few minutes.", hint) == (
        "The line is full (32 debates waiting); try again in a few minutes; or pick Qwen2.5-7B-Instruct "
        "(HF Inference Providers) under Advanced to skip the line.")
