"""Exact detectors of debate failure modes: each reads a finished transcript and returns machine
suggestions (a taxonomy label with its evidence: round, agents, numbers, a text span) for a person to
confirm or reject. Pure functions; storing them is book.py's job."""
from __future__ import annotations

import re
from typing import Any, Callable, Sequence

from r2mad.annotation.outcome import correct_answer_outvoted, premature_consensus_stop
from r2mad.annotation.suggestion import Suggestion, answer_key, turns_by_agent
from r2mad.annotation.suggestion import right as _right
from r2mad.annotation.suggestion import span as _span
from r2mad.types import Answer, Round, Transcript

__all__ = ["Suggestion", "answer_key", "turns_by_agent", "DETECTORS", "detect", "counterfactual"]
VERSION = 3  # bump when a detector changes, so stored suggestions are recomputed
SAME_REASONING = 0.8  # word-set Jaccard at or above which two responses argue the same way
MIN_REASONING_WORDS = 8  # fewer words (answer markers left out) on either side: no reasoning to compare
_ANSWER_MARK = re.compile(r"\\boxed\{[^{}]*(\{[^{}]*\}[^{}]*)*\}|\(\([^()]*\)\)|answer\s*(is|:)\s*\(?\w+\)?",
                          re.I)
_WORD = re.compile(r"[a-z0-9]+")


def _partition(rnd: Round, kind: str) -> frozenset[frozenset[int]]:
    groups: dict[Any, set[int]] = {}
    for agent, turn in turns_by_agent(rnd).items():
        key = answer_key(turn.answer, kind)
        groups.setdefault(key if key is not None else ("unparsed", agent), set()).add(agent)
    return frozenset(frozenset(g) for g in groups.values())


def shared_misconception(t: Transcript) -> list[Suggestion]:
    """Round 0: strictly more than half of the agents wrong, and the final answer wrong too."""
    if t.task.gold is None or not t.rounds or len(t.rounds[0].turns) < 2 or t.correct:
        return []
    turns = turns_by_agent(t.rounds[0])
    wrong = tuple(a for a, turn in sorted(turns.items()) if not _right(t, turn))
    if 2 * len(wrong) <= len(turns):
        return []
    answers = {str(a + 1): str(turns[a].answer) for a in wrong}
    return [Suggestion("shared_misconception_unrecovered", "shared_misconception", 0, wrong,
                       f"{len(wrong)} of {len(turns)} agents wrong in round 0; final {t.final}",
                       {"wrong_answers": answers, "gold": t.task.gold, "final": str(t.final)})]


def persuaded_by_wrong_majority(t: Transcript) -> list[Suggestion]:
    """An agent right at t-1 answers at t what a strict, wrong majority answered at t-1."""
    out, kind = [], t.task.kind
    for index in range(1, len(t.rounds)):
        before, after = turns_by_agent(t.rounds[index - 1]), turns_by_agent(t.rounds[index])
        keys = {a: answer_key(turn.answer, kind) for a, turn in before.items()}
        for majority in set(k for k in keys.values() if k is not None):
            holders = tuple(a for a, k in sorted(keys.items()) if k == majority)
            if 2 * len(holders) <= len(before) or _right(t, before[holders[0]]):
                continue
            for agent, turn in sorted(after.items()):
                if _right(t, before.get(agent)) and answer_key(turn.answer, kind) == majority:
                    out.append(Suggestion(
                        "majority_persuaded_correct_agent", "persuaded_by_wrong_majority", index,
                        (agent, *holders), f"agent {agent + 1} left the right {before[agent].answer} "
                        f"for the majority's wrong {turn.answer} in round {index}",
                        {"from": str(before[agent].answer), "to": str(turn.answer),
                         "majority_agents": [a + 1 for a in holders], "span": _span(turn.text)}))
    return out


