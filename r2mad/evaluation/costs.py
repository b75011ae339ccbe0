"""Cost in money: a backbone's prices per million input and output tokens (configs/backbones.yaml) applied
to token counts, per model for mixed-model debates. Pure arithmetic; no I/O."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping


@dataclass(frozen=True)
class Prices:
    """US dollars per million prompt (input) and completion (output) tokens."""
    input_per_m: float
    output_per_m: float

    def dollars(self, tokens_in: float, tokens_out: float) -> float:
        return (tokens_in * self.input_per_m + tokens_out * self.output_per_m) / 1_000_000

    def to_dict(self) -> dict[str, float]:
        return {"input_per_m": self.input_per_m, "output_per_m": self.output_per_m}


def prices_of(backbone: Any) -> Prices | None:
    """The backbone's prices, or None when its config gives none (a free local server, say). One price
    alone counts the other kind of token as free."""
    pin, pout = getattr(backbone, "price_input_per_m", None), getattr(backbone, "price_output_per_m", None)
    if pin is None and pout is None:
        return None
    return Prices(pin or 0.0, pout or 0.0)


def prices_from(data: dict | None) -> Prices | None:
    """Prices as run.json records them (None: no prices given)."""
    return Prices(float(data["input_per_m"]), float(data["output_per_m"])) if data else None


PriceTable = Mapping[str, "Prices | None"]  # backbone name -> its prices (None: unknown)


def price_table(backbones: Iterable[Any]) -> dict[str, Prices | None]:
    """Each configured backbone's prices by its name (config.backbones.values())."""
    return {b.name: prices_of(b) for b in backbones}


def model_costs(per_model: Mapping[str, Any], prices: PriceTable) -> dict[str, float | None] | None:
    """Dollars per model from its usage (Transcript.usage_by_model()), None for a model whose price is
    unknown; None altogether when no model used has a price (nothing to say in money)."""
    if not any(prices.get(name) for name in per_model):
        return None
    return {name: prices[name].dollars(u.tokens_in, u.tokens_out) if prices.get(name) else None  # type: ignore[union-attr]
            for name, u in per_model.items()}


def total_cost(costs: Mapping[str, float | None] | None) -> float | None:
    """The sum of model_costs; None when any model's price is unknown (never a partial sum as the total)."""
    if not costs or None in costs.values():
        return None
    return sum(v for v in costs.values() if v is not None)


def format_cost(amount: float | None) -> str:
    """A known amount in dollars, else "unknown" (a model without a price)."""
    return "unknown" if amount is None else format_dollars(amount)


def total_words(costs: Mapping[str, float | None]) -> str:
    """The total in dollars, or which model's price is missing: "$0.0012", "cost unknown: no price for b"."""
    unknown = [name for name, c in costs.items() if c is None]
    return format_dollars(total_cost(costs)) if not unknown else f"cost unknown: no price for {', '.join(unknown)}"


def format_dollars(amount: float | None) -> str:
    """$ with enough digits to see sub-cent amounts: $12.30, $0.500, $0.0123, $0.0000450; – when unknown."""
    if amount is None or math.isnan(amount):
        return "–"
    if amount == 0 or abs(amount) >= 1:
        return f"${amount:,.2f}"
    digits = 2 - math.floor(math.log10(abs(amount)))  # three significant digits
    return f"${amount:.{min(digits, 8)}f}"
