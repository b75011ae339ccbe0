"""What fills the Debate form, by form name (r2mad.ui.debate_form.FILL): an example card's preset and a saved
run's question and settings (Inspect's rerun). gr.skip() leaves a control as it is."""
from __future__ import annotations

from typing import Any

import gradio as gr

from r2mad.grading.tasks import guess_kind
from r2mad.settings.config import SECTION_OF, DebateSettings
from r2mad.ui.debate_form import AGENTS, FILL, LETTERS, OPTIONS

FILLED_SETTINGS = tuple(n for n in FILL if n in SECTION_OF or n in DebateSettings.__dataclass_fields__)


def saved_setting(settings: dict, name: str, default):
    """A setting of a saved run, by its plain name: top level, in its method's section, or the default."""
    section = settings.get(SECTION_OF.get(name, ""))
    return settings.get(name, section.get(name, default) if isinstance(section, dict) else default)


def task_values(task) -> dict[str, Any]:
    options = dict(task.options)
    guessed = guess_kind(task.question, bool(task.options))  # the kind shows as a guess where it is one
    return {"question": task.question, **{name: options.get(letter, "") for name, letter in zip(OPTIONS, LETTERS)},
            "gold": task.gold or "", "kind": "" if task.kind == guessed else task.kind}


def mix_values(t, known) -> dict[str, Any]:
    """The Mixed-models controls for a saved transcript `t` (checkbox, auxiliary backbone, one dropdown per
    agent), given the backbone names configured here (`known`); gr.skip() where a name is not configured."""
    names = t.agent_backbones() if t is not None else []
    if not names or all(n == t.backbone for n in names):
        return {"mixed_models": False, "aux_backbone": gr.skip(), **{name: gr.skip() for name in AGENTS}}
    aux = "" if t.backbone == names[0] else t.backbone
    return {"mixed_models": True, "aux_backbone": aux if aux in known or not aux else gr.skip(),
            **{name: names[i] if i < len(names) and names[i] in known else gr.skip()
               for i, name in enumerate(AGENTS)}}


def card_values(card, task, config, banks, backbone: str, seed: int) -> dict[str, Any]:
    """An example card's question and preset: the configured settings with the card's seed, one method."""
    settings = {name: config.settings.value(name) for name in FILLED_SETTINGS}
    return {"backbone": backbone if backbone in config.backbones else gr.skip(), "methods": [card.method],
            "bank": card.bank if card.bank in banks else "", **settings, "seed": seed, **task_values(task),
            **mix_values(None, config.backbones)}


def run_values(record, config, banks) -> dict[str, Any]:
    """A saved run's question, method, bank, settings and backbones (the configured default where it saved none)."""
    settings = {name: saved_setting(record.settings, name, config.settings.value(name)) for name in FILLED_SETTINGS}
    return {"backbone": record.backbone if record.backbone in config.backbones else gr.skip(),
            "methods": [record.method], "bank": record.bank if record.bank in banks else "", **settings,
            **task_values(record.task), **mix_values(record.transcript, config.backbones)}


def in_fill_order(values: dict[str, Any]) -> tuple:
    """The values in FILL's order, for an event whose outputs are the form's FILL components."""
    return tuple(values[name] for name in FILL)
