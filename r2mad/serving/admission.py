"""Fair admission of debates to a shared machine: a few slots per lane (e.g. the embedded model's CPU), a
bounded line in front of them that advances round-robin across visitors, caps per visitor, admission by time
(a debate starts only when its rounds, at the measured pace of a round with the debates beside it, end within
its time limit), a place in line and an estimate from measured durations, and one-sentence refusals. asyncio
only; no Gradio, no I/O. Not a scheduler of model calls (the backends batch those); it decides which debates
run at all."""
from __future__ import annotations

import asyncio
import heapq
import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable


class Refused(Exception):
    """A debate not admitted; the message is the sentence to show."""


@dataclass(eq=False)
class Ticket:
    """One debate's entry: waiting in `lane` until admitted, then running until it leaves."""
    visitor: str
    lane: str
    entered: float
    admitted_at: float | None = None
    left: bool = False
    rounds: int = 0  # rounds the debate asks for (round 0 counted); 0: unknown, admitted by count alone
    deadline_s: float | None = None  # its time limit: it starts only when its rounds are expected to end by then
    measured: bool = False  # a caller's note that the debate ran to its end (see serving/line.py in_line)
    rounds_run: int = 0  # a caller's note of the rounds it finished so far: its own pace, then a pace per round
    agents: int = 1  # agents taking a turn each round (1 when not known: the round as a whole)
    shared_s: float = 0.0  # the sum over its running time of the debates running in its lane (itself counted)
    _admitted: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def running(self) -> bool:
        return self.admitted_at is not None and not self.left

    @property
    def waiting(self) -> bool:
        return self.admitted_at is None and not self.left

    async def admitted(self) -> None:
        """Return once the debate may run."""
        await self._admitted.wait()


@dataclass
class _Lane:
    slots: int
    running: list[Ticket] = field(default_factory=list)
    rotation: deque[str] = field(default_factory=deque)  # visitors with someone waiting, whose turn is next
    waiting: dict[str, deque[Ticket]] = field(default_factory=dict)
    durations: deque[float] = field(default_factory=lambda: deque(maxlen=10))  # recent admitted debates, s
    turn_s: deque[float] = field(default_factory=lambda: deque(maxlen=10))  # s per agent a round, a debate alone
    ran: deque[float] = field(default_factory=lambda: deque(maxlen=10))  # share of their rounds debates ran
    since: float = 0.0  # when the running set last changed (shared_s is summed up to here)

    def order(self) -> list[Ticket]:
        """The waiting tickets in the order they will be admitted: one per visitor per turn, visitors in
        rotation order (a visitor served goes to the back), so many entries of one never starve another."""
        queues = [self.waiting[v] for v in self.rotation]
        depth = max((len(q) for q in queues), default=0)
        return [q[k] for k in range(depth) for q in queues if k < len(q)]


