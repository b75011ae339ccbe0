"""The app's pure renderers on hand-made transcripts of every method: what a visitor sees per round
and per agent, the method panels, partial (cancelled) debates, notices, and HTML escaping."""
from __future__ import annotations

import re

from r2mad.types import (
    AgentTurn,
    Answer,
    AuxCall,
    Case,
    Round,
    Task,
    Transcript,
)
from r2mad.ui.render import panels
from r2mad.ui.render.chat import (
    chat_messages,
    esc,
    final_markdown,
)
from r2mad.ui.render.tables import case_markdown, summary_rows

MCQ = Task("mcq", "Which colour do blue and yellow make?", (("A", "Red"), ("B", "Green")), "B", "q1")
MATH = Task("math", "What is 2+3?", gold="5", id="q2")


def turn(agent, rnd, letter, *, text=None, how="double_paren", details=None, error=None,
         persona=None):
    answer = Answer(None, "abstained") if error else Answer(letter, how if letter else "unparsed")
    return AgentTurn(agent, rnd, persona or ["Generalist", "Fact-checker", "Skeptic"][agent], (),
                     text if text is not None else f"I think (({letter}))", answer,
                     tokens_in=100 + agent, tokens_out=40, seconds=1.25 + agent, error=error,
                     details=details or {})


def debate(rounds, *, method="mad", task=MCQ, final="B", correct=True, status="done", notices=()):
    return Transcript(task, method, "smollm2-135m", {"agents": 3}, tuple(rounds), Answer(final, "double_paren"),
                      correct, status, tuple(notices), seconds=12.0)


def mad_transcript():
    r0 = Round(0, (turn(0, 0, "A"), turn(1, 0, "B"), turn(2, 0, "B")), 2 / 3)
    r1 = Round(1, (turn(0, 1, "B"), turn(1, 1, "B"), turn(2, 1, "B")), 1.0)
    return debate([r0, r1])


def by_id(messages) -> dict[str, str]:
    """Message contents by id: "round-1" is a round header, "round-1-agent-0" an agent's message."""
    return {m["metadata"].get("id"): m["content"] for m in messages}


def titles(messages):
    return [m["metadata"].get("title", "") for m in messages]


def everything(messages):
    return "\n".join(m["content"] + "\n" + m["metadata"].get("title", "") for m in messages)


def test_mad_chat_has_one_message_per_agent_per_round_grouped_under_its_round():
    msgs = chat_messages(mad_transcript())
    assert msgs[0]["role"] == "user" and "Which colour do blue and yellow make?" in msgs[0]["content"]
    assert "(B) Green" in msgs[0]["content"]
    # question + 2 x (round header + 3 agents) + final verdict
    assert len(msgs) == 1 + 2 * 4 + 1
    assert msgs[1]["metadata"]["title"] == "Round 0 (each agent alone) — consensus 0.67 (2/3 agree)"
    assert msgs[5]["metadata"]["title"] == "Round 1 (debate) — consensus 1.00 (3/3 agree)"
    agent_msgs = [m for m in msgs if m["metadata"].get("parent_id") == "round-1"]
    assert len(agent_msgs) == 3
    assert agent_msgs[1]["metadata"]["title"] == (
        "Agent 2 · Fact-checker — answer B (strict: ((letter))) · 101+40 tokens · 2.2 s")
    assert "Answers — Agent 1: A, Agent 2: B, Agent 3: B" in msgs[1]["content"]
    assert msgs[-1]["content"].startswith("**Final answer: B — correct · B = Green**")
    assert all(m["metadata"]["status"] == "done" for m in agent_msgs)  # full texts start collapsed
    # a plain MAD debate shows no method panel
    assert "Memory (R²-MAD)" not in everything(msgs) and "Masks" not in everything(msgs)
    assert "Advice" not in everything(msgs)


def test_wrong_final_answer_names_the_gold_and_unparsed_answers_are_labelled():
    r0 = Round(0, (turn(0, 0, None, text="no idea"), turn(1, 0, "A"), turn(2, 0, "A")), 2 / 3)
    msgs = chat_messages(debate([r0], final="A", correct=False))
    assert "no answer (no answer found)" in msgs[2]["metadata"]["title"]
    assert "**Final answer: A — wrong (gold B) · A = Red, B = Green**" in msgs[-1]["content"]


