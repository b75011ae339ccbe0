"""The owner's allowance for anonymous visitors: what each of them spent today of the owner's HF_TOKEN, in model
calls and dollars, kept in a small SQLite file (var/allowance.sqlite) so that concurrent debates count right and
a restart forgets nothing; and `Metered`, a backend that charges each call to its visitor before it goes out.
A visitor is kept only as a hash of their key. Not for signed-in visitors: they spend their own account."""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from r2mad.backends.base import BackendError, Wrapped
from r2mad.evaluation.costs import Prices, format_dollars
from r2mad.settings.config import Allowance
from r2mad.types import Completion, Message

SIGN_IN = "sign in with Hugging Face (top of the page) to go on with your own account"
# A prompt's tokens, bounded from above for any script: a byte-level BPE or byte-fallback tokenizer never makes
# more tokens than the text's UTF-8 bytes (a Chinese character is 3 bytes and 1-2 tokens; an emoji 4 bytes and
# up to 4 tokens), plus the chat template's own tokens around each message. Counting characters instead
# (3 per token) let a Chinese question overshoot a cap by a fifth.
TEMPLATE_TOKENS = 8  # per message: role markers and separators (ChatML writes 5)
PRIMING_TOKENS = 8  # the assistant's opening the template adds once


def prompt_token_bound(messages: Sequence[Message]) -> int:
    """At most how many tokens `messages` take as a prompt, whatever the model's tokenizer and the script."""
    return sum(len(m.content.encode("utf-8")) + TEMPLATE_TOKENS for m in messages) + PRIMING_TOKENS


class AllowanceSpent(BackendError):
    """A call refused because the visitor's (or everybody's) allowance for today is used up."""


@dataclass(frozen=True)
class Left:
    """What a visitor may still spend today: the smaller of their own allowance and everybody's."""
    calls: int
    usd: float
    everyone: bool  # everybody's daily allowance is the one that binds

    @property
    def spent(self) -> bool:
        return self.calls <= 0 or self.usd <= 0

    def words(self) -> str:
        return f"{self.calls} model call{'s' if self.calls != 1 else ''} and {format_dollars(self.usd)}"


def refusal(left: Left, allowance: Allowance) -> str:
    """The one sentence a visitor reads past the allowance, offering sign-in."""
    if left.everyone:
        return (f"Today's free allowance of this Space's account is used up for all visitors "
                f"({allowance.daily_calls} calls, {format_dollars(allowance.daily_usd)} a day); {SIGN_IN}, "
                "or choose the embedded model.")
    return (f"Your free allowance on this Space's account is used up for today ({allowance.visitor_calls} calls, "
            f"{format_dollars(allowance.visitor_usd)} a day); {SIGN_IN}, or choose the embedded model.")


class Ledger:
    """Calls and dollars spent per visitor and UTC day. Every change is one IMMEDIATE transaction, so debates
    running at once (threads, processes) never both take the last call."""

    def __init__(self, path: str | Path, allowance: Allowance, *, clock: Callable[[], float] = time.time,
                 wait_s: float = 10.0):
        self.path, self.allowance, self.clock, self.wait_s = Path(path), allowance, clock, wait_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.execute("CREATE TABLE IF NOT EXISTS spent (day TEXT, visitor TEXT, calls INTEGER NOT NULL, "
                       "usd REAL NOT NULL, PRIMARY KEY (day, visitor))")

    @contextlib.contextmanager
    def _db(self):
        db = sqlite3.connect(self.path, timeout=self.wait_s, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")  # the write lock first: a read-then-write never races another
            yield db
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    def _day(self) -> str:
        return time.strftime("%Y-%m-%d", time.gmtime(self.clock()))

    @staticmethod
    def _who(visitor: str) -> str:
        return hashlib.sha256(visitor.encode()).hexdigest()[:32]  # a browser id works like a password

    def _left(self, db, day: str, who: str) -> Left:
        a = self.allowance
        mine = db.execute("SELECT calls, usd FROM spent WHERE day = ? AND visitor = ?", (day, who)).fetchone()
        mine = mine or (0, 0.0)
        total = db.execute("SELECT COALESCE(SUM(calls), 0), COALESCE(SUM(usd), 0) FROM spent WHERE day = ?",
                           (day,)).fetchone()
        own = (a.visitor_calls - mine[0], a.visitor_usd - mine[1])
        everyone = (a.daily_calls - total[0], a.daily_usd - total[1])
        binds = everyone[0] < own[0] or everyone[1] < own[1]
        return Left(max(0, min(own[0], everyone[0])), max(0.0, min(own[1], everyone[1])), binds)

    def left(self, visitor: str) -> Left:
        with self._db() as db:
            return self._left(db, self._day(), self._who(visitor))

    def reserve(self, visitor: str, calls: int, usd: float) -> str:
        """Take `calls` and an upper estimate of their dollars from the visitor's allowance, or raise
        AllowanceSpent (nothing taken). Returns the day charged, for `settle`."""
        day, who = self._day(), self._who(visitor)
        with self._db() as db:
            left = self._left(db, day, who)
            if left.calls < calls or left.usd < usd or left.spent:
                raise AllowanceSpent(refusal(left, self.allowance))
            db.execute("INSERT INTO spent VALUES (?, ?, ?, ?) ON CONFLICT (day, visitor) DO UPDATE SET "
                       "calls = calls + excluded.calls, usd = usd + excluded.usd", (day, who, calls, usd))
        return day

    def settle(self, visitor: str, day: str, usd_change: float) -> None:
        """Replace a reservation's estimate by what the calls cost (`usd_change` = actual - estimate)."""
        with self._db() as db:
            db.execute("UPDATE spent SET usd = MAX(0, usd + ?) WHERE day = ? AND visitor = ?",
                       (usd_change, day, self._who(visitor)))


class Metered(Wrapped):
    """A backend whose calls are paid by the owner for one anonymous visitor: each call is reserved in the ledger
    before it goes out (at most its prompt's token bound and max_tokens at the backbone's prices) and settled at
    its counted tokens after. A call the allowance cannot cover raises AllowanceSpent and never reaches the endpoint."""

    def __init__(self, inner: Any, ledger: Ledger, visitor: str, prices: Prices):
        super().__init__(inner)
        self.ledger, self.visitor, self.prices = ledger, visitor, prices

    def estimate(self, messages: Sequence[Message], n: int, max_tokens: int) -> float:
        """The most the call can cost: its prompt's token bound and every completion at max_tokens."""
        return n * self.prices.dollars(prompt_token_bound(messages), max_tokens)

    async def chat(self, messages: Sequence[Message], *, n: int = 1, max_tokens: int = 512,
                   **options: Any) -> list[Completion]:
        estimate = self.estimate(messages, n, max_tokens)
        day = await asyncio.to_thread(self.ledger.reserve, self.visitor, n, estimate)
        spent = 0.0  # a call that failed is counted, its dollars are not
        try:
            completions = await self.inner.chat(messages, n=n, max_tokens=max_tokens, **options)
            spent = sum(self.prices.dollars(c.tokens_in, c.tokens_out) for c in completions)
            return completions
        finally:
            await asyncio.shield(asyncio.to_thread(self.ledger.settle, self.visitor, day, spent - estimate))
