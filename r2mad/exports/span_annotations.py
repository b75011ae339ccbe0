"""A saved run's labels, blame and grades as Phoenix span annotations (its REST API, POST /v1/span_annotations), so
they fill Phoenix's feedback columns: built beside the run's spans by otel.emit_run, sent after them. Only Phoenix
takes these; another collector's 404 leaves the labels as the span events otel.py sends anyway."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

TRACES_PATH = "/v1/traces"


def annotation(span_id: int, name: str, kind: str, identifier: str, *, label: str | None = None,
               score: float | None = None, explanation: str = "") -> dict[str, Any]:
    """One annotation of one span (Phoenix keeps one per span, name and identifier): kind HUMAN, LLM or CODE."""
    result = {k: v for k, v in (("label", label), ("score", score), ("explanation", explanation or None))
              if v is not None}
    return {"span_id": format(span_id, "016x"), "name": name, "annotator_kind": kind, "identifier": identifier,
            "result": result}


def annotations_url(traces_endpoint: str) -> str | None:
    """Where a Phoenix that takes traces at `traces_endpoint` takes span annotations; None for another path."""
    base = traces_endpoint.rstrip("/")
    return base[:-len(TRACES_PATH)] + "/v1/span_annotations" if base.endswith(TRACES_PATH) else None


def send(url: str, rows: list[dict[str, Any]], *, headers: dict[str, str] | None = None,
         timeout_s: float = 10.0) -> str:
    """POST the annotations (Phoenix files each once its span is in, so they may follow the spans at once);
    returns "" when taken, else one sentence saying why not."""
    if not rows:
        return ""
    body = json.dumps({"data": rows}).encode()
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s):
            return ""
    except urllib.error.HTTPError as exc:
        if exc.code in (404, 405):
            return (f"The collector takes no span annotations at {url} (Phoenix does); the labels went as span "
                    "events only.")
        return f"Phoenix refused the span annotations at {url} (HTTP {exc.code}); the labels went as span events only."
    except OSError as exc:
        return (f"The span annotations did not reach {url} within {timeout_s:g} s ({exc}); the labels went as span "
                "events only.")
