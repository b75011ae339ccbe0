"""The free-text kinds: `short` (a few words: a name, a place, a year; equal by the rules of names.py, the rest
left to a judge) and `open` (no single right string: positions grouped only when their wording is the same or a
judge finds that each entails the other; the largest group's leader is the final answer, the rest its dissent)."""
from __future__ import annotations

import re
from typing import Sequence

from r2mad.grading.kinds.base import AnswerKind, Ruling
from r2mad.grading.kinds.meaning import MEANING
from r2mad.grading.kinds.names import kept, short_rule
from r2mad.grading.kinds.spelling import normalise
from r2mad.grading.kinds.words import FINAL_LINE, committed, cut_off, has_answer_line, last_sentence, sentences, tidy
from r2mad.types import UNPARSED, Answer, Task

# a reply that commits to no answer: a refusal, or two candidates left open
_NO_ANSWER = re.compile(r"\b(?:(?:do not|don't|cannot|can't|could not|couldn't) (?:know|determine|say|tell|be sure|"
                        r"confirm)|not sure|no idea|unknown|unclear|impossible to (?:know|say|determine)|"
                        r"(?:not able|unable) to|or (?:maybe|perhaps|possibly)|one of the (?:two|three)|"
                        r"either\b[^.]*\bor|please (?:check|consult|verify)|may not be (?:current|up to date)|"
                        r"knowledge cut-?off)\b|^[^,]{1,40}\bor\b[^,]{1,40}$", re.I)
# "I believe it's Toronto", "That would be Marie Curie": the lead-in is not the answer
_LEAD_IN = re.compile(r"^(?:(?:i (?:think|believe|guess|would say)|i'd say|probably)\s+(?:that\s+)?)?"
                      r"(?:(?:it|that|this)(?:'s| is| was| would be)|the answer is)\s+", re.I)
# a closing sentence that takes no position ("It depends on the reader.", "Let me compare the two …")
_NO_POSITION = re.compile(r"\b(?:depends?|depending|each has|both have|reasonable people|is a (?:question|debate)|"
                          r"fun debate|for (?:itself|yourself|themselves)|let me|let's|let us|take a side|my place|"
                          r"personal question|there are (?:many|several) (?:factors|options)|(?:i'm|i am) (?:going|"
                          r"ready) to|i hope|(?:you're|you are) (?:very )?welcome|great example|made an edit)\b", re.I)
_HEDGED_LINE = re.compile(r"^(?:it|that|this) (?:all |really )?depends\b|^no (?:single|right|one) answer", re.I)
_PLEASANTRY = re.compile(r"\b(?:hope (?:this|that|it) helps|let me know|feel free|happy to help|good luck|"
                         r"(?:you're|you are) (?:very )?welcome)\b", re.I)


class ShortKind(AnswerKind):
    """A short free-text answer ("Canberra", "Au", "1969"), equal by the rules of names.py; what they leave
    undecided, a judge decides when there is one, else it stays undecided (never agreement)."""
    name, label = "short", "short answer"
    agree = ("Agree = the same answer by rule: the same spelling (case, articles, punctuation and number words "
             "aside), one answer holding the other with no contrast, the same numbers; other pairs are left to a "
             "judge, or stay undecided.")
    uses_meaning = True  # meaning keeps a pair in different words undecided (never the same)
    strict = frozenset({"answer_colon"})
    limit = 120  # characters: a longer "answer" is an essay, not a short answer
    words = 20  # and so is one of more words than this (once a restated question is dropped)

    def instruction(self, task: Task) -> str:
        return f"Think it through briefly, then {FINAL_LINE} followed by the answer alone, in a few words."

    def final_request(self, task: Task) -> str:
        return "Give only your final answer now, in a few words, and nothing else."

    guard_tokens = 24

    def extract(self, text: str, task: Task) -> Answer:
        """The "Final answer:" line (strict); else \\\\boxed{}, "the answer is …", a reply that is the answer
        alone, or the reply's last sentence (flexible). A refusal ("I don't know") is no answer."""
        found = committed(text, self.limit)
        if not found.parsed and not has_answer_line(text):
            found = _closing(text, self.limit)
        if not found.parsed or not found.value or _NO_ANSWER.search(found.value):
            return UNPARSED
        value = without_restatement(_LEAD_IN.sub("", found.value.replace("’", "'")) or found.value, task.question)
        return Answer(value, found.how) if len(value.split()) <= self.words else UNPARSED

    def key(self, value: str) -> str:
        return normalise(value)

    def references(self, task: Task) -> list[str]:
        """The gold and its aliases, written "Canberra | Canberra, ACT" (a list column is joined so)."""
        return [] if task.gold is None else [g.strip() for g in task.gold.split("|") if g.strip()]

    def rule(self, a: str, b: str, question: str = "") -> Ruling:
        return short_rule(a, b, MEANING.similarity, question)

    def settle(self, values: Sequence[str]) -> list[str]:
        MEANING.embed([text for v in values for text in (v, kept(v).text)])
        return []