def test_r2mad_memory_panel_shows_lambda_cases_and_peer_confidence():
    details = {"summary": "Two agents agree, one dissents.", "consensus": 0.6667, "lambda": 0.4,
               "retrieved": [{"case_id": "c-17", "question": "Mix red and white?", "response": "Pink ((C))",
                              "answer": "C", "correct": True, "similarity": 0.812, "reward": 1.0,
                              "mmr": 0.3241}],
               "candidates": [{"case_id": "c-17", "similarity": 0.812, "reward": 1.0},
                              {"case_id": "c-3", "similarity": 0.5, "reward": 0.0},
                              {"case_id": "c-9", "similarity": 0.4, "reward": 1.0}],
               "confidence": {"1": {"c": 0.62, "label": "high"}, "2": {"c": None, "label": None}}}
    r0 = Round(0, (turn(0, 0, "A"), turn(1, 0, "B"), turn(2, 0, "B")), 2 / 3)
    r1 = Round(1, (turn(0, 1, "B", details=details), turn(1, 1, "B"), turn(2, 1, "B")), 1.0,
               aux=(AuxCall("summary", 1, "Two agents agree, one dissents.", 50, 12, 0.5),),
               details={"summary": "Two agents agree, one dissents."})
    shown = by_id(chat_messages(debate([r0, r1], method="r2mad")))
    body = shown["round-1-agent-0"]
    assert "**Memory (R²-MAD)** · λ = 0.40 · previous consensus 0.67 · 3 candidates · 1 retrieved" in body
    assert "Case c-17 — similarity 0.81 · reward 1 · MMR 0.324 · that agent was correct" in body
    # what the memory fed comes before the response it informed, with a legend of its numbers
    assert body.index("Memory (R²-MAD)") < body.index("**Response**") < body.index("I think ((B))")
    assert "λ = 1 − γ·consensus" in body and "a case whose agent was wrong can be retrieved" in body
    assert "Response: Pink ((C)) → answer C" in body
    assert "Debate summary h" not in body  # shown once, in the round header
    assert ("Confidence in peers: Agent 2: c = 0.62 (annotated high confidence); "
            "Agent 3: c = n/a (no annotation)") in body
    header = shown["round-1"]
    assert "**Debate summary h^(0) (R²-MAD):** Two agents agree, one dissents." in header
    assert "1 summary call (62 tokens)" in header
    assert "*Written from round 0: Agent 1: A, Agent 2: B, Agent 3: B; consensus 0.67.*" in header


def test_madm2_objective_masks_show_perplexity_and_what_each_agent_saw():
    masks = {"0": {"mean_logprob": -1.0, "perplexity": 2.7183, "keep": True},
             "1": {"mean_logprob": -2.0, "perplexity": 7.3891, "keep": False}}
    r1 = Round(1, (turn(0, 1, "B", details={"shown": [0]}),
                   turn(1, 1, "B", details={"shown": [], "resolved_alone": True})), 1.0, details={"masks": masks})
    bodies = by_id(chat_messages(debate([Round(0, (turn(0, 0, "B"), turn(1, 0, "A")), 0.5), r1],
                                        method="madm2-objective")))
    header = bodies["round-1"]
    assert "Masks (MAD-M², objective: lowest perplexity kept)" in header
    assert "- Agent 1: perplexity 2.72 (mean logprob -1.000) — shown" in header
    assert "- Agent 2: perplexity 7.39 (mean logprob -2.000) — masked" in header
    assert "**Shown after masking:** Agent 1" in bodies["round-1-agent-0"]
    assert "solved the question again alone" in bodies["round-1-agent-1"]


def test_madm2_subjective_masks_show_labels_shared_and_per_viewer():
    shared = {"all": {"0": {"label": "YES", "keep": True, "judgment": "YES, sound.", "error": None},
                      "1": {"label": "NO", "keep": False, "judgment": "NO", "error": None}}}
    text = panels.masks_panel(shared)
    assert "subjective" in text
    assert "- Agent 1's response: YES — shown" in text
    assert "Judge's verdict: “YES, sound.”" in text
    quoted = panels.masks_panel(shared, {"0": "Green, because blue and yellow mix. ((B))"})
    assert "Agent 1 said: “Green, because blue and yellow mix. ((B))”" in quoted
    assert quoted.index("Agent 1 said") < quoted.index("Judge's verdict")
    assert "- Agent 2's response: NO — masked" in text
    per_viewer = {"1": {"0": {"label": "NOT SURE", "keep": False, "judgment": "", "error": "timed out"}}}
    text = panels.masks_panel(per_viewer)
    assert "As judged for Agent 2:" in text
    assert "Agent 1's response: NOT SURE — masked (judge call failed: timed out)" in text
    assert panels.masks_panel(None) == "" and panels.masks_panel({}) == ""


