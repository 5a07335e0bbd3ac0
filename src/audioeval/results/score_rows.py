"""One scored sample as aggregation sees it (ScoreRow), and its per-sample score columns.

Rows come out of the evaluation loop; aggregation, run health and robustness read them. Keeping them here
means none of those imports the loop."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class ScoreRow:
    episode: int
    k: int
    scores: dict[str, float | None]
    parse_failure: bool
    error: bool
    audio_seconds: float
    error_message: str | None = None  # why the model gave no answer (first one is shown at the end of a run)
    facets: dict[str, str] = field(default_factory=dict)  # declared facet -> this sample's value


def facet_values(metadata: dict[str, Any], facets: tuple[str, ...]) -> dict[str, str]:
    """The values of the declared facets in one episode's metadata; a dotted name reads a nested field
    (`variation.gender`). A sample without the field (or with null) has no value for that facet."""
    out = {}
    for name in facets:
        value: Any = metadata
        for part in name.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None:
            out[name] = str(value)
    return out


def score_arrays(
    rows: list[ScoreRow], k: int, names: list[str]
) -> tuple[dict[str, np.ndarray], list[ScoreRow]]:
    """Per-sample score columns for one shot count, in episode order; missing values (including samples
    the model failed on) are NaN."""
    selected = sorted((r for r in rows if r.k == k), key=lambda r: r.episode)
    columns = {}
    for name in names:
        values = [r.scores.get(name) for r in selected]
        columns[name] = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    return columns, selected


def score_names(rows: list[ScoreRow]) -> list[str]:
    names: list[str] = []
    for r in rows:
        for name in r.scores:
            if name not in names:
                names.append(name)
    return names
