"""Two ways out of the process that no run store sees: the log (every record passes records.scrub) and CSV files
(cells a spreadsheet would run as a formula are neutralised). The API, /v1, exports and spans use the store's scrub."""
from __future__ import annotations

import logging
from typing import Any, Iterable

from r2mad.runs.records import scrub

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # OWASP's list for CSV injection
_LOG_SECRETS: set[str] = set()


def csv_cells(row: Iterable[Any]) -> list[Any]:
    """A CSV row as a spreadsheet should open it: a text cell starting like a formula gets a leading ' (OWASP);
    numbers stay numbers."""
    return [f"'{v}" if isinstance(v, str) and v.startswith(FORMULA_STARTS) else v for v in row]


def scrub_logs(secrets: Iterable[str]) -> None:
    """From now on every log record of the process, whichever logger writes it, leaves with `secrets` (added to
    those given before) and anything shaped like a Hugging Face token redacted, its traceback included."""
    _LOG_SECRETS.update(s for s in secrets if s)
    make = logging.getLogRecordFactory()
    if getattr(make, "scrubs_secrets", False):
        return

    def record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        made = make(*args, **kwargs)
        try:
            message = made.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string is the handler's to report, as without us
            return made
        clean = scrub(message, _LOG_SECRETS)
        if clean != message:
            made.msg, made.args = clean, ()
        if made.exc_info and made.exc_info[0] is not None:  # the formatter keeps a traceback already written
            made.exc_text = scrub(logging.Formatter().formatException(made.exc_info), _LOG_SECRETS)
        return made
    record.scrubs_secrets = True
    logging.setLogRecordFactory(record)
