"""The scoreboard, the side-by-side matrix and the honest state lines, on hand-made transcripts: which
chip each answer gets (gold, wrong, no answer, cut at the token limit, rejected citation), the consensus
and majority per round, and the words for running, stopped and failed debates."""
from __future__ import annotations

import re

from r2mad.types import AgentTurn, Answer, Round, Task, Transcript
from r2mad.ui.render.scoreboard import chip_for, matrix_html, rejected_citation, scoreboard_html
from r2mad.ui.render.states import outcome_line, progress_line, vote_words

BERLIN = Task("mcq", "In which year did the Berlin Wall fall?",
              (("A", "1991"), ("B", "1989"), ("C", "1961"), ("D", "1979")), "B", "mcq-027")


def turn(agent, rnd, value, *, how="double_paren", text=None, tokens_out=40, error=None):
    answer = Answer(None, "abstained") if error else Answer(value, how if value else "unparsed")
    return AgentTurn(agent, rnd, f"P{agent}", (), text if text is not None else f"So (({value}))", answer,
                     tokens_in=10, tokens_out=tokens_out, seconds=1.0, error=error)


def transcript(rounds, *, status="done", final="B", correct=True, max_tokens=64, rounds_planned=3, task=BERLIN):
    return Transcript(task, "mad", "fake", {"agents": 3, "rounds": rounds_planned, "max_tokens": max_tokens},
                      tuple(rounds), Answer(final, "double_paren" if final else "unparsed"), correct, status)


def cells(html: str) -> list[str]:
    """The chips' visible text and kind, in order."""
    return [f"{kind}:{re.sub('<[^>]+>', ' ', text).split()[0]}"
            for kind, text in re.findall(r"class='chip chip-(\w+)'[^>]*>(.*?)</span>(?!<br>)", html)]


def test_chips_colour_gold_wrong_and_no_answer_and_mark_changes():
    prev = turn(0, 0, "A")
    assert chip_for(turn(0, 1, "B"), BERLIN, previous=prev).kind == "gold"
    changed = chip_for(turn(0, 1, "B"), BERLIN, previous=prev)
    assert changed.note == "changed" and "changed from A" in changed.why
    assert chip_for(turn(1, 1, "C"), BERLIN).kind == "wrong"
    none = chip_for(turn(2, 1, None, text="I am not sure."), BERLIN)
    assert (none.kind, none.text, none.why) == ("none", "no answer", "No answer found in the task's format")
    no_gold = Task("math", "2+2?")
    assert chip_for(turn(0, 0, "4", how="boxed"), no_gold).kind == "answer"
    assert "strict: \\boxed{}" in chip_for(turn(0, 0, "4", how="boxed"), no_gold).why  # reading and source in words
    abst = chip_for(turn(0, 0, None, error="Could not reach http://x after 2 attempts"), BERLIN)
    assert abst.text == "abstained" and "Could not reach" in abst.why


def test_cut_at_the_token_limit_is_marked_with_or_without_an_answer():
    cut = chip_for(turn(0, 0, None, text="Let me think step by step about the", tokens_out=64), BERLIN, max_tokens=64)
    assert cut.note == "cut" and cut.why == "Cut at the token limit before an answer was given"
    cut_but_answered = chip_for(turn(0, 0, "B", tokens_out=64), BERLIN, max_tokens=64)
    assert cut_but_answered.kind == "gold" and "cut" in cut_but_answered.note
    assert chip_for(turn(0, 0, "B", tokens_out=63), BERLIN, max_tokens=64).note == ""


def test_a_citation_with_another_options_text_is_rejected_and_says_which():
    assert rejected_citation("The wall fell then.\nC) 1989", BERLIN) == "letter C but the text names option B's answer"
    assert rejected_citation("C) 2001", BERLIN) == "letter C but “2001” is not option C's text"
    assert rejected_citation("B) 1989", BERLIN) is None
    assert rejected_citation("no citation here", BERLIN) is None
    chip = chip_for(turn(0, 0, None, text="Thinking.\nC) 1989"), BERLIN)
    assert chip.note == "rejected" and chip.why == "Rejected: letter C but the text names option B's answer"


def test_scoreboard_is_an_agents_by_rounds_grid_with_consensus_and_majority():
    r0 = Round(0, (turn(0, 0, "A"), turn(1, 0, "B"), turn(2, 0, None, text="hmm")), 1 / 3)
    r1 = Round(1, (turn(0, 1, "B"), turn(1, 1, "B"), turn(2, 1, "C")), 2 / 3)
    html = scoreboard_html(transcript([r0, r1]))
    assert cells(html)[:6] == ["wrong:A", "gold:B", "gold:B", "gold:B", "none:no", "wrong:C"]  # row by row
    assert html.count("<tr>") == 1 + 3 + 2  # head, three agents, consensus, majority
    assert re.search(r"<td style='[^']*'>0\.33</td>", html)  # round 0's consensus
    assert "B (2/3)" in html  # round 1's majority
    assert "Final answer" not in html  # the outcome line above the grid says it once


def test_a_running_round_shows_pending_chips_and_the_current_majority():
    r0 = Round(0, (turn(0, 0, "B"), turn(1, 0, "B"), turn(2, 0, "A")), 2 / 3)
    r1 = Round(1, (turn(0, 1, "B"),), 1.0, details={"running": True, "typing": {"1": "Let me"}})
    t = transcript([r0, r1], status="running")
    html = scoreboard_html(t)
    assert "chip-pending" in html and "writing" in html and "running…" in html
    assert outcome_line(t) == "Round 1 running — leading B, majority (2 of 3 agents) after round 0"
    assert progress_line("R²-MAD", t) == "R²-MAD: round 1 of rounds 0–2"