def correct_minority_masked(t: Transcript) -> list[Suggestion]:
    """MAD-M²: the only right response of round t-1 was masked before round t."""
    out = []
    for index in range(1, len(t.rounds)):
        before = turns_by_agent(t.rounds[index - 1])
        right = [a for a, turn in before.items() if _right(t, turn)]
        masks = t.rounds[index].details.get("masks") or {}
        if len(right) != 1 or not masks:
            continue
        agent = right[0]
        views = {"all": masks} if any("keep" in v for v in masks.values()) else masks
        hidden_from = [viewer for viewer, verdicts in views.items()
                       if viewer != str(agent) and (verdicts.get(str(agent)) or {}).get("keep") is False]
        if hidden_from:
            verdict = {k: v for k, v in views[hidden_from[0]][str(agent)].items() if k != "judgment"}
            out.append(Suggestion("mask_removed_correct_answer", "correct_minority_masked", index,
                                  (agent,), f"the only right answer ({before[agent].answer}, agent "
                                  f"{agent + 1}) was masked before round {index}",
                                  {"mask": verdict, "hidden_from": hidden_from}))
    return out


def judge_endorsed_wrong(t: Transcript) -> list[Suggestion]:
    """MAD-M² (subjective): the judge said YES to a wrong round t-1 response, kept it, and its answer is
    the wrong final answer."""
    if t.correct is not False or t.final is None:
        return []
    out, final = [], answer_key(t.final, t.task.kind)
    for index in range(1, len(t.rounds)):
        before = turns_by_agent(t.rounds[index - 1])
        masks = t.rounds[index].details.get("masks") or {}
        views = {"all": masks} if any("keep" in v for v in masks.values()) else masks
        endorsed = sorted({int(a) for verdicts in views.values() for a, v in verdicts.items()
                           if (v or {}).get("label") == "YES" and v.get("keep") and int(a) in before})
        for agent in endorsed:
            turn = before[agent]
            if not _right(t, turn) and final is not None and answer_key(turn.answer, t.task.kind) == final:
                out.append(Suggestion("judge_endorsed_wrong_answer", "judge_endorsed_wrong", index - 1, (agent,),
                                      f"the judge kept agent {agent + 1}'s wrong {turn.answer} as correct before "
                                      f"round {index}; the debate ended on it", {
                                          "answer": str(turn.answer), "final": str(t.final),
                                          "span": _span(turn.text)}))
    return out


def negative_case_adopted(t: Transcript) -> list[Suggestion]:
    """R²-MAD: an agent was shown a case whose answer was wrong and switched to that answer, wrongly."""
    out, kind = [], t.task.kind
    for index in range(1, len(t.rounds)):
        before, after = turns_by_agent(t.rounds[index - 1]), turns_by_agent(t.rounds[index])
        for agent, turn in sorted(after.items()):
            prev, new = before.get(agent), answer_key(turn.answer, kind)
            if prev is None or new is None or new == answer_key(prev.answer, kind) or _right(t, turn):
                continue
            for case in turn.details.get("retrieved") or []:
                case_key = None if case.get("answer") is None else answer_key(Answer(str(case["answer"]), "case"), kind)
                if case.get("correct") is False and case_key == new:
                    out.append(Suggestion("misleading_retrieved_case", "negative_case_adopted", index, (agent,),
                                          f"agent {agent + 1} switched to {turn.answer}, the answer of wrong "
                                          f"case {case.get('case_id')}", {
                                              "case_id": case.get("case_id"), "case_answer": case["answer"],
                                              "similarity": case.get("similarity"),
                                              "from": str(prev.answer), "to": str(turn.answer)}))
                    break
    return out


