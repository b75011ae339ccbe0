"""What an answer kind is: how a task is shown and its answer asked for, how an answer is read from a
reply, when two answers agree, and — the same for every kind — how a round's answers are grouped, how
much they agree (consensus) and which one a vote picks. Not the registry (kinds/__init__.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from r2mad.types import UNPARSED, Answer, AnswerShape, Judged, Task


class AnswerKind:
    """One kind of answer. A kind overrides `instruction`, `extract` and `same`; the grouping, consensus,
    vote and scoring below follow from `same` (a kind whose agreement is not exact may override them)."""
    name = ""
    label = ""  # what the app's chip and the CLI say: "short answer"
    agree = ""  # one line: what "the agents agree" means for this kind
    uses_meaning = False  # compares answers with the embedder (its work runs off the event loop)
    names_dissent = False  # the debate closes with a notice naming the groups the vote did not pick

    # --- showing the task ----------------------------------------------------------------------

    def show(self, task: Task) -> str:
        """The question, then one "(A) text" line per option."""
        return "\n".join([task.question, *(f"({letter}) {text}" for letter, text in task.options)])

    def instruction(self, task: Task) -> str:
        """How the agent should end its reply (a description of the form: small models copy samples)."""
        raise NotImplementedError

    def final_request(self, task: Task) -> str:
        """The answer guard's follow-up: the answer alone, in this kind's form."""
        return "Give only your final answer now, on one line, and nothing else."

    def shape(self, task: Task) -> AnswerShape | None:
        """The answers a backend may be held to when the guard asks again (None: the prompt alone)."""
        return None

    guard_tokens = 48  # the guard's budget for the answer alone

    def written(self, value: str) -> str:
        """A reply that commits to `value` and nothing else, in this kind's form (a fork's forced answer)."""
        return f"Final answer: {value}"

    def checked(self, value: str, task: Task) -> str:
        """`value` as this kind spells a reference or forced answer; ValueError (one sentence naming the fix)
        when it is not one."""
        value = value.strip()
        if not value:
            raise ValueError("The answer is empty; write one or leave it out.")
        return value

    # --- reading and comparing -------------------------------------------------------------------

    strict: frozenset[str] = frozenset()  # the `how`s of the strict reading (the form the prompt asked for)

    def extract(self, text: str, task: Task) -> Answer:
        """The answer the reply (reasoning already removed) commits to, or UNPARSED: the strict reading first,
        then the flexible one; `how` says which rule found it."""
        raise NotImplementedError

    def reading(self, answer: Answer) -> str:
        """"strict" (the asked-for form), "flexible" (another form), or "" (no answer read, a guard's or a fork's)."""
        if not answer.parsed or answer.how in ("guarded", "forced", "abstained"):
            return ""
        return "strict" if answer.how in self.strict else "flexible"

    def rule(self, a: str, b: str, question: str = "") -> Ruling:
        """The deterministic rules on two parsed values (answers to `question`): same, different, or undecided
        (same=None). Symmetric."""
        return SAME_SPELLING if a == b else Ruling(False, "different")

    def ruling(self, a: str, b: str, judged: Sequence[Judged] = (), question: str = "") -> Ruling:
        """The one equivalence: the rules; what they leave undecided, a judge's recorded grade; else undecided."""
        x, y = sorted((a, b))
        found = self.rule(x, y, question)
        if found.same is not None:
            return found
        judge = next((j for j in judged if (j.a, j.b) == (x, y)), None)
        if judge is not None:
            return Ruling(judge.same, judge.how)
        return Ruling(None, f"undecided: no judge ({found.how})")

    def same(self, a: str, b: str, question: str = "") -> bool:
        """Whether two parsed answer values are decided the same by the rules alone."""
        return self.rule(*sorted((a, b)), question).same is True

    def key(self, value: str) -> str:
        """A canonical spelling of a value (what detectors and counts group by when they need a string)."""
        return value.strip()

    def settle(self, values: Sequence[str]) -> list[str]:
        """Slow work on these values (and the gold) done at once, in a worker thread, so that `rule` on them
        then returns at once; notices for pairs that could not be checked. Default: nothing to do."""
        return []

    def judge_both_ways(self) -> bool:
        """Whether a judge decides a pair by asking in both directions (each must entail the other)."""
        return False

    # --- a round's answers to one question (`judged`: a judge's verdicts on its undecided pairs) -----

    def agrees(self, a: Answer, b: Answer, judged: Sequence[Judged] = (), question: str = "") -> bool:
        """Decided the same (an undecided pair never agrees)."""
        return a.parsed and b.parsed and self.ruling(a.value, b.value, judged, question).same is True

    def groups(self, answers: Sequence[Answer], judged: Sequence[Judged] = (), question: str = "") -> list[int | None]:
        """For each answer, the index of the answer that leads its group (None for UNPARSED): each
        parsed answer joins the earliest group whose leader it agrees with, else leads a new one."""
        leaders: list[int] = []
        out: list[int | None] = []
        for i, a in enumerate(answers):
            if not a.parsed:
                out.append(None)
                continue
            leader = next((j for j in leaders if self.agrees(answers[j], a, judged, question)), None)
            if leader is None:
                leaders.append(leader := i)
            out.append(leader)
        return out

    def group_sizes(self, answers: Sequence[Answer], judged: Sequence[Judged] = (), question: str = ""
                    ) -> dict[int, int]:
        """{leader index: members}, leaders in agent order."""
        sizes: dict[int, int] = {}
        for leader in self.groups(answers, judged, question):
            if leader is not None:
                sizes[leader] = sizes.get(leader, 0) + 1
        return sizes

    def consensus(self, answers: Sequence[Answer], judged: Sequence[Judged] = (), question: str = "") -> float:
        """Cons(Z): the largest group's share of all n answers (UNPARSED counts in n, agrees with none)."""
        sizes = self.group_sizes(answers, judged, question)
        return max(sizes.values()) / len(answers) if sizes else 0.0

    def winner(self, answers: Sequence[Answer], judged: Sequence[Judged] = (), question: str = "") -> int | None:
        """The index of the largest group's leader; a tie goes to the group whose leader is the earliest
        agent (every group's earliest member is its leader). None when every answer is UNPARSED."""
        sizes = self.group_sizes(answers, judged, question)
        best = max(sizes.values(), default=0)
        return next((i for i, n in sizes.items() if n == best), None)

    def vote(self, answers: Sequence[Answer], judged: Sequence[Judged] = (), question: str = "") -> Answer:
        """The plurality vote: the winner's answer. All UNPARSED -> UNPARSED: it never wins."""
        won = self.winner(answers, judged, question)
        return UNPARSED if won is None else answers[won]

    def unanimous(self, answers: Sequence[Answer], judged: Sequence[Judged] = (), question: str = "") -> bool:
        """Every answer decided the same as the first (undecided is not agreement: no early stop on it)."""
        return bool(answers) and all(self.agrees(answers[0], a, judged, question) for a in answers)

    # --- scoring ---------------------------------------------------------------------------------

    def references(self, task: Task) -> list[str]:
        """The reference answers a reply may match (the gold, or its aliases); [] without a gold."""
        return [] if task.gold is None else [task.gold]

    def grade(self, answer: Answer, task: Task, judged: Sequence[Judged] = ()) -> Ruling | None:
        """The answer against the task's references (None without one): same as any reference is correct,
        different from all is wrong, otherwise undecided. UNPARSED is never correct."""
        references = self.references(task)
        if not references:
            return None
        if not answer.parsed:
            return Ruling(False, "no answer")
        rulings = [self.ruling(answer.value, r, judged, task.question) for r in references]
        return (next((r for r in rulings if r.same), None) or next((r for r in rulings if r.same is None), None)
                or rulings[0])

    def correct(self, answer: Answer, task: Task, judged: Sequence[Judged] = ()) -> bool | None:
        """True or False as graded; None without a reference or when undecided."""
        found = self.grade(answer, task, judged)
        return None if found is None else found.same


# the flexible readings that take a reply's closing words as its conclusion: void when the reply was cut at its
# token limit (it never came to one)
CLOSING_WORDS = frozenset({"last_number", "last_expression", "last_sentence", "conclusion", "bracketed_letter",
                           "option_named", "option_text"})


@dataclass(frozen=True)
class Ruling:
    """Whether two answers are the same (None: undecided) and how that was decided, in words a person reads:
    "same after normalising", "different numbers", "judge: CORRECT", "undecided: no judge"."""
    same: bool | None
    how: str


SAME_SPELLING = Ruling(True, "same after normalising")
