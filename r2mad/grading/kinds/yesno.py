"""The `yesno` kind: "Final answer: yes" (strict), or the verdict a reply concludes with (flexible): "… so yes.",
"Therefore, no.", "91 = 7 × 13, so it is not prime." (the question's predicate, negated), or a reply that opens
with it ("Yes — by the dictionary definition …"). Agree = the same word."""
from __future__ import annotations

import re

from r2mad.grading.kinds.base import AnswerKind, Ruling
from r2mad.grading.kinds.spelling import normalise
from r2mad.grading.kinds.words import CORRECTION, FINAL_LINE, committed, cut_off
from r2mad.types import UNPARSED, Answer, AnswerShape, Task


class YesNoKind(AnswerKind):
    name, label = "yesno", "yes or no"
    agree = "Agree = the same yes or no."
    guard_tokens = 4
    strict = frozenset({"answer_colon"})

    def instruction(self, task: Task) -> str:
        return f"Think it through briefly, then {FINAL_LINE} followed by the single word yes or no."

    def final_request(self, task: Task) -> str:
        return "Answer now with the single word yes or no, and nothing else."

    def shape(self, task: Task) -> AnswerShape:
        return AnswerShape(choices=("yes", "no"), regex=r"(yes|no)", grammar='root ::= "yes" | "no"')

    def extract(self, text: str, task: Task) -> Answer:
        """"Final answer: yes" (strict, unless the reply takes it back after); else the verdict it concludes
        with (concluded), or opens with (flexible)."""
        found = committed(text)
        line = list(_ANSWER_LINE.finditer(text))
        if found.parsed and line and CORRECTION.search(text[line[-1].end():]):
            text = text[line[-1].end():]  # "Final answer: yes. Hmm, wait … so no."
        elif found.parsed:
            word = yes_or_no(found.value) or concluded(found.value, task.question)
            if word:
                return Answer(word, found.how)
        word = concluded(text, task.question)
        if word:
            return Answer(word, "conclusion")
        word = yes_or_no(text, opening_only=True)  # "Yes, a hot dog …": a reply that opens with its verdict
        return Answer(word, "opening_word") if word else UNPARSED

    def key(self, value: str) -> str:
        return value.casefold()

    def checked(self, value: str, task: Task) -> str:
        word = yes_or_no(value)
        if word is None:
            raise ValueError(f"The answer {value.strip()!r} is not yes or no; write one of them.")
        return word

    def rule(self, a: str, b: str, question: str = "") -> Ruling:
        x, y = yes_or_no(a), yes_or_no(b)
        if x is None or y is None:
            return Ruling(False, "not yes or no")
        return Ruling(x == y, "the same word" if x == y else "yes against no")


def yes_or_no(text: str, opening_only: bool = False) -> str | None:
    """"yes" or "no" from the text's opening word (true/false read as yes/no); None for "yes or no" (a copied
    placeholder) and for "No matter …", "No doubt …" (an opening that is no verdict)."""
    if re.match(r"\W*(?:(?:yes|no)\s*(?:/|or)\s*(?:yes|no)|no (?:doubt|matter|wonder|question))\b", text, re.I):
        return None  # a copied placeholder, or an idiom ("No doubt about it" means yes)
    ends = r"[,.!;:)\n*—–-]|$"
    m = re.match(rf"\s*\**\s*({_WORDS})\b(?=\s*(?:" + ends + ")" + ("" if opening_only else r"|\s") + ")", text, re.I)
    return None if m is None else VERDICT_WORDS[m.group(1).lower()]


VERDICT_WORDS = {**dict.fromkeys(("yes", "yep", "yeah", "yup", "true"), "yes"),
                 **dict.fromkeys(("no", "nope", "nah", "false"), "no")}