class Admission:
    """`lanes`: slots per lane (debates running at once); `max_waiting`: the line's length over all lanes;
    `per_visitor`: debates one visitor may have running or waiting; `waiting_per_visitor`: of which waiting.
    Call every method from the event loop the debates run on."""

    def __init__(self, lanes: dict[str, int], *, max_waiting: int, per_visitor: int = 2,
                 waiting_per_visitor: int = 1, clock: Callable[[], float] = time.monotonic):
        self.lanes = {name: _Lane(max(1, int(slots))) for name, slots in lanes.items()}
        self.max_waiting, self.per_visitor = max_waiting, per_visitor
        self.waiting_per_visitor, self.clock = waiting_per_visitor, clock

    @property
    def capacity(self) -> int:
        """Debates admitted or waiting at most: each needs a worker of the web framework to wait in."""
        return sum(lane.slots for lane in self.lanes.values()) + self.max_waiting

    def waiting_count(self, lane: str | None = None) -> int:
        lanes = [self.lanes[lane]] if lane else self.lanes.values()
        return sum(len(q) for x in lanes for q in x.waiting.values())

    def running_count(self, lane: str) -> int:
        return len(self.lanes[lane].running)

    def _mine(self, visitor: str) -> tuple[list[Ticket], list[Ticket]]:
        running = [t for lane in self.lanes.values() for t in lane.running if t.visitor == visitor]
        waiting = [t for lane in self.lanes.values() for t in lane.waiting.get(visitor, ())]
        return running, waiting

    def enter(self, visitor: str, lane: str, *, rounds: int = 0, deadline_s: float | None = None,
              agents: int = 1) -> Ticket:
        """Admit a debate at once when a slot is free, nobody waits and its `rounds` end within `deadline_s`
        beside the debates running, else put it in line; raises Refused with the reason in one sentence when
        the visitor or the line is full, or when its rounds would not end in time even alone."""
        x = self.lanes[lane]
        running, waiting = self._mine(visitor)
        if waiting and len(waiting) >= self.waiting_per_visitor:
            place = min(self.place(t) for t in waiting)
            raise Refused(f"Your other debate is still waiting in line (place {place}); press Stop where it "
                          "runs to take it out of the line, or wait until it starts.")
        if len(running) + len(waiting) >= self.per_visitor:
            raise Refused(f"You already have {len(running) + len(waiting)} debates running or waiting, the most "
                          "one visitor may have here; press Stop on one or wait until one ends.")
        ticket = Ticket(visitor, lane, self.clock(), rounds=rounds, deadline_s=deadline_s, agents=max(1, agents))
        if not self.fits(ticket, 1):
            raise Refused(too_long(ticket, self.round_s(lane, agents=ticket.agents), self.round_s(lane)))
        if len(x.running) < x.slots and not x.rotation and self._may_start(x, ticket):
            self._admit(x, ticket)
            return ticket
        if self.waiting_count() >= self.max_waiting:
            raise Refused(f"The line is full ({self.max_waiting} debates waiting); try again in a few minutes.")
        if visitor not in x.waiting:
            x.waiting[visitor] = deque()
            x.rotation.append(visitor)
        x.waiting[visitor].append(ticket)
        return ticket

    def _admit(self, x: _Lane, ticket: Ticket) -> None:
        self._tally(x)
        ticket.admitted_at = self.clock()
        x.running.append(ticket)
        ticket._admitted.set()

    def _tally(self, x: _Lane) -> None:
        """Before the running set changes: add to each running debate's shared_s how many ran since `since`."""
        now = self.clock()
        for t in x.running:
            t.shared_s += (now - x.since) * len(x.running)
        x.since = now

    def _may_start(self, x: _Lane, ticket: Ticket) -> bool:
        """Whether the debate would end in time beside those running (alone, it always may start)."""
        return not x.running or self.fits(ticket, len(x.running) + 1)

    def _advance(self, x: _Lane) -> None:
        """Start debates from the head of the line while slots are free; a head that would not end in time
        beside the debates running holds the line (nobody passes it) until enough of them end."""
        while len(x.running) < x.slots and x.rotation:
            if not self._may_start(x, x.waiting[x.rotation[0]][0]):
                return
            visitor = x.rotation.popleft()
            queue = x.waiting[visitor]
            ticket = queue.popleft()
            if queue:
                x.rotation.append(visitor)
            else:
                del x.waiting[visitor]
            self._admit(x, ticket)

    def leave(self, ticket: Ticket, *, measured: bool = False) -> None:
        """Take a debate out: out of the line (Stop while waiting), or out of its slot when it ends; a
        debate that ran to its end (`measured`) adds its duration to the estimate. Leaving twice is a no-op."""
        if ticket.left:
            return
        ticket.left = True
        x = self.lanes[ticket.lane]
        if ticket.admitted_at is None:
            queue = x.waiting.get(ticket.visitor)
            if queue is not None and ticket in queue:
                queue.remove(ticket)
                if not queue:
                    del x.waiting[ticket.visitor]
                    x.rotation.remove(ticket.visitor)
            return
        self._tally(x)
        x.running.remove(ticket)
        if measured:
            took = self.clock() - ticket.admitted_at
            x.durations.append(took)
            if ticket.rounds_run and took > 0:  # its pace alone: a round's time over the debates beside it, per agent
                x.turn_s.append(took / ticket.rounds_run / max(1.0, ticket.shared_s / took) / ticket.agents)
            if ticket.rounds:  # early stops: the share of its rounds it ran
                x.ran.append(min(1.0, ticket.rounds_run / ticket.rounds))
        self._advance(x)

    def place(self, ticket: Ticket) -> int:
        """1 for the next debate to start; 0 once admitted (or gone)."""
        if not ticket.waiting:
            return 0
        return self.lanes[ticket.lane].order().index(ticket) + 1

    def held(self, ticket: Ticket) -> bool:
        """Whether this debate waits though a slot is free: at the head of the line, it would not end within
        its time limit beside the debates running (see _advance)."""
        x = self.lanes[ticket.lane]
        return ticket.waiting and len(x.running) < x.slots and self.place(ticket) == 1

    def mean_duration(self, lane: str) -> float | None:
        """The mean duration of the lane's recent debates that ran to their end; None before the first."""
        d = self.lanes[lane].durations
        return sum(d) / len(d) if d else None

    def round_s(self, lane: str, sharing: int = 1, agents: int = 1) -> float | None:
        """Seconds a round of `agents` takes with `sharing` debates running in the lane: the measured pace of an
        agent's turn alone times both (agents mostly take turns at the model, and debates share its time); None
        before a debate with known rounds ran to its end."""
        r = self.lanes[lane].turn_s
        return sum(r) / len(r) * sharing * agents if r else None

    def fits(self, ticket: Ticket, sharing: int) -> bool:
        """Whether all the debate's rounds, `sharing` debates running, end within its time limit (unknown: yes)."""
        took = self.round_s(ticket.lane, sharing, ticket.agents)
        return took is None or not ticket.rounds or ticket.deadline_s is None or \
            ticket.rounds * took <= ticket.deadline_s

    def expected_rounds(self, ticket: Ticket) -> float:
        """The rounds a debate is expected to run: those it asks for times the share recent debates in its lane
        ran (some stop early on agreement), at least those it finished and the one in progress."""
        ran = self.lanes[ticket.lane].ran
        share = sum(ran) / len(ran) if ran else 1.0
        return min(ticket.rounds, max(ticket.rounds * share, ticket.rounds_run + 1))

    def _duration(self, ticket: Ticket, sharing: int) -> float | None:
        """Its expected rounds at the measured pace, else the mean duration of recent debates; None without a
        measurement."""
        took = self.round_s(ticket.lane, sharing, ticket.agents)
        if took is None or not ticket.rounds:
            return self.mean_duration(ticket.lane)
        return self.expected_rounds(ticket) * took

    def estimate_s(self, ticket: Ticket) -> float | None:
        """Seconds until this waiting debate starts, from measured durations, played forward: each running
        debate needs what is left of its expected duration, or of its rounds at its own pace so far when it
        runs slower (`left`), and each debate ahead in line starts when a slot is free and (admission by time)
        it would end in time beside those still running. None without a measurement. Recomputed on every call,
        so it moves as the line does."""
        if self.place(ticket) == 0:
            return None
        x, now = self.lanes[ticket.lane], self.clock()
        running = []  # (expected end, debate)
        for t in x.running:
            took = self._duration(t, len(x.running))
            if took is None:
                return None
            running.append((now + left(t, took, now - t.admitted_at, self.expected_rounds(t)), id(t)))
        heapq.heapify(running)
        clock = now
        for t in x.order():
            while running and (running[0][0] <= clock or len(running) >= x.slots
                               or not self.fits(t, len(running) + 1)):
                clock = max(clock, heapq.heappop(running)[0])
            if t is ticket:
                return clock - now
            took = self._duration(t, len(running) + 1)
            if took is None:
                return None
            heapq.heappush(running, (clock + took, id(t)))
        return None


