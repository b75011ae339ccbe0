"""Answers that would stall sympy or a quadratic scan: refused, bounded in a killable child, read in one
pass, and never on the event loop, which keeps serving other coroutines meanwhile."""
import asyncio
import dataclasses
import random
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from r2mad.debate import Debate
from r2mad.grading import mathcheck, mathworker
from r2mad.grading.answers import extract_math
from r2mad.grading.mathcheck import balanced, check_math, too_big
from r2mad.methods import make_method
from r2mad.prompts.common import PERSONAS
from r2mad.settings.config import DebateSettings
from r2mad.types import UNPARSED, Answer, Task
from tests.scripted import ScriptedBackend, persona_of

HUGE = r"\binom{10^{9}}{500000}"
MATH = Task("math", "How many ways are there to choose 500000 of 10^9 items?", (), "5", "m1")
SHIFT = Task("math", "What is one more than x?", (), None, "m2")
SYSTEMS = [text for _, text in PERSONAS["math"]]


def sleep_then_agree(a: str, b: str) -> bool:
    """Stands in for a sympy computation that would not finish (runs in the checker child)."""
    time.sleep(60)
    return True


def spin(a: str, b: str) -> bool:
    """Stands in for a sympy computation that computes forever."""
    while True:
        pass


def add(a: int, b: int) -> int:
    return a + b


def divide(a: int, b: int) -> float:
    return a / b


@pytest.fixture
def fresh_checks():
    check_math.cache_clear()
    yield
    check_math.cache_clear()


def debate_with_ticker(task: Task, replies: list[str]):
    """Run a one-round math debate whose agent i replies `replies[i]`, with a ticker on the same loop;
    (transcript, number of ticks while the debate ran)."""
    backend = ScriptedBackend(lambda m: replies[SYSTEMS.index(persona_of(m))])
    settings = dataclasses.replace(DebateSettings(), seed=1, rounds=1, deadline_s=120)

    async def main():
        ticks, done = [], asyncio.Event()

        async def ticker():
            while not done.is_set():
                ticks.append(time.monotonic())
                await asyncio.sleep(0.05)

        ticking = asyncio.create_task(ticker())
        try:  # a hang guard only: the deadline inside the debate is what must end it
            t = await asyncio.wait_for(Debate(backend, make_method("mad", settings)).run(task), 300)
        finally:
            done.set()
            await ticking
        return t, len(ticks)
    return asyncio.run(main())


@pytest.mark.parametrize("answer", [HUGE, r"\dbinom{2000000}{1000}", r"{100000 \choose 3}", "C(100000, 5000)",
                                    "binomial(10**9, 3)", "100000!", "(10^{9})!", r"{10^9}!",
                                    r"\binom{\binom{30}{15}}{\binom{20}{10}}", r"{{30 \choose 15} \choose 9}"])
def test_huge_binomials_and_factorials_are_refused_by_their_text(answer):
    assert too_big(answer)


@pytest.mark.parametrize("answer", [r"\binom{30}{15}", r"\tbinom{10}{3}\cdot 2^{5}", r"{10 \choose 3}",
                                    "C(5,2)+10^{3}", "5!", "(3+4)!", r"\frac{1}{2}", r"\binom{n}{k}"])
def test_small_binomials_and_factorials_are_checked(answer):
    assert not too_big(answer)


def test_a_huge_binomial_is_never_parsed(fresh_checks, monkeypatch):
    def must_not_run(*args, **kwargs):
        raise AssertionError("the parser was called")
    monkeypatch.setattr(mathcheck, "_math_verify", must_not_run)
    monkeypatch.setattr(mathworker, "bounded", must_not_run)
    equal, how, notice = check_math(HUGE, "5")
    assert equal is None and how == "too large to check"
    assert "too large to check" in notice and HUGE[:20] in notice and "left undecided" in notice


def test_a_small_binomial_is_still_judged(fresh_checks):
    assert check_math(r"\binom{30}{15}", "155117520") == (True, "equal as math (math-verify)", None)


@pytest.mark.slow  # seconds by design (worker processes, deadlines, threads)
def test_a_check_past_its_bound_is_undecided_and_the_checker_recovers(fresh_checks, monkeypatch):
    monkeypatch.setattr(mathcheck, "_SLOW_CHECK", sleep_then_agree)
    monkeypatch.setattr(mathworker, "CHECK_BOUND_S", 1.0)
    monkeypatch.setattr(mathworker, "WALL_SLACK_S", 0.0)  # a sleeping check is ended by the wall clock
    equal, how, notice = check_math("x+1", "1+x")
    assert equal is None and how == "the check ran past its bound"
    assert "'1+x'" in notice and "ran past 1 s" in notice and "left undecided" in notice
    monkeypatch.undo()
    check_math.cache_clear()
    assert check_math("x+1", "1+x") == (True, "equal as math (math-verify)", None)  # a fresh child took over