def test_truemad_advice_shows_who_advised_whom_and_says_it_is_our_reimplementation():
    aux = (AuxCall("advice", 1, "REBUTTAL: green is right", 80, 20, 1.0, source=0, target=1, label="rebuttal"),
           AuxCall("advice", 1, "SUPPORT: agreed", 80, 10, 1.0, source=1, target=0, label="support"))
    r1 = Round(1, (turn(0, 1, "B", details={"advice_from": ["Agent 2 (Fact-checker)"]}),
                   turn(1, 1, "B", details={"advice_from": []})), 1.0, aux=aux,
               details={"advice": [{"source": 0, "target": 1, "type": "rebuttal"},
                                   {"source": 1, "target": 0, "type": "support"}]})
    bodies = by_id(chat_messages(debate([Round(0, (turn(0, 0, "B"), turn(1, 0, "A")), 0.5), r1], method="truemad")))
    header = bodies["round-1"]
    assert "- Agent 1 → Agent 2 (rebuttal): “REBUTTAL: green is right”" in header
    assert "- Agent 2 → Agent 1 (support)" in header
    assert "our re-implementation" in header
    assert "2 advice calls (190 tokens)" in header
    assert "**Advice received from:** Agent 2 (Fact-checker)" in bodies["round-1-agent-0"]
    assert "**Advice received from:** nobody" in bodies["round-1-agent-1"]


def test_notices_and_abstentions_are_visible():
    r0 = Round(0, (turn(0, 0, "B"), turn(1, 0, None, error="The endpoint timed out; try later.")), 0.5)
    msgs = chat_messages(debate([r0], notices=("Memory off: no memory bank was given.",)))
    assert msgs[1]["content"] == "⚠️ **Notice:** Memory off: no memory bank was given."
    agent = next(m for m in msgs if m["metadata"].get("id") == "round-0-agent-1")
    assert agent["metadata"]["title"] == "Agent 2 · Fact-checker — abstained (call failed)"
    assert "The model call failed: The endpoint timed out; try later." in agent["content"]


def stopped_in_round1(status="running"):
    """A debate in round 1 as the loop's transcript has it: round 0 finished, round 1 running with one
    turn so far; the final answer is the vote of the last finished round."""
    r0 = Round(0, (turn(0, 0, "A"), turn(1, 0, "B"), turn(2, 0, "B")), 2 / 3)
    r1 = Round(1, (turn(0, 1, "A"),), 1.0, details={"running": True})
    return debate([r0, r1], status=status, notices=("Memory off: no bank.",))


def test_the_running_round_shows_a_spinner_and_no_verdict():
    msgs = chat_messages(stopped_in_round1())
    round1 = next(m for m in msgs if m["metadata"].get("id") == "round-1")
    assert round1["metadata"]["status"] == "pending"
    assert round1["metadata"]["title"] == "Round 1 (debate) — running…"
    assert not msgs[-1]["content"].startswith("**Final answer")  # no verdict while running


def test_cancelled_partial_transcript_keeps_its_rounds_and_says_it_stopped():
    t = stopped_in_round1("cancelled")
    msgs = chat_messages(t)
    round1 = next(m for m in msgs if m["metadata"].get("id") == "round-1")
    assert round1["metadata"]["title"] == "Round 1 (debate) — stopped before it finished"
    assert "status" not in round1["metadata"]
    assert msgs[-1]["content"].startswith(
        "**Stopped after round 0 — no final answer (round 0 led B, majority (2 of 3 agents))**")
    kept = t.finished()  # what metrics score
    assert [r.index for r in kept.rounds] == [0] and kept.final.value == "B" and kept.correct is True
    assert t.usage().calls == 4  # the stopped round's call still counts


def test_stopped_before_round0_finished_says_so_instead_of_a_final_answer():
    r0 = Round(0, (turn(0, 0, "A"),), 1.0, details={"running": True})
    t = Transcript(MCQ, "mad", "x", {}, (r0,), Answer(None, "abstained"), None, "cancelled")
    assert final_markdown(t).startswith("**Stopped before round 0 finished — no final answer**")
    assert t.finished().rounds == ()


def test_model_and_question_text_is_escaped_never_html():
    evil_q = Task("math", "<script>alert(1)</script> What is 1+1?", gold="2")
    evil = '<img src=x onerror="window.__pwned=1"> so \\boxed{2} & done'
    r0 = Round(0, (turn(0, 0, "<b>2</b>", how="boxed", text=evil, persona="<i>P</i>"),), 1.0,
               details={"summary": "<script>x()</script>"})
    msgs = chat_messages(debate([r0], task=evil_q, final="<b>2</b>"))
    text = everything(msgs)
    assert "<script" not in text and "<img" not in text and "<b>" not in text and "<i>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; What is 1+1?" in msgs[0]["content"]
    assert '&lt;img src=x onerror="window.__pwned=1"&gt; so \\boxed{2} &amp; done' in text
    assert "Agent 1 · &lt;i&gt;P&lt;/i&gt; — answer &lt;b&gt;2&lt;/b&gt; (strict: \\boxed{})" in text
    # no remote image load, no link: both read as they were typed
    assert esc("![x](http://tracker/p.png)") == "!&#91;x&#93;(http&#58;//tracker/p.png)"
    assert esc("[go](https://a.example) www.b.example \\[x\\]") == \
        "&#91;go&#93;(https&#58;//a.example) www&#46;b.example \\[x\\]"  # LaTeX brackets untouched


