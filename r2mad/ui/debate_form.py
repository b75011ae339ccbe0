"""The Debate tab's form, its components by name: the question and its options, the methods, and the
"Advanced" panel (backbone, mixed models, token, endpoint, bank and the settings of r2mad.settings.fields). The names
are the /debate event's parameter names and the keys of fill values (cards, Inspect's rerun). Layout only."""
from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import gradio as gr

from r2mad.budget import QUESTION_CHARS
from r2mad.grading.kinds import KINDS
from r2mad.grading.tasks import guess_kind
from r2mad.methods import REGISTRY, names
from r2mad.settings.config import bounds
from r2mad.settings.fields import ON_FORM, Field
from r2mad.text import FIELD_CHARS, GOLD_CHARS
from r2mad.types import OPTION_LETTERS
from r2mad.ui.views import MAX_COLUMNS

LETTERS = OPTION_LETTERS
OPTIONS = tuple(f"option_{letter.lower()}" for letter in LETTERS)
MAX_AGENTS = 8  # the Agents slider's maximum: one backbone dropdown each under Mixed models
AGENTS = tuple(f"agent_{i + 1}" for i in range(MAX_AGENTS))
GROUPS = {"debate": "Debate methods", "baseline": "Single-agent baselines", "ablation": "R²-MAD ablations"}
ORDER = tuple(m for family in GROUPS for m in names(family))  # the method list, group by group
SETTING_ROWS = (("agents", "rounds", "max_tokens"), ("temperature", "seed", "answer_guard"), ("profile",),
                ("k", "gamma"))  # the settings panel's rows, by field name
# what a fill (a card, Inspect's rerun) sets, in the order the rerun endpoint returns it; the profile stays as chosen
FILL = ("backbone", "methods", "bank", *(f.name for f in ON_FORM if f.name != "profile"), "question", *OPTIONS,
        "gold", "kind", "mixed_models", "aux_backbone", *AGENTS)

Form = dict[str, Any]  # component by name


def method_label(name: str) -> str:
    spec = REGISTRY[name]
    what = spec.description or spec.title
    return f"{'R²-MAD, ' if spec.family == 'ablation' else ''}{spec.label} — {what}"


METHOD_LABELS = {name: method_label(name) for name in REGISTRY}


def needs_token(config, backbone: str) -> bool:
    """The token field is for backbones a visitor's own token may reach (`visitor_token`)."""
    spec = config.backbones.get(backbone)
    return bool(spec and spec.visitor_token)




def question_part(form: Form) -> tuple[gr.Markdown, gr.Button, gr.Accordion]:
    """The question, its answer kind (a chip, "change" shows the kinds), its options and its gold; returns
    the chip, its button and the options' accordion (not form values)."""
    form["question"] = gr.Textbox("", lines=2, label="Question", elem_id="question", max_length=QUESTION_CHARS,
                                  placeholder="Any question: a math problem, a fact, yes or no, an open question, "
                                              "or a multiple-choice question with options below")
    with gr.Row(elem_id="kind-row", equal_height=True):
        chip = gr.Markdown(kind_chip("", "", False), elem_id="kind-chip")
        change = gr.Button("change", size="sm", variant="secondary", elem_id="kind-change", scale=0, min_width=80)
    form["kind"] = gr.Dropdown(KIND_CHOICES, value="", label="Answer kind", elem_id="kind", visible=False)
    with gr.Accordion("Multiple-choice options (optional; empty ones are ignored)", open=False,
                      elem_id="options-box") as options_box:
        for name, letter in zip(OPTIONS, LETTERS):
            form[name] = gr.Textbox("", label=f"Option {letter}", elem_id=f"option-{letter}",
                                    max_length=QUESTION_CHARS)
    form["gold"] = gr.Textbox("", label="Correct answer, if you know it (a letter, a number, yes or no, a few "
                                        "words; used to score)", elem_id="gold", max_length=GOLD_CHARS,
                              info=f"Up to {GOLD_CHARS} characters.")
    return chip, change, options_box


KIND_CHOICES = [("Guess from the question", ""), *((k.label, k.name) for k in KINDS.values())]


