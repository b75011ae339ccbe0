"""How two questions' wordings compare for the leak guard (evaluation/leakage.py), beside their embedder's
similarity, which cannot tell "blue and yellow" from "red and yellow" nor read another language well: the figures
a question holds, whether it is in English, and whether one content word of it was swapped for an unlike one."""
from __future__ import annotations

import difflib
import re
from collections import Counter

from r2mad.grading.kinds.spelling import normalise, normalise_case

_ENGLISH = frozenset("a an the of is are was were what which who how many much in on to for and do does did their "
                     "its it there this that with by from at as be has have had".split())
_FOREIGN = frozenset("il la le les des du est et une der die das ist und ein eine el los las es y que cual cuantos "
                      "cuantas cuanto una uno por para en de di che ci sono quanti quale gli nel nella nelle loro cosa "
                      "chi os em ha um uma quem qual wie viele welcher wer dans sur del della con per al".split())
# common words of the languages visitors translate into, accents dropped (as normalise_case leaves them)
_OTHER = _ENGLISH | frozenset("when where why you your i we he she they his her them my our me us can could would "
                              "should will than then so if or not no".split())
_ORDINALS = {"first": "1st", "second": "2nd", "third": "3rd", "fourth": "4th", "fifth": "5th", "sixth": "6th",
             "seventh": "7th", "eighth": "8th", "ninth": "9th", "tenth": "10th", "twice": "x2", "double": "x2",
             "triple": "x3", "quarter": "0.25", "half": "0.5"}
_OPERATORS = re.compile(r"[+*^=<>×÷√%]|(?<![\w-])-(?=\s*\d)|\s-\s|(?<=[\d\sa-z])/(?=\s*[\da-z(])(?<!km/)(?<!m/)")
_SAID = ((r"\bdivided by\b", " / "), (r"\b(?:equals|is equal to)\b", " = "), (r"\bplus\b", " + "),
         (r"\bminus\b", " - "), (r"\b(?:multiplied by)\b", " * "))  # operators in words
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def is_english(text: str) -> bool:
    """Whether at least 15 % of its words are common English words (a translation has next to none), and more of
    them than common French, Italian, Spanish, Portuguese or German ones ("Quanti litri ci sono in …"); a
    question with neither ("Largest planet?") by its letters: English when they are all a to z."""
    low = normalise_case(text)
    words = re.findall(r"[a-zà-ÿ']+", low)
    english, foreign = sum(w in _ENGLISH for w in words), sum(w in _FOREIGN for w in words)
    if not english and not foreign:
        letters = [c for c in text.casefold() if c.isalpha()]
        return bool(letters) and all("a" <= c <= "z" for c in letters)
    return english / len(words) >= 0.15 and english > foreign


def _points(text: str) -> str:
    """1,000 as 1000 and a decimal comma as a point: 4,75 -> 4.75."""
    return re.sub(r"(?<=\d),(?=\d)", ".", re.sub(r"(?<=\d),(?=\d{3}\b)", "", text))


def digits(text: str) -> Counter:
    """The numbers written in digits and the operators, as a multiset (a decimal comma read as a point)."""
    text = _points(text)
    operators = Counter(op.strip() for op in _OPERATORS.findall(text))
    return operators + Counter(str(float(x)) for x in _NUMBER.findall(text))


def figures(text: str, english: bool = True) -> Counter:
    """The numbers and operators a question holds, as a multiset: digits (a decimal comma read as a point, 1,000
    as 1000); in English also number words, ordinals and halves ("an hour and a half" is 1.5, "two and a half"
    2.5), but not "one", which is as often a pronoun."""
    if not english:
        return digits(text)
    text = _points(text)
    for said, operator in _SAID:
        text = re.sub(said, operator, text, flags=re.IGNORECASE)
    found = Counter(op.strip() for op in _OPERATORS.findall(text))
    low = normalise_case(text)
    low = re.sub(r"\b(?:an?|one) (\w+) and a half\b", r"1.5 \1", low)
    low = re.sub(r"\b([a-z]+(?:-[a-z]+)?) and a half\b", r"\1 andahalf", low)
    low = re.sub(r"\bone\b(?! (?:hundred|thousand|million))", " ", low)
    words = re.sub(r"\b(\d+) point (\d+)\b", r"\1.\2", normalise(low)).split()  # three point six: 3.6
    numbers: list[str] = []
    for word, following in zip(words, words[1:] + [""]):
        if word == "andahalf" and numbers and _NUMBER.fullmatch(numbers[-1]):  # "two and a half": 2.5
            numbers[-1] = str(float(numbers[-1]) + 0.5)
        elif _NUMBER.fullmatch(word) and following == "times":  # "3 times as old": the x3 of "triple"
            numbers.append(f"x{float(word):g}")
        elif _NUMBER.fullmatch(word):
            numbers.append(word)
        elif word in _ORDINALS:
            numbers.append(_ORDINALS[word])
    return found + Counter(str(float(n)) if _NUMBER.fullmatch(n) else n for n in numbers)


UNSAID = {"=", "1.0"}  # "equals" for "gives", and "1 pound" for "one pound" (which figures leaves out)


def same_figures(a: Counter, b: Counter) -> bool:
    """Whether two questions hold the same figures, each counted once, "=" and 1 left out: "two numbers that follow
    each other" holds the 2 of "the larger of the two", and "x divided by 4 equals 2.5" states what "a number
    divided by four gives two and a half" does."""
    return set(a) - UNSAID == set(b) - UNSAID


def as_numbers(found: Counter) -> Counter:
    """Figures with ordinals and multiples read as their numbers (3rd and x3 as 3): what a translation's digits
    can be compared with."""
    return Counter(str(float(re.sub(r"^x|(?<=\d)(?:st|nd|rd|th)$", "", f))) if re.search(r"\d", f) else f
                   for f in found.elements())


def content_words(text: str) -> set[str]:
    return {w for w in normalise(text).split() if w not in _OTHER and not _NUMBER.fullmatch(w)}


def _named(word: str, text: str) -> bool:
    return re.search(rf"\b{re.escape(word.capitalize())}\b", text) is not None


def one_word_swapped(a: str, b: str) -> bool:
    """Whether the two differ by one content word each, unlike in spelling, with two or more in common: "red and
    yellow" for "blue and yellow", "silver" for "gold" (another question), but not "walked" for "walk", nor a
    name for a common noun ("Priya" for "a student": the same question about someone else)."""
    mine, theirs = content_words(a), content_words(b)
    if len(mine - theirs) != 1 or len(theirs - mine) != 1 or len(mine & theirs) < 2:
        return False
    [x], [y] = mine - theirs, theirs - mine
    if _named(x, a) != _named(y, b):
        return False
    return difflib.SequenceMatcher(None, x, y).ratio() < 0.6
