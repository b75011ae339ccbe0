"""When two short answers are the same, by rules alone: the same spelling once normalised (initials run together,
plurals read as singular), one holding the other with no contrast and no name around it ("It fell in November
1989." holds "1989"; "AU (from the Latin aurum)" is "Au"; "Saturn is large, but Jupiter is larger." commits to
Jupiter; "Sydney, not Canberra" rules Canberra out), the same numbers, initials ("USA"). Different when they name
different numbers, different names that share a word ("Real Madrid", "Atletico Madrid"), other middle initials,
or different words whose meanings are far apart. Everything else is undecided ("John Adams", "John Quincy
Adams"): similarity of meaning may keep a pair undecided, it never makes two answers the same."""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

from r2mad.grading.kinds.base import Ruling
from r2mad.grading.kinds.spelling import normalise

DIFFERENT_BELOW = 0.75  # cosine (all-MiniLM-L6-v2) under which two answers in different words are different

_ASIDE = re.compile(r"\s*[(\[]([^()\[\]]*)[)\]]")
# what comes after commits: a contrast or a correction ("…, but Jupiter is larger"), a conclusion ("…, so the
# capital is Toronto"), a second clause after ";"
_CONTRAST = re.compile(r"\b(?:but|however|actually|rather(?!\s+than)|instead(?!\s+of)|in fact|wait|so|therefore|"
                       r"thus|hence)\b|;", re.I)
_DENIED = re.compile(r"\b(?:not|never|rather than|instead of|as opposed to)\s+([^,;.!?]+)", re.I)
_FUNCTION = {"a", "an", "the", "it", "its", "is", "was", "are", "were", "be", "of", "in", "on", "at", "to", "for",
             "by", "from", "with", "and", "or", "that", "this", "he", "she", "they", "his", "her", "their", "i",
             "we", "my", "our", "so", "final", "answer", "called", "named", "known", "as", "who", "which"}
_DESCRIPTORS = {"mount", "mt", "lake", "river", "ocean", "sea", "city", "island", "islands", "desert", "saint",
                "st", "president", "king", "queen", "sir", "dr", "planet", "empire", "kingdom", "the", "cf", "fc"}
_ABBREVIATIONS = {"st": "saint", "mt": "mount", "ft": "fort", "jr": "junior", "sr": "senior"}
_SUFFIXES = {"junior", "senior"}
_MONTHS = set("january february march april may june july august september october november december".split())


@dataclass(frozen=True)
class Kept:
    """What a short answer commits to, as written (`text`) and as words (`words`); the names it rules out; and
    what it says aside in brackets."""
    text: str
    words: tuple[str, ...]
    denied: tuple[str, ...]
    asides: tuple[str, ...]


def kept(value: str) -> Kept:
    """Asides in brackets set apart; the part after the last contrast ("…, but Jupiter is larger" -> "Jupiter is
    larger"; "Andromeda …; we live in the Milky Way"); "not X" / "rather than X" taken out; an appositive after a
    comma dropped ("Rome, Italy", "Mars, whose surface …", "Toronto, Canada's biggest city")."""
    asides = tuple(m.group(1).strip() for m in _ASIDE.finditer(value))
    text = _ASIDE.sub("", value)
    parts = [p for p in _CONTRAST.split(text) if re.search(r"\w", p)]
    text = parts[-1] if parts else text
    denied = tuple(m.group(1).strip() for m in _DENIED.finditer(text))
    text = _DENIED.sub("", text).strip(" ,;:.—")
    head, comma, rest = text.partition(", ")
    if comma and _appositive(head, rest):
        text = head
    return Kept(text, tuple(words(text)), denied, asides)