def kind_chip(question: str, picked: str, has_options: bool) -> str:
    """'Answer kind: short answer (guessed)' and, under it, what "agree" means for that kind."""
    if not (question or "").strip() and not picked:
        return "**Answer kind:** guessed from your question as you type"
    kind = KINDS[picked or guess_kind(question or "", has_options)]
    how = "" if picked else " (guessed from the question)"
    return f"**Answer kind: {kind.label}**{how}  \n<small>{kind.agree}</small>"


def methods_part(form: Form, default_method: str) -> None:
    form["methods"] = gr.Dropdown([(METHOD_LABELS[m], m) for m in ORDER], value=[default_method], multiselect=True,
                                  allow_custom_value=True, label="Method(s)", elem_id="methods",
                                  info="Grouped: debate methods, single-agent baselines, R²-MAD ablations. "
                                       f"Pick 2–{MAX_COLUMNS} to compare side by side.")


def backbone_choices(config) -> list[tuple[str, str]]:
    """The Backbone dropdown's (label, name) pairs: every backbone of the config, in its order."""
    return [(b.label or name, name) for name, b in config.backbones.items()]


def advanced_part(form: Form, config, banks: list[str]) -> gr.Group:
    """Backbone, mixed models, token, custom endpoint, bank and settings; returns the mixed models' group."""
    choices = backbone_choices(config)
    form["backbone"] = gr.Dropdown(choices, value=config.default_backbone, label="Backbone")
    form["mixed_models"] = gr.Checkbox(False, label="Mixed models: each agent on its own backbone",
                                       elem_id="mixed-models")
    with gr.Group(visible=False, elem_id="agent-backbones") as mixed_box:
        with gr.Row():
            for i, name in enumerate(AGENTS):
                form[name] = gr.Dropdown(choices, value=config.default_backbone, label=f"Agent {i + 1}",
                                         visible=i < config.settings.agents, elem_id=f"agent-backbone-{i + 1}",
                                         min_width=180)
        form["aux_backbone"] = gr.Dropdown([("Agent 1's backbone", ""), *choices], value="", elem_id="aux-backbone",
                                           label="Summaries, judges and advice", min_width=180)
    form["token"] = gr.Textbox("", type="password", max_length=FIELD_CHARS, label="Hugging Face token", elem_id="token",
                               visible=needs_token(config, config.default_backbone),
                               info="Sent only to the Hugging Face backbones (or a custom endpoint you give), for "
                                    "this browser session only; never shown, logged or stored.")
    custom = config.app.allow_custom_endpoint
    with gr.Accordion("Custom OpenAI-compatible endpoint", open=False, visible=custom):
        form["base_url"] = gr.Textbox("", label="base_url", max_length=FIELD_CHARS,
                                      placeholder="http://localhost:8000/v1", interactive=custom)
        form["model"] = gr.Textbox("", label="model", max_length=FIELD_CHARS,
                                   placeholder="leave empty to ask /v1/models", interactive=custom)
    form["bank"] = gr.Dropdown([("(no memory bank)", "")] + [(b, b) for b in banks],
                               value=config.app.default_bank if config.app.default_bank in banks else "",
                               label="Memory bank (R²-MAD, ICL-CoT)")
    on_form = {f.name: f for f in ON_FORM}
    with gr.Group(elem_id="settings"):
        for row in SETTING_ROWS:
            with gr.Row() if len(row) > 1 else nullcontext():
                for name in row:
                    form[name] = control(on_form[name], config.settings.value(name))
    return mixed_box


def control(field: Field, value: Any):
    """The form's control of one settings field: a radio for choices, a number box for an optional whole
    number (empty = none), else a slider over the field's span on the form (or its bounds)."""
    elem_id = field.name.replace("_", "-")
    if field.choices:
        return gr.Radio(list(field.choices), value=value, label=field.label, elem_id=elem_id, info=field.help or None)
    if field.span is None:
        return gr.Number(value=value, precision=0, minimum=bounds(field.name)[0], maximum=bounds(field.name)[1],
                         label=field.label, elem_id=elem_id)
    lo, hi, step = field.span
    return gr.Slider(lo, hi, value=value, step=step, label=field.label, elem_id=elem_id)
