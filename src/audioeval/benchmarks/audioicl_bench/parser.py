"""AudioICL-Bench answer parsing, as the paper's evaluation scores responses.

- integer tasks use `last_integer` (parsers/common.py): the last [-+]?\\d+ in the response;
- AnomalyDetect: strict normalisation, then keyword rules mapping variants to Normal / Anomalous;
- AudioRemap: every ASCII letter concatenated and upper-cased, which must be exactly `length` letters;
- MorseCode / MorseLetter: the response with whitespace and every punctuation or markdown character removed,
  lower-cased (the paper: "normalized string matching after stripping whitespace and punctuation"), so
  `**smile**`, `s-m-i-l-e` and `"Smile."` all read as `smile`.
"""

from __future__ import annotations

import re

from audioeval.config.parsers import register

_STRIP = re.compile(r"[\s.,;:!?()\[\]{}\"']")
_ANOMALOUS = {"anomalous", "anomaly", "abnormal", "true", "1"}
_NORMAL = {"normal", "false", "0"}


def normalize_strict(text: str) -> str:
    """Strip, lower-case, and delete whitespace and the characters . , ; : ! ? ( ) [ ] { } \" '."""
    return _STRIP.sub("", text.strip().lower())


@register("audioicl_anomaly")
def anomaly(response: str) -> str | None:
    """'Normal' or 'Anomalous': exact keywords first, then a substring containing anomal/abnorm, then normal."""
    text = normalize_strict(response)
    if text in _ANOMALOUS:
        return "Anomalous"
    if text in _NORMAL:
        return "Normal"
    if "anomal" in text or "abnorm" in text:
        return "Anomalous"
    if "normal" in text:
        return "Normal"
    return None


@register("audioicl_remap")
def remap(response: str, length: int = 3) -> str | None:
    """All letters of the response, upper-cased; None unless there are exactly `length` of them."""
    letters = "".join(re.findall(r"[A-Za-z]", response)).upper()
    return letters if len(letters) == int(length) else None


def letters_and_digits(text: str) -> str:
    """Lower-cased letters and digits only: whitespace, punctuation, markdown and any other symbol removed."""
    return "".join(ch for ch in text.lower() if ch.isalnum())


@register("audioicl_morse")
def morse(response: str) -> str | None:
    return letters_and_digits(response) or None