def _appositive(head: str, rest: str) -> bool:
    """A phrase after a comma that describes rather than names: lower-case ("whose surface …", "in 1876"), a
    possessive ("Canada's biggest city"), or, after a name, a place of one or two words ("Rome, Italy"; but
    "his collaborator, Friedrich Engels" names him)."""
    first, last = (rest.split() or [""])[0], (head.split() or [""])[-1]
    place = len(rest.split()) <= 2 and all(w[:1].isupper() for w in rest.split()) and last[:1].isupper()
    return first[:1].islower() or re.match(r"\w+['’]s\b", first) is not None or place


def words(text: str) -> list[str]:
    """Normalised words, initials run together ("J. K. Rowling" -> "jk rowling") and plurals read as singular."""
    out: list[str] = []
    initials = False  # the last word is a run of initials
    for w in normalise(text).split():
        single = len(w) == 1 and w.isalpha() and w not in ("a", "i")
        if single and initials:
            out[-1] += w
        else:
            out.append(w if single else _ABBREVIATIONS.get(w) or _singular(w))
        initials = single
    return out


def _singular(w: str) -> str:
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def _numbers(tokens: list[str] | tuple[str, ...]) -> list[Fraction]:
    """The numbers among the words, a day of the month beside its month aside ("July 20, 1969" holds 1969)."""
    out = []
    for i, t in enumerate(tokens):
        if re.fullmatch(r"\d{1,60}(?:\.\d{1,60})?", t):  # a longer run of digits is no number to weigh
            by_month = any(tokens[j] in _MONTHS for j in (i - 1, i + 1) if 0 <= j < len(tokens))
            if not (by_month and len(t) <= 2):
                out.append(Fraction(t))
    return sorted(out)


def _names(text: str) -> set[str]:
    """The normalised words of `text` written as a name (capitalised; not a function word, month or descriptor)."""
    out = set()
    for word in re.findall(r"[^\W\d_][\w'’-]*", text):
        if word[0].isupper():
            out.update(w for w in words(word) if w not in _FUNCTION | _MONTHS | _DESCRIPTORS)
    return out


def _inside(short: tuple[str, ...], long: tuple[str, ...]) -> int | None:
    """Where `short` starts as a run of words inside `long`, or None."""
    n = len(short)
    return next((i for i in range(len(long) - n + 1) if long[i:i + n] == short), None)


def asks_for_a_person(question: str) -> bool:
    """Whether the question asks who: then a surname alone names the person ("Mozart")."""
    return re.search(r"\bwho(?:m|se)?\b", question, re.I) is not None


