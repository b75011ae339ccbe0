"""Every backend declares what it can do in one Capabilities value, and wrappers pass it on unchanged."""
from __future__ import annotations

import dataclasses

import pytest

from r2mad.backends import make_backend
from r2mad.backends.base import Capabilities
from r2mad.bench.speed import Counting
from r2mad.settings.config import load_config
from r2mad.steer.blame import CallMeter
from tests.scripted import ScriptedBackend

CONFIG = load_config()


@pytest.mark.parametrize("name", list(CONFIG.backbones))
def test_every_configured_backbone_builds_a_backend_that_declares_its_capabilities(name):
    backbone = CONFIG.backbone(name)
    caps = make_backend(backbone).capabilities
    assert isinstance(caps, Capabilities)
    if backbone.kind == "embedded":  # streams, guards with a grammar, and knows its window
        assert (caps.streams_text, caps.structured_output, caps.n_ctx) == (True, "grammar", backbone.n_ctx)
        return
    shape = None if backbone.structured_output == "none" else backbone.structured_output
    assert caps == Capabilities(supports_logprobs=backbone.supports_logprobs, streams_text=backbone.stream,
                                structured_output=shape, guard_by_default=backbone.answer_guard,
                                judges_answers=backbone.judges)


def test_the_scripted_backend_and_every_wrapper_declare_capabilities():
    inner = ScriptedBackend(lambda m: "((A))", capabilities=Capabilities(streams_text=True, n_ctx=2048))
    assert isinstance(ScriptedBackend(lambda m: "((A))").capabilities, Capabilities)
    for wrapped in (CallMeter(1).wrap(inner), Counting(inner)):
        assert (wrapped.name, wrapped.capabilities) == (inner.name, inner.capabilities)
    with pytest.raises(dataclasses.FrozenInstanceError):
        inner.capabilities.n_ctx = 4096