def correct_peer_low_confidence(t: Transcript) -> list[Suggestion]:
    """R²-MAD: a peer whose round t-1 answer was right was shown to an agent as low confidence."""
    out = []
    for index in range(1, len(t.rounds)):
        before = turns_by_agent(t.rounds[index - 1])
        for agent, turn in sorted(turns_by_agent(t.rounds[index]).items()):
            for peer, conf in sorted((turn.details.get("confidence") or {}).items()):
                if (conf or {}).get("label") == "low" and _right(t, before.get(int(peer))):
                    out.append(Suggestion("wrong_confidence", "correct_peer_low_confidence", index,
                                          (int(peer), agent), f"agent {int(peer) + 1}'s right answer was "
                                          f"tagged low confidence for agent {agent + 1}",
                                          {"c": conf.get("c"), "peer_answer": str(before[int(peer)].answer)}))
    return out


def advice_flipped_correct(t: Transcript) -> list[Suggestion]:
    """TrueMAD: a rebuttal reached an agent that was right at t-1 and wrong at t."""
    out = []
    for index in range(1, len(t.rounds)):
        before, after = turns_by_agent(t.rounds[index - 1]), turns_by_agent(t.rounds[index])
        texts = {(c.source, c.target): c.text for c in t.rounds[index].aux if c.kind == "advice"}
        for item in t.rounds[index].details.get("advice") or []:
            source, target = item.get("source"), item.get("target")
            if (item.get("type") == "rebuttal" and _right(t, before.get(target))
                    and target in after and not _right(t, after[target])):
                out.append(Suggestion("advice_misled", "advice_flipped_correct", index, (target, source),
                                      f"a rebuttal from agent {source + 1} preceded agent {target + 1}'s "
                                      f"right → wrong flip", {"from": str(before[target].answer),
                                                              "to": str(after[target].answer),
                                                              "span": _span(texts.get((source, target), ""))}))
    return out


def oscillation(t: Transcript) -> list[Suggestion]:
    """An agent's parsed answers over three consecutive rounds read A, B, A (A ≠ B)."""
    out, kind = [], t.task.kind
    for index in range(2, len(t.rounds)):
        window = [turns_by_agent(t.rounds[i]) for i in (index - 2, index - 1, index)]
        for agent in sorted(window[2]):
            keys = [answer_key(w[agent].answer, kind) if agent in w else None for w in window]
            if None not in keys and keys[0] == keys[2] != keys[1]:
                answers = [str(w[agent].answer) for w in window]
                out.append(Suggestion("oscillation", "oscillation", index, (agent,),
                                       f"agent {agent + 1}: {' → '.join(answers)}",
                                       {"rounds": [index - 2, index - 1, index], "answers": answers}))
    return out


def stalled_split(t: Transcript) -> list[Suggestion]:
    """Two consecutive rounds split the agents into the same non-unanimous groups (once per streak)."""
    out, streak = [], False
    for index in range(1, len(t.rounds)):
        a, b = _partition(t.rounds[index - 1], t.task.kind), _partition(t.rounds[index], t.task.kind)
        stalled = a == b and len(b) > 1
        if stalled and not streak:
            groups = sorted(sorted(x + 1 for x in g) for g in b)
            out.append(Suggestion("stalled_split", "stalled_split", index,
                                  tuple(sorted(turns_by_agent(t.rounds[index]))),
                                  f"same split {groups} in rounds {index - 1} and {index}",
                                  {"rounds": [index - 1, index], "groups": groups}))
        streak = stalled
    return out


def parse_failure(t: Transcript) -> list[Suggestion]:
    """Every turn whose answer is UNPARSED (abstentions, i.e. failed calls, excluded)."""
    return [Suggestion("parse_failure", "parse_failure", rnd.index, (turn.agent,),
                       f"agent {turn.agent + 1}'s answer in round {rnd.index} is UNPARSED",
                       {"span": _span(turn.text[-240:])})
            for rnd in t.rounds for turn in sorted(rnd.turns, key=lambda x: x.agent)
            if turn.error is None and not turn.answer.parsed]


