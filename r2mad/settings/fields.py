"""The debate settings a person sets by hand, declared once: the CLI's setting flags, the app's form controls,
the form's fill (cards, Inspect's rerun) and the form's validation are all made from `FIELDS`. Type, bounds and
choices are read from DebateSettings' own metadata (config.py); this list adds only what people see."""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any

from r2mad.settings.config import SECTION_OF, SECTIONS, DebateSettings


@dataclass(frozen=True)
class Field:
    """One setting by its plain DebateSettings name. `label`: on the app's form ("" = not on it);
    `span`: the form's (lowest, highest, step) where the form offers less than the settings allow;
    `flag`: how the CLI sets it ("" = no flag; a bool's flag sets the opposite of the default)."""
    name: str
    label: str = ""
    help: str = ""
    span: tuple[float, float, float] | None = None
    flag: str | None = None

    @property
    def _field(self) -> dataclasses.Field:
        cls = SECTIONS.get(SECTION_OF.get(self.name), DebateSettings)
        return next(f for f in dataclasses.fields(cls) if f.name == self.name)

    @property
    def kind(self) -> type:
        """int, float, str or bool (an optional setting's type without None)."""
        hint = typing.get_type_hints(SECTIONS.get(SECTION_OF.get(self.name), DebateSettings))[self.name]
        return next((a for a in typing.get_args(hint) if a is not type(None)), hint)

    @property
    def choices(self) -> tuple[str, ...]:
        return self._field.metadata.get("choices", ())

    @property
    def bounds(self) -> tuple[Any, Any]:
        return self._field.metadata.get("lo"), self._field.metadata.get("hi")

    @property
    def cli_flag(self) -> str:
        return self.flag if self.flag is not None else "--" + self.name.replace("_", "-")

    def default(self, settings: DebateSettings) -> Any:
        return settings.value(self.name)


FIELDS = (
    Field("agents", "Agents", span=(1, 8, 1)),
    Field("rounds", "Rounds in all (incl. round 0)", span=(1, 6, 1)),
    Field("max_tokens", "Max tokens per answer", span=(16, 8192, 16)),
    Field("temperature", "Temperature", span=(0.0, 2.0, 0.05)),
    Field("seed", "Seed (empty = random)"),
    Field("answer_guard", "Answer guard",
          "Ask once more for the answer alone when none is found (auto: on for the embedded model)."),
    Field("profile", "Profile",
          "paper: the papers' decoding (temperature 1.0, top_p 1.0, up to 6,144 tokens), the format in the "
          "system prompt and no clipping; slow on the embedded model. demo: fast settings for small models.",
          flag=""),  # the CLI's --profile applies the papers' decoding first (commands/common.settings_from)
    Field("k", "R²-MAD: K (cases per agent and round)", span=(1, 8, 1)),
    Field("gamma", "R²-MAD: γ (λ = 1 − γ·consensus)", span=(0.0, 1.0, 0.05)),
    Field("top_p"),
    Field("policy"),
    Field("samples"),
    Field("pairing"),
    Field("deadline_s"),
    Field("judge", help="who grades answers the rules cannot decide: auto (the debate's backbone unless it is the "
                        "embedded model), off, self, or a backbone's name"),
    # where the paper text and the authors' code differ (the default is the authors' code)
    Field("summary"),
    Field("confidence_terms"),
    Field("reward"),
    Field("context"),
    Field("case_tokens"),
    Field("early_stop", help="run every round even when all agree", flag="--no-early-stop"),
    Field("strict", help="MAD-M² subjective: also mask NOT SURE"),
    Field("use_confidence", help="R²-MAD without confidence annotations", flag="--no-confidence"),
    Field("prefetch_summaries", help="R²-MAD: use the pattern-only summary (a speed variant, a departure) and ask "
                                     "it for likely stance patterns while agents answer"),
)
BY_NAME = {f.name: f for f in FIELDS}
ON_FORM = tuple(f for f in FIELDS if f.label)  # the Debate form's settings, in the form's order