def test_panels_escape_retrieved_cases_and_advice():
    d = {"lambda": 0.5, "retrieved": [{"case_id": "<c>", "question": "<img src=x onerror=y>",
                                       "response": "<script>", "answer": "<a>", "correct": False,
                                       "similarity": 0.1, "reward": 0, "mmr": 0.0}]}
    text = panels.turn_panels(d)
    assert "<img" not in text and "<script>" not in text and "&lt;img src=x onerror=y&gt;" in text
    assert "that agent was wrong" in text
    assert "→ answer &lt;a&gt;" in text
    unparsed = panels.turn_panels({"lambda": 0.1, "retrieved": [{"case_id": "c", "answer": None}]})
    assert "→ answer UNPARSED" in unparsed
    case = Case("c<1>", "q", "mcq", 0, 1, "<img src=x onerror=z>", "prev", "h", 0.5, ("<b>r</b>",),
                ("A",), "A", (True,), 1.0)
    shown = case_markdown(case)
    assert "<img" not in shown and "<b>" not in shown and "&lt;b&gt;r&lt;/b&gt;" in shown


def test_side_by_side_summary_rows():
    a = mad_transcript()
    b = debate([Round(0, (turn(0, 0, "A"), turn(1, 0, "B"), turn(2, 0, "B")), 2 / 3)], method="truemad",
               final="A", correct=False, status="cancelled")
    rows = summary_rows({"mad": a, "truemad": b})
    # tokens per round: (100+101+102) in + 3*40 out = 423; two rounds = 846
    assert rows[0] == ["mad", "B", "yes", 2, 6, 846, 12.0, 0, "done"]
    # a stopped run has no final answer and is not scored
    assert rows[1] == ["truemad", "—", "—", 1, 3, (100 + 101 + 102) + 3 * 40, 12.0, 0, "cancelled"]


def test_final_markdown_counts_calls_and_tokens():
    text = final_markdown(mad_transcript())
    assert re.search(r"mad on smollm2-135m · 2 round\(s\) · 6 calls · 846 tokens · 12\.0 s", text)


def test_the_outcome_line_gives_the_cost_in_money_when_the_backbone_has_prices():
    from r2mad.evaluation.costs import Prices

    t = debate([Round(0, (turn(0, 0, "B"), turn(1, 0, "B")), 1.0)])
    # 201 tokens in and 80 out at $2 / $10 per million: 0.000402 + 0.0008 = $0.001202 -> "$0.00120"
    assert "281 tokens ($0.00120) ·" in final_markdown(t, {t.backbone: Prices(2.0, 10.0)})
    assert "$" not in final_markdown(t)  # a backbone without prices: no money figure


def test_a_turn_a_fork_changed_says_what_changed_before_its_memory():
    from r2mad.ui.render.chat import turn_body, turn_title

    turn = AgentTurn(1, 1, "Skeptic", (), "Now ((B)).", Answer("B", "double_paren"),
                     details={"steer": {"drop-case": 1, "dropped": "q7:a1:r0", "unmasked": [2]},
                              "shown": [0, 2]})
    body = turn_body(turn, "mcq")
    assert body.startswith("**Changed by the fork:** case 1 (q7:a1:r0) dropped from its memory block; "
                           "shown unmasked: agent 3")
    assert body.index("Changed by the fork") < body.index("Shown after masking") < body.index("**Response**")
    assert turn_title(turn, Task("mcq", "q")).endswith(" · changed by the fork")
    plain = AgentTurn(1, 1, "Skeptic", (), "Now ((B)).", Answer("B", "double_paren"))
    assert "fork" not in turn_body(plain, "mcq") + turn_title(plain, Task("mcq", "q"))


def test_an_answer_not_found_reads_no_answer_in_the_round_line_and_the_summary():
    """The chip says "no answer"; the round's answer line and the summary said UNPARSED, the loop's own word."""
    r0 = Round(0, (turn(0, 0, "B"), turn(1, 0, None, text="Hmm."), turn(2, 0, "B")), 2 / 3)
    t = debate([r0], final=None, correct=None)
    assert "Answers — Agent 1: B, Agent 2: no answer, Agent 3: B" in by_id(chat_messages(t))["round-0"]
    assert "UNPARSED" not in everything(chat_messages(t))
    assert summary_rows({"mad": t})[0][1] == "no answer"