def reasoning_words(text: str) -> set[str]:
    """The lower-cased word set of a response with its answer markers (\\boxed{}, ((X)), "answer is X") left out."""
    return set(_WORD.findall(_ANSWER_MARK.sub(" ", (text or "").lower())))


def reasoning_similarity(a: str, b: str) -> float | None:
    """Jaccard overlap of two responses' reasoning words; None when either has fewer than
    MIN_REASONING_WORDS (a bare answer has no reasoning to compare, so it never counts as the same)."""
    words = [reasoning_words(a), reasoning_words(b)]
    if min(len(w) for w in words) < MIN_REASONING_WORDS:
        return None
    return len(words[0] & words[1]) / len(words[0] | words[1])


def answer_changed_no_new_argument(t: Transcript) -> list[Suggestion]:
    """An agent's answer changed while its reasoning's word set stayed ≥ SAME_REASONING similar."""
    out, kind = [], t.task.kind
    for index in range(1, len(t.rounds)):
        before = turns_by_agent(t.rounds[index - 1])
        for agent, turn in sorted(turns_by_agent(t.rounds[index]).items()):
            prev = before.get(agent)
            old, new = (None, None) if prev is None else (answer_key(prev.answer, kind), answer_key(turn.answer, kind))
            if old is None or new is None or old == new:
                continue
            similarity = reasoning_similarity(prev.text, turn.text)
            if similarity is not None and similarity >= SAME_REASONING:
                was, now = reasoning_words(prev.text), reasoning_words(turn.text)
                out.append(Suggestion("answer_changed_no_new_argument", "answer_changed_no_new_argument",
                                      index, (agent,), f"agent {agent + 1} changed {prev.answer} → {turn.answer} "
                                      f"while its reasoning kept {similarity:.0%} of its words ({len(was & now)} "
                                      f"shared of {len(was | now)}; answers left out)",
                                      {"jaccard": round(similarity, 4), "shared_words": len(was & now),
                                       "words_before": len(was), "words_after": len(now), "from": str(prev.answer),
                                       "to": str(turn.answer), "span": _span(turn.text)}))
    return out


DETECTORS: dict[str, Callable[[Transcript], list[Suggestion]]] = {
    f.__name__: f for f in (shared_misconception, persuaded_by_wrong_majority, correct_minority_masked,
                            negative_case_adopted, correct_peer_low_confidence, advice_flipped_correct,
                            oscillation, stalled_split, parse_failure, answer_changed_no_new_argument,
                            correct_answer_outvoted, premature_consensus_stop, judge_endorsed_wrong)}


NO_LABEL = ""  # a counterfactual says which turn, not why: the annotator picks the label
NEUTRALISED = {"mask": "masked from its peers", "previous": "replaced by its own answer of the round before"}


def counterfactual(rows: Sequence[Any]) -> list[Suggestion]:
    """Blame's replays (steer.links.Blame) that turned the final answer correct: the turn, or the set of
    turns, they neutralised is where the failure comes from. No taxonomy label says that, so none is picked."""
    out = []
    for b in rows:
        if not b.correct:
            continue
        turns = getattr(b, "turns", ((b.round, b.agent, b.neutraliser),))
        what = " and ".join(f"agent {a + 1}'s round {r} turn {NEUTRALISED.get(how, how)}" for r, a, how in turns)
        out.append(Suggestion(NO_LABEL, "counterfactual", b.round, tuple(a for _, a, _ in turns),
                              f"with {what}, the replayed debate ends correct ({b.final_answer})",
                              {"neutraliser": b.neutraliser, "turns": [list(t) for t in turns],
                               "fork_id": b.fork_id, "calls": b.calls, "final_answer": b.final_answer}))
    return out


def detect(t: Transcript | None) -> list[Suggestion]:
    """Every detector's suggestions for one transcript, in DETECTORS order (none before round 0)."""
    if t is None:
        return []
    t = t.finished()
    return [s for detector in DETECTORS.values() for s in detector(t)]