_WORDS = "|".join(VERDICT_WORDS)
_ANSWER_LINE = re.compile(r"^[ \t>#*_-]*(?:my\s+)?(?:final\s+)?answer\s*\**\s*:.*$", re.I | re.M)
# a closing judgement on the claim asked about: "I'd say that's accurate.", "That is not correct."
_JUDGED = re.compile(r"^\s*(?:i'd say |i would say )?(?:that's |that is |it's |it is |this is )?(not )?"
                     r"(accurate|correct|right|true|wrong|incorrect|false|inaccurate)\W*$", re.I)


_SENTENCE = re.compile(r"[^.!?\n]+")
_MARKER = re.compile(r".*\b(?:so|therefore|thus|hence|in short|in conclusion|overall|ultimately|answer is|"
                     r"that means|which means)\b[,:]?", re.I | re.S)
_VERDICT = re.compile(r"\b(yes|no|yep|yeah|yup|nope|nah|true|false)\b(?=\s*(?:[,.!;:)—–-]|$))", re.I)
_NEGATION = re.compile(r"\b(?:not|never|no|none|cannot|neither|nor)\b|n't\b", re.I)
_HEDGE = re.compile(r"\b(?:depends?|unclear|uncertain|maybe|perhaps|possibly|might|not sure|unknown|debatable|"
                    r"arguably|sometimes|either)\b|\b(?:yes|no)\s*(?:or|/)\s*(?:yes|no)\b", re.I)
_AUXILIARY = {"is", "are", "was", "were", "am", "do", "does", "did", "can", "could", "should", "would", "will",
              "shall", "may", "might", "must", "has", "have", "had", "isnt", "arent", "wasnt", "dont", "doesnt",
              "didnt", "cant", "wont"}
_FILLER = {"a", "an", "the", "it", "its", "of", "in", "on", "at", "to", "for", "by", "from", "with", "and", "or",
           "that", "this", "there", "be", "been", "you", "i", "we", "they", "he", "she", "true", "really", "ever"}


def concluded(text: str, question: str) -> str | None:
    """The verdict a reply's last sentence concludes with: its clause after "so / therefore / thus …" (or the
    sentence) says yes or no as a word ("… so yes."), or restates the question's predicate, negated or not,
    after such a word or with the question's subject ("so it is not prime" asked "Is 91 prime?" -> no;
    "Vaccines do not cause autism." -> no). None when it hedges or restates nothing of the predicate."""
    sentences = [s for s in _SENTENCE.findall(text) if re.search(r"\w", s)]
    if not sentences or cut_off(text):  # a reply cut off mid-sentence concluded nothing
        return None
    last = sentences[-1]
    judged = _JUDGED.match(last.replace("’", "'"))
    if judged:
        yes = judged.group(2).lower() in ("accurate", "correct", "right", "true")
        return "yes" if yes != bool(judged.group(1)) else "no"
    marked = _MARKER.match(last)
    clause = last[marked.end():] if marked else last
    if _HEDGE.search(clause):
        return None
    word = _VERDICT.findall(clause)
    if word:
        return VERDICT_WORDS[word[-1].lower()]
    subject, asked = _subject_and_predicate(question)
    said = set(normalise(clause.replace("'", "")).split())
    restated = any(_alike(w, x) for w in asked for x in said)
    if not restated or not (marked or subject in said or re.match(r"\s*(?:it|they|he|she|this|that)\b", clause, re.I)):
        return None
    return "no" if _NEGATION.search(clause) else "yes"


def _alike(a: str, b: str) -> bool:
    """The same word, or one a form of the other ("coexist", "coexisted")."""
    return a == b or (min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a)))


def _subject_and_predicate(question: str) -> tuple[str, set[str]]:
    """A yes/no question's subject (its first word after the auxiliary) and the words it asks about: "Is 91 a
    prime number?" -> (91, {prime, number}); "Do vaccines cause autism?" -> (vaccines, {cause, autism})."""
    words = [w for w in normalise(question.replace("'", "")).split() if w not in _FILLER]
    if words and words[0] in _AUXILIARY:
        words = words[1:]
    return (words[0], set(words[1:])) if words else ("", set())