def left(ticket: Ticket, expected_s: float, ran_s: float, rounds: float) -> float:
    """Seconds a running debate still needs: what is left of its expected duration or, when it runs slower, of
    the `rounds` it is expected to run at its own pace (the rounds after the one in progress at least as long as
    this one has run); at least a tenth of the expected duration."""
    own = 0.0
    if rounds > ticket.rounds_run:
        own = ran_s * ((rounds - ticket.rounds_run) / ticket.rounds_run if ticket.rounds_run else rounds - 1)
    return max(expected_s - ran_s, own, expected_s / 10)


def too_long(ticket: Ticket, round_s: float, turn_s: float) -> str:
    """Why a debate is refused before it starts: even alone, its rounds (`round_s` each, `turn_s` an agent)
    would not end within its time limit; it is offered the rounds, and the agents, that would."""
    limit = f"this debate's time limit of {about(ticket.deadline_s).removeprefix('about ')}"
    most = int(ticket.deadline_s // round_s)
    agents = int(ticket.deadline_s // (max(1, ticket.rounds) * turn_s))  # with which all its rounds would end
    fewer = "fewer agents" if ticket.agents == 1 else (
        f"{agents} agent{'s' if agents > 1 else ''}" if 1 <= agents < ticket.agents else "")
    if most < 1:
        return (f"A round takes {about(round_s)} here now, longer than {limit}; use {f'{fewer} or ' if fewer else ''}"
                "a lower Max tokens, or try again later.")
    return (f"A round takes {about(round_s)} here now, so {ticket.rounds} rounds would not end within {limit}; "
            f"choose {most} round{'s' if most > 1 else ''} or fewer, {f'or {fewer}, ' if fewer else ''}"
            "or try again later.")


def about(seconds: float) -> str:
    """'about 40 s', 'about 3 min' (rounded up: a promise kept rather than broken)."""
    if seconds < 90:
        return f"about {max(5, 5 * math.ceil(seconds / 5))} s"
    return f"about {math.ceil(seconds / 60)} min"


def waiting_words(place: int, estimate_s: float | None, waited_s: float, skip_hint: str = "", *,
                  leave: str = "Press Stop to leave the line", held: bool = False) -> str:
    """The status of a debate in line, in one line: place, estimate (only from a measurement), why it waits
    though a slot is free (`held`: Admission.held), time waited, how to `leave` and, where one is open to the
    visitor, a backbone that skips the line."""
    eta = f" — starts in {about(estimate_s)}" if estimate_s is not None else ""
    eta += ", once fewer debates share the model, so that it ends within its time limit" if held else ""
    hint = f"; or {skip_hint} to skip the line" if skip_hint else ""
    return f"Waiting in line: place {place}{eta} · waited {waited_s:.0f} s. {leave}{hint}."