def _closing(text: str, limit: int) -> Answer:
    """A reply that is the answer alone (one short line), else its last sentence that is no pleasantry or
    question."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if len(lines) == 1 and len(lines[0].split()) <= 8 and len(lines[0]) <= limit:
        return Answer(tidy(lines[0]), "whole_reply")
    for sentence in reversed(sentences(text)[-2:]):
        if sentence.endswith("?") or _PLEASANTRY.search(sentence) or sentence.startswith(("(", "Please")):
            continue  # a question, a pleasantry, a request or an aside in brackets is no answer
        last = last_sentence(sentence, limit)
        return Answer(last, "last_sentence") if last else UNPARSED
    return UNPARSED


_COPULA = re.compile(r"\s+(?:is|are|was|were|would be|will be)\s+", re.I)
_STOP = {"of", "in", "on", "to", "for", "and", "or", "what", "which", "who", "where", "when"}


def without_restatement(value: str, question: str) -> str:
    """"The capital of Australia is Canberra" and "Canberra is the capital of Australia" -> "Canberra": the
    side of "is" that only restates the question's words is dropped; otherwise the value as it is."""
    parts = _COPULA.split(value, maxsplit=1)
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        return value
    asked = set(normalise(question).split()) | {"it", "answer", "they", "he", "she"}

    def restates(side: str) -> bool:
        words = [w for w in normalise(side).split() if w not in _STOP]
        return bool(words) and all(w in asked for w in words)

    if restates(parts[0]) and not restates(parts[1]):
        return tidy(parts[1])
    if restates(parts[1]) and not restates(parts[0]):
        return tidy(parts[0])
    return value


_FILLERS = {"i", "think", "believe", "would", "say", "so", "really", "definitely", "overall", "honestly", "my",
            "position", "is", "that", "in", "short", "conclusion", "view"}


class OpenKind(ShortKind):
    """No single right string ("Should I learn Rust or Go first?"): two positions are one group when their
    wording is the same (fillers such as "I think" aside) or a judge finds that each entails the other;
    consensus is the largest group's share; the final answer is that group's leader, the other groups its
    dissent."""
    name, label = "open", "open question"
    agree = ("Agree = the same position: the same wording (\"I think\" and the like aside), or a judge finds that "
             "each entails the other; without a judge, other wordings stay apart (groups not checked for "
             "position). Consensus is the largest group's share, the other groups are named as dissent.")
    uses_meaning = False
    names_dissent = True
    limit = 400
    guard_tokens = 80

    def instruction(self, task: Task) -> str:
        return (f"Think it through and weigh the alternatives, then {FINAL_LINE} followed by your position "
                "in one sentence.")

    def final_request(self, task: Task) -> str:
        return "Give only your position now, in one sentence, and nothing else."

    def extract(self, text: str, task: Task) -> Answer:
        """The "Final answer:" line (prose such as "the answer is helpful" is no position), else the reply's
        last complete sentence; a refusal is no position."""
        found = committed(text, self.limit, prose=False)
        if not found.parsed and not has_answer_line(text) and not cut_off(text):  # "Final answer: None": no position
            last = last_sentence(text, self.limit)
            found = Answer(last, "last_sentence") if last and not _NO_POSITION.search(last) else UNPARSED
        hedged = found.parsed and (_NO_ANSWER.search(found.value) or _HEDGED_LINE.search(found.value))
        return UNPARSED if hedged else found

    def references(self, task: Task) -> list[str]:
        return [] if task.gold is None else [task.gold]

    def rule(self, a: str, b: str, question: str = "") -> Ruling:
        same = _wording(a) == _wording(b)
        return Ruling(True, "the same wording") if same else Ruling(None, "positions not compared without a judge")

    def settle(self, values: Sequence[str]) -> list[str]:
        return []

    def judge_both_ways(self) -> bool:
        return True


def _wording(position: str) -> list[str]:
    return [w for w in normalise(position).split() if w not in _FILLERS]