def short_rule(a: str, b: str, similarity: Callable[[str, str], float] | None = None, question: str = "") -> Ruling:
    """The rules on two short answers to `question`, in order (see the module's docstring); symmetric. Asked who,
    a person's surname alone ("Mozart", "van Gogh") is that person's full name; a word derived from one of the
    question's beside an answer adds no name to it ("Japanese yen", asked the currency of Japan)."""
    person, asked = asks_for_a_person(question), words(question)
    if normalise(a) == normalise(b) or words(a) == words(b):
        return Ruling(True, "same after normalising")
    ka, kb = kept(a), kept(b)
    for said, denied in ((kb.words, ka.denied), (ka.words, kb.denied)):
        if said and any(_inside(said, tuple(words(d))) is not None for d in denied):
            return Ruling(False, "one answer rules the other out (“not …”)")
    if not ka.words or not kb.words:
        return Ruling(None, "no answer left once the contrast is set apart")
    if ka.words == kb.words:
        return Ruling(True, "the same once asides, contrasts and plurals are set apart")
    for k, other in ((ka, kb), (kb, ka)):
        if any(tuple(words(x)) == other.words for x in k.asides):
            return Ruling(True, "the same as the other answer's aside in brackets")
    xa, xb = _numbers(ka.words), _numbers(kb.words)
    if xa and xb:
        if xa == xb:
            short, long = sorted((ka.words, kb.words), key=len)
            if set(short) <= set(long):
                return Ruling(True, "the same number")
            return Ruling(None, "the same number in other words")
        fewer, more = sorted((xa, xb), key=len)
        if set(fewer) <= set(more):
            return Ruling(None, "the number among other numbers")
        return Ruling(False, "different numbers")
    short, long = sorted((ka, kb), key=lambda k: len(k.words))
    at = _inside(short.words, long.words)
    if at is not None:
        around = [long.words[i] for i in (at - 1, at + len(short.words)) if 0 <= i < len(long.words)]
        after = long.words[at + len(short.words)] if at + len(short.words) < len(long.words) else ""
        surname = person and at + len(short.words) == len(long.words) and _full_name(long.text)
        if surname and len(short.words) < len(long.words):
            return Ruling(True, "a surname alone, asked who")
        names = {w for w in set(around) & _names(long.text) if not any(_derived(w, q) for q in asked)}
        if len("".join(short.words)) < 2 or after == "s" or any(w.isdigit() for w in around) or names:
            return Ruling(None, "one answer inside a longer name")
        return Ruling(True, "one answer holds the other, with no name around it")
    if len(short.words) == 1 and len(short.words[0]) >= 2 and short.words[0] == _initials(long.words):
        return Ruling(True, "initials of the other answer")
    ca, cb = ({w for w in k.words if w not in _FUNCTION} for k in (ka, kb))
    if not ca or not cb or max(len(ca), len(cb)) > 4:
        return Ruling(None, "no rule decides")
    if ka.words[-1] == kb.words[-1] and _initials_of(ka.words) and _initials_of(kb.words) \
            and _initials_of(ka.words) != _initials_of(kb.words):
        return Ruling(False, "different initials")
    if ca & cb:
        if _own(ka, cb) and _own(kb, ca):
            return Ruling(False, "different names that share a word")
        return Ruling(None, "one name inside another")
    if max(len(ka.text), len(kb.text)) <= 80 and \
            difflib.SequenceMatcher(None, " ".join(ka.words), " ".join(kb.words)).ratio() >= 0.8:
        return Ruling(None, "spelled alike")
    if similarity is not None and similarity(ka.text, kb.text) >= DIFFERENT_BELOW:
        return Ruling(None, "different words, similar meaning")
    return Ruling(False, "different words")


def _derived(a: str, b: str) -> bool:
    """One word derived from the other, not the same word ("japanese", "japan"; not "state", "states")."""
    return a != b and min(len(a), len(b)) >= 4 and (a.startswith(b[:5]) or b.startswith(a[:5]))


def _full_name(text: str) -> bool:
    """Two to four words, each capitalised but a particle ("Vincent van Gogh", "George H. W. Bush")."""
    parts = text.replace(".", ". ").split()
    return 2 <= len(parts) <= 5 and all(p[:1].isupper() or p.lower() in _PARTICLES | {"van", "von", "der"}
                                        for p in parts)


def _initials(tokens: tuple[str, ...]) -> str:
    return "".join(w[0] for w in tokens if w not in _FUNCTION)


_PARTICLES = {"da", "de", "di", "du", "la", "le", "el", "al", "of"}


def _initials_of(tokens: tuple[str, ...]) -> set[str]:
    """The middle initials of a name ("george hw bush" -> {"hw"})."""
    return {w for w in tokens[1:-1] if len(w) <= 2 and w.isalpha() and w not in _PARTICLES | _FUNCTION}


def _own(k: Kept, other: set[str]) -> set[str]:
    """k's name words (or, for an answer in lower case, its words) that the other answer lacks: an initial
    standing for one of the other's words ("j" for "john"), "Jr.", and a word spelled alike aside."""
    mine = _names(k.text) if k.text != k.text.lower() else {w for w in k.words if w not in _FUNCTION}
    firsts = {w[0] for w in other}
    return {w for w in mine - other - _SUFFIXES if not (len(w) <= 2 and set(w) <= firsts) and not w.isdigit()
            and not any(difflib.SequenceMatcher(None, w[:40], o[:40]).ratio() >= 0.8 for o in other)}  # a typo