def test_honest_lines_for_stopped_failed_cut_and_finished_debates():
    r0 = Round(0, (turn(0, 0, "B"), turn(1, 0, "B"), turn(2, 0, "A")), 2 / 3)
    stopped = transcript([r0, Round(1, (), 0.0, details={"running": True})], status="cancelled")
    assert outcome_line(stopped) == "Stopped after round 0 — no final answer (round 0 led B, majority (2 of 3 agents))"
    assert outcome_line(transcript([], status="cancelled")) == "Stopped before round 0 finished — no final answer"
    for html in (scoreboard_html(stopped), matrix_html({"mad": stopped})):  # the cut round is not "running"
        assert "stopped mid-round" in html and "running…" not in html
    err = "Could not reach http://127.0.0.1:9/v1 after 2 attempts within 1.0s; is the server running?"
    dead = Round(0, tuple(turn(i, 0, None, error=err) for i in range(3)), 0.0)
    assert outcome_line(transcript([dead], status="failed", final=None, correct=None)) == \
        "Failed: could not reach the endpoint (0 calls)"
    cut = Round(0, tuple(turn(i, 0, None, text="Step one is", tokens_out=64) for i in range(3)), 0.0)
    assert outcome_line(transcript([cut], final=None, correct=False)) == \
        "No final answer — every answer was cut at the token limit; raise Max tokens"
    assert outcome_line(transcript([r0], final="A", correct=False)) == \
        "Final answer: A — wrong (gold B) · A = 1991, B = 1989"


def test_matrix_has_one_row_per_method_and_one_column_per_round():
    r0 = Round(0, (turn(0, 0, "B"), turn(1, 0, "A"), turn(2, 0, "B")), 2 / 3)
    r1 = Round(1, (turn(0, 1, "B"), turn(1, 1, "B"), turn(2, 1, "B")), 1.0)
    html = matrix_html({"mad": transcript([r0, r1]), "cot": transcript([r0], rounds_planned=3)},
                       {"mad": "MAD", "cot": "CoT <b>"})
    assert html.count("<tr>") == 3 and html.count("Round ") == 3  # rounds 0..2 as columns
    assert "CoT &lt;b&gt;" in html and "<b>" not in re.sub(r"<b>(cut|rejected|changed|guard|fork)</b>", "", html)
    assert "consensus 1.00" in html and "Final answer: B — correct · B = 1989" in html


def test_a_turn_a_fork_changed_is_marked_fork_and_a_forced_answer_says_so():
    import dataclasses

    forced = dataclasses.replace(turn(0, 0, "B", how="forced"), details={"steer": {"answer": "B"}})
    chip = chip_for(forced, BERLIN, previous=None)
    assert (chip.kind, chip.note) == ("gold", "fork")
    assert "forced by a fork" in chip.why and chip.why.endswith("this turn was changed by a fork")
    assert chip_for(turn(0, 0, "B"), BERLIN).note == ""


def test_a_split_vote_says_plurality_or_tie_and_never_majority():
    split = Round(0, (turn(0, 0, "A"), turn(1, 0, "B"), turn(2, 0, "C")), 1 / 3)
    html = scoreboard_html(transcript([split], final="A", correct=False))
    assert "A (1/3, tie: earliest agent)" in html and "Majority" not in html and ">Vote<" in html
    assert outcome_line(transcript([split], final="A", correct=False)) == (
        "Final answer: A — wrong (gold B) · A = 1991, B = 1989 · by tie (1 of 3 agents each); the earliest "
        "agent's answer wins")
    four = Round(0, (turn(0, 0, "C"), turn(1, 0, "B"), turn(2, 0, "B"), turn(3, 0, "A")), 0.5)
    assert vote_words(four, "mcq") == "B, plurality (2 of 4 agents)"
    assert vote_words(four, "mcq", short=True) == "B (2/4, plurality)"
    running = transcript([split, Round(1, (), 0.0, details={"running": True})], status="running")
    assert outcome_line(running) == ("Round 1 running — leading A, tie (1 of 3 agents each); the earliest "
                                     "agent's answer wins after round 0")


def test_rounds_count_from_zero_everywhere_a_two_round_debate_shows():
    r0 = Round(0, (turn(0, 0, "B"), turn(1, 0, "B"), turn(2, 0, "A")), 2 / 3)
    two = transcript([r0, Round(1, (), 0.0, details={"running": True})], status="running", rounds_planned=2)
    assert progress_line("MAD", two) == "MAD: round 1 of rounds 0–1"  # the form's "2 rounds in all"
    assert "round 1 of 1" not in progress_line("MAD", two)
    html = matrix_html({"mad": two})
    assert html.count("<th style") - 1 == 2  # columns: round 0 and round 1


def test_the_verdict_names_the_options_texts_and_clips_a_long_one():
    long = Task("mcq", "Pick", (("A", "x" * 300), ("B", "the right one")), "B", "q")
    line = outcome_line(transcript([Round(0, (turn(0, 0, "A"),), 1.0)], final="A", correct=False, task=long))
    assert line == "Final answer: A — wrong (gold B) · A = " + "x" * 39 + "…, B = the right one"
    assert outcome_line(transcript([Round(0, (turn(0, 0, "4", how="boxed"),), 1.0)], final="4", correct=True,
                                   task=Task("math", "2+2?", gold="4"))) == "Final answer: 4 — correct"
