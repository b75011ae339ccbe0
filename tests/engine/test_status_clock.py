"""The running status line counts real seconds since the visitor pressed Run: the loop's own seconds move
only when it hands over a transcript (and start after the wait in line), so the page used to show a clock
that stood still during a long model call. Now the stream wakes the page on a tick, and the status line
shows the seconds it is given while the debate runs, the loop's own once it has ended."""
from __future__ import annotations

import asyncio
import dataclasses

from r2mad.engine.resources import Given
from r2mad.engine.service import RunRequest
from r2mad.runs.store import RunStore
from r2mad.serving.live import LiveRun, stream
from r2mad.settings.config import load_config
from r2mad.types import Answer, Task, Transcript
from r2mad.ui.views import status_line
from tests.scripted import ScriptedBackend

TASK = Task("mcq", "Which?", (("A", "one"), ("B", "two")), "B", "t1")


def transcript(status: str, seconds: float = 3.25) -> Transcript:
    return Transcript(TASK, "mad", "scripted", {"rounds": 2}, (), Answer(None, "abstained"), None, status, (),
                      0.0, seconds)


def test_a_running_debate_shows_the_seconds_since_run_was_pressed_and_a_finished_one_its_own():
    assert "· 42 s so far" in status_line({"mad": transcript("running")}, elapsed=42.4)
    assert "3.2 s" in status_line({"mad": transcript("running")})  # no clock given: the loop's seconds
    done = dataclasses.replace(transcript("done"), final=Answer("B", "double_paren"), correct=True)
    assert "· 3.2 s" in status_line({"mad": done}, elapsed=42.4) and "so far" not in status_line({"mad": done})
    both = {"mad": transcript("running"), "cot": transcript("running")}
    assert "running… (7 s so far)" in status_line(both, elapsed=7.2)


def test_the_stream_wakes_the_page_while_a_model_call_takes_long(tmp_path):
    backend = ScriptedBackend(lambda messages: "I pick ((B))", delay_s=0.3)
    settings = load_config().settings.replace(agents=1, rounds=1)
    live = LiveRun(RunRequest(TASK, ("cot",), settings, "scripted", source="app"), RunStore(tmp_path / "runs.sqlite"))

    async def consume():
        return [shown async for shown in stream(live, Given(backend), tick_s=0.02)]

    shown = asyncio.run(consume())
    assert {} in shown  # woken without news while the call ran: only the clock moves
    assert shown[-1]["cot"].status == "done"  # and the debate still ends as before
