"""The opt-in live trace exporter: when R2MAD_OTEL_ENDPOINT is set, each run the engine finishes goes out as an
OpenTelemetry trace (otel.py). Off by default, and then nothing of OpenTelemetry is even imported. The entry
points (the CLI, the app) `install` it once."""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Iterable

from r2mad.settings.config import otel_endpoint

log = logging.getLogger(__name__)


def install() -> None:
    """Hear every run the engine finishes (engine.service.FINISHED), once."""
    from r2mad.engine import service

    if send_traces not in service.FINISHED:
        service.FINISHED.append(send_traces)


async def send_traces(store: Any, run_ids: Iterable[str]) -> None:
    """Send the saved runs' traces off the event loop, bounded in time; never raises."""
    endpoint = otel_endpoint()
    if not endpoint:
        return
    try:
        from r2mad.exports.otel import send_live
    except ImportError as exc:
        log.warning("R2MAD_OTEL_ENDPOINT is set but OpenTelemetry is not installed (%s); pip install -r "
                    "requirements.txt, or unset it.", exc)
        return
    await asyncio.to_thread(send_live, store, list(run_ids), endpoint)
