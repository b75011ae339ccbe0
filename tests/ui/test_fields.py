"""The settings fields (r2mad.settings.fields) drive the CLI's flags and the app's form: every field is a real setting,
a form never offers a value the settings refuse, and the CLI sets each field with a flag."""
from __future__ import annotations

import argparse

import pytest

from r2mad.commands.common import SETTING_FLAGS, add_settings_flags, settings_from
from r2mad.settings.config import ConfigError, DebateSettings, load_config
from r2mad.settings.fields import FIELDS, ON_FORM


@pytest.mark.parametrize("field", FIELDS, ids=lambda f: f.name)
def test_each_field_is_a_setting_and_its_form_span_lies_within_the_settings_bounds(field):
    assert field.kind in (int, float, str, bool)
    assert isinstance(field.default(DebateSettings()), field.kind) or field.default(DebateSettings()) is None
    if field.span:
        lo, hi = field.bounds
        assert lo <= field.span[0] < field.span[1] <= hi


def test_the_form_holds_the_settings_a_visitor_sets():
    assert [f.name for f in ON_FORM] == ["agents", "rounds", "max_tokens", "temperature", "seed", "answer_guard",
                                         "profile", "k", "gamma"]


def test_every_flagged_field_is_set_from_the_command_line():
    parser = argparse.ArgumentParser()
    add_settings_flags(parser)
    config = load_config()
    args = parser.parse_args(["--agents", "5", "--gamma", "0.5", "--policy", "random", "--no-early-stop",
                              "--strict", "--no-confidence", "--prefetch-summaries", "--deadline-s", "60"])
    s = settings_from(args, config)
    assert (s.agents, s.r2mad.gamma, s.r2mad.policy, s.early_stop, s.madm2.strict) == (5, 0.5, "random", False, True)
    assert (s.r2mad.use_confidence, s.r2mad.prefetch_summaries, s.r2mad.summary, s.deadline_s) == (
        False, True, "pattern", 60.0)  # prefetching asks the pattern-only summary
    assert settings_from(parser.parse_args([]), config) == config.settings
    assert "profile" not in {f.name for f in SETTING_FLAGS}  # --profile applies the papers' decoding first
    with pytest.raises(ConfigError, match="policy"):
        settings_from(parser.parse_args(["--policy", "nope"]), config)


def test_a_card_fills_every_control_a_fill_sets_and_keeps_the_profile():
    from r2mad.ui.debate_form import FILL
    from r2mad.ui.examples import CARDS, card_task
    from r2mad.ui.fill import card_values

    config = load_config()
    values = card_values(CARDS[0], card_task(CARDS[0]), config, [], "smollm2-135m", 0)
    assert set(values) == set(FILL) and "profile" not in values
    assert values["seed"] == 0 and values["agents"] == config.settings.agents and values["mixed_models"] is False
