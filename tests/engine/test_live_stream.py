"""The app's live stream of a debate (serving/live.py) when the visitor leaves: the page's generator closed or its
task cancelled while the model is busy cancels the debate, and the run is saved as cancelled with the rounds it
finished. A scripted backend whose debate round hangs until cancelled."""
from __future__ import annotations

import asyncio
import dataclasses

import pytest

from r2mad.engine.resources import Given
from r2mad.engine.service import RunRequest
from r2mad.runs.store import RunStore
from r2mad.serving.live import LiveRun, stream
from r2mad.settings.config import DebateSettings
from tests.helpers import PLANET_MCQ, HangsAfterRound0, agent_of


@pytest.mark.parametrize("leaving", ["closed", "cancelled"])
def test_a_visitor_who_leaves_cancels_the_debate_and_it_is_saved_as_cancelled(tmp_path, leaving):
    backend = HangsAfterRound0(lambda m: f"I pick (({'BA'[agent_of(m)]}))")
    settings = dataclasses.replace(DebateSettings(), seed=1, agents=2, rounds=3, early_stop=False)
    live = LiveRun(RunRequest(PLANET_MCQ, ("mad",), settings, "scripted", source="app"), RunStore(tmp_path / "r.db"))

    async def page(shown):
        async for _ in shown:  # a tick every 10 ms while the model is busy
            if leaving == "closed" and backend.hanging.is_set():  # both agents' round-1 calls under way
                return  # the page goes; its generator is closed after it

    async def main():
        shown = stream(live, Given(backend), tick_s=0.01)
        visit = asyncio.create_task(page(shown))
        await asyncio.wait_for(backend.hanging.wait(), 10)
        if leaving == "cancelled":
            visit.cancel()  # the page's task, waiting for what comes next
            with pytest.raises(asyncio.CancelledError):
                await visit
        else:
            await visit
            await shown.aclose()
        return backend.stopped  # counted before the stream let go: it waits for the debate to stop

    assert asyncio.run(main()) == 2
    record = live.store.get_run(live.run_ids["mad"])
    assert (record.status, record.rounds) == ("cancelled", 1)  # round 0 kept; round 1 never finished
    assert [len(r.turns) for r in record.transcript.finished().rounds] == [2]
