"""Progress with a reason on a long wait: the round, the calls and the seconds, and, when the shared model runs
other debates too, "N debates share the model; a round takes about T s" (T from the debate's own rounds)."""
from r2mad.serving.admission import Admission
from r2mad.serving.line import EMBEDDED, REMOTE, round_seconds, sharing_words
from r2mad.types import AgentTurn, Answer, Round, Task, Transcript
from r2mad.ui.render.states import running_words

TASK = Task("math", "What is 12 + 30?", gold="42")


def turn(agent, rnd, start, end):
    return AgentTurn(agent, rnd, "p", (), "((42))", Answer("42", "double_paren"), 10, 5, end - start, start, end)


def debate(rounds_planned=3):
    r0 = Round(0, (turn(0, 0, 100.0, 112.0), turn(1, 0, 100.0, 120.0)), 1.0)  # 20 s
    r1 = Round(1, (turn(0, 1, 121.0, 140.0), turn(1, 1, 121.0, 151.0)), 1.0)  # 30 s
    r2 = Round(2, (turn(0, 2, 152.0, 160.0),), 1.0, details={"running": True})
    return Transcript(TASK, "mad", "b", {"rounds": rounds_planned}, (r0, r1, r2), Answer("42", "boxed"), None,
                      "running")


def test_a_round_takes_the_mean_of_the_debates_own_finished_rounds():
    assert round_seconds(debate()) == 25.0


def test_a_busy_model_says_how_many_debates_share_it_and_how_long_a_round_takes():
    line = Admission({EMBEDDED: 3, REMOTE: 2}, max_waiting=4)
    mine = line.enter("a", EMBEDDED)
    assert sharing_words(line, EMBEDDED, debate()) == ""  # alone: nothing to explain
    line.enter("b", EMBEDDED), line.enter("c", EMBEDDED)
    assert sharing_words(line, EMBEDDED, debate()) == "3 debates share the model; a round takes about 25 s."
    assert sharing_words(line, REMOTE, debate()) == ""  # a remote backbone shares no CPU
    line.leave(mine)
    assert sharing_words(line, EMBEDDED, None) == "2 debates share the model."


def test_the_running_words_count_rounds_from_zero_calls_and_seconds():
    assert running_words(debate(), 61.4) == "round 2 of rounds 0–2 · 5 calls · 61 s"