@pytest.mark.slow  # seconds by design (worker processes, deadlines, threads)
def test_the_checker_runs_importable_functions_and_survives_their_errors(monkeypatch):
    assert mathworker.bounded(add, 2, 3) == 5
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        mathworker.bounded(divide, 1, 0)
    with monkeypatch.context() as patch, pytest.raises(mathworker.Overrun, match="ran past 0.5 s"):
        patch.setattr(mathworker, "WALL_SLACK_S", 0.0)  # a sleeping check is ended by the wall clock
        mathworker.bounded(sleep_then_agree, "a", "b", bound_s=0.5)
    assert mathworker.bounded(add, 4, 5) == 9


@pytest.mark.slow  # seconds by design (worker processes, deadlines, threads)
def test_a_computing_check_is_ended_by_its_cpu_time_not_the_wall_clock(monkeypatch):
    monkeypatch.setattr(mathworker, "WALL_SLACK_S", 600.0)  # the wall clock would wait; the CPU bound does not
    with pytest.raises(mathworker.Overrun, match="used more than 1 s of CPU"):
        mathworker.bounded(spin, "a", "b", bound_s=1.0)
    assert mathworker.bounded(add, 4, 5) == 9  # a fresh child took over


def test_checks_from_many_threads_each_get_their_verdict(fresh_checks, monkeypatch):
    monkeypatch.setattr(mathworker, "CHECK_BOUND_S", 60.0)  # judged, however loaded the machine
    pairs = [(f"(x+{i})^{{2}}", f"x^2+{2 * i}x+{i * i}") for i in range(1, 9)]
    pairs += [(f"(x+{i})^{{2}}", f"x^2+{2 * i}x+{i * i + 1}") for i in range(1, 9)]
    with ThreadPoolExecutor(6) as pool:
        verdicts = list(pool.map(lambda p: check_math(*p)[0], pairs))
    assert verdicts == [True] * 8 + [False] * 8


def test_a_huge_binomial_answer_ends_the_debate_with_a_notice(fresh_checks):
    t, _ = debate_with_ticker(MATH, [rf"It is \boxed{{{HUGE}}}.", r"\boxed{5}", r"\boxed{5}"])
    assert t.status == "done" and str(t.final) == "5" and t.correct is True
    assert t.rounds[0].consensus == pytest.approx(2 / 3)
    assert any("too large to check" in n for n in t.notices)


def test_a_slow_check_leaves_the_loop_ticking_and_ends_with_a_notice(fresh_checks, monkeypatch):
    monkeypatch.setattr(mathcheck, "_SLOW_CHECK", sleep_then_agree)
    monkeypatch.setattr(mathworker, "CHECK_BOUND_S", 1.0)
    monkeypatch.setattr(mathworker, "WALL_SLACK_S", 0.0)
    t, ticks = debate_with_ticker(SHIFT, [r"\boxed{x+1}", r"\boxed{1+x}", r"\boxed{1+x}"])
    assert t.status == "done" and str(t.final) == "1+x"
    assert any("ran past 1 s" in n and "left undecided" in n for n in t.notices)
    # the loop went on while the check waited a second; had it waited itself, the ticker would have
    # ticked about twice (before and after) instead of every 0.05 s
    assert ticks >= 10


def old_extract_math(text: str):
    """extract_math as it was (a balanced() scan from every box), the oracle for the one-pass reading."""
    boxes = []
    for m in extract_math.__globals__["_BOX"].finditer(text):
        content = m.group(1) if m.group(1) is not None else balanced(text, m.end())
        if content and content.strip().rstrip(".,"):
            boxes.append(content.strip() if m.group(1) is None else content.rstrip(".,"))
    return boxes[-1] if boxes else None


def test_the_one_pass_reading_finds_what_the_box_by_box_scan_found():
    pieces = ["\\boxed{", "\\fbox{", "{", "}", "\\{", "\\}", "\\\\", "x", "1", " ", "\\frac{1}{2}", "\\boxed 7"]
    rng = random.Random(25)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 14)))
        expected = old_extract_math(text)
        if expected is not None:
            assert extract_math(text) == Answer(expected, "boxed"), text


def test_a_long_reply_of_unclosed_boxes_is_read_at_once():
    with ThreadPoolExecutor(1) as pool:  # a hang guard only
        assert pool.submit(extract_math, "\\boxed{" * 14_300).result(timeout=60) == UNPARSED
        tail = pool.submit(extract_math, "\\boxed{" * 14_300 + " so \\boxed{42}").result(timeout=60)
        phrases = pool.submit(extract_math, "The answer is $" * 7000).result(timeout=60)
    assert tail == Answer("42", "boxed")
    assert phrases.how == "answer_is"
