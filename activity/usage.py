"""What a turn cost: token totals over its model calls, and their price when GLASSBOX_PRICES
names the model. Plain Python. Unknown (a provider that sent no usage) stays None: a sum with
an unknown part is unknown."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Any

from django.conf import settings

from activity.recording.events import ModelCallDone

MILLION = Decimal(1_000_000)
TOKEN_FIELDS = ("prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens")


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """Prices per million tokens; cached prompt tokens at their own price when given."""

    prompt: Decimal
    completion: Decimal
    cached: Decimal | None = None


def configured_prices() -> Mapping[str, ModelPrice]:
    """GLASSBOX_PRICES: its JSON text read once, or prices set directly (as tests do).
    Raises ValueError."""
    value: str | Mapping[str, ModelPrice] = settings.GLASSBOX_PRICES
    return _read(value) if isinstance(value, str) else value


@cache
def _read(text: str) -> Mapping[str, ModelPrice]:
    return prices_from_setting(text)


def prices_from_setting(text: str) -> dict[str, ModelPrice]:
    """`{"<model>": {"prompt": 0.15, "completion": 0.6, "cached": 0.075}}`, per 1M tokens."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError('expected an object such as {"gpt-4o-mini": {"prompt": 0.15, ...}}')
    prices = {}
    for model, price in data.items():
        if not isinstance(price, dict) or not {"prompt", "completion"} <= set(price):
            raise ValueError(f"{model!r}: give 'prompt' and 'completion' (per 1M tokens)")
        unknown = set(price) - {"prompt", "completion", "cached"}
        if unknown:
            raise ValueError(f"{model!r}: unknown field {sorted(unknown)[0]!r}")
        prices[model] = ModelPrice(
            prompt=_amount(price["prompt"], model),
            completion=_amount(price["completion"], model),
            cached=_amount(price["cached"], model) if "cached" in price else None,
        )
    return prices


def _amount(value: Any, model: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"{model!r}: prices are numbers")
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"{model!r}: prices are numbers") from None
    if not amount.is_finite() or amount < 0:
        raise ValueError(f"{model!r}: prices are zero or more")
    return amount


def call_cost(call: ModelCallDone, prices: Mapping[str, ModelPrice]) -> Decimal | None:
    price = prices.get(call.model)
    if price is None or call.prompt_tokens is None or call.completion_tokens is None:
        return None
    cached = call.cached_tokens or 0
    cached_price = price.cached if price.cached is not None else price.prompt
    cost = (
        (call.prompt_tokens - cached) * price.prompt
        + cached * cached_price
        + call.completion_tokens * price.completion
    ) / MILLION
    return cost.quantize(Decimal("0.000001"))


def totals(calls: Iterable[ModelCallDone], prices: Mapping[str, ModelPrice]) -> dict[str, Any]:
    """The feed's usage fields: each token sum, the total, the cost and the model."""
    calls = list(calls)
    sums: dict[str, Any] = {name: _sum(getattr(c, name) for c in calls) for name in TOKEN_FIELDS}
    prompt, completion = sums["prompt_tokens"], sums["completion_tokens"]
    sums["total_tokens"] = None if prompt is None or completion is None else prompt + completion
    costs = [call_cost(call, prices) for call in calls]
    known = [cost for cost in costs if cost is not None]
    sums["cost"] = sum(known, Decimal(0)) if known and len(known) == len(costs) else None
    sums["model"] = calls[-1].model if calls else ""
    return sums


def _sum(values: Iterable[int | None]) -> int | None:
    values = list(values)
    if not values or None in values:
        return None
    return sum(v for v in values if v is not None)
