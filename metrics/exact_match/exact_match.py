"""Exact-match accuracy of a parsed answer against its label, one 0/1 score per sample (AudioICL-Bench's rule).

mode=integer: the last integer of the prediction equals the last integer of the reference.
mode=exact: both sides match after strict normalisation (lower case, no whitespace or . , ; : ! ? ( ) [ ] { } " ').
A parse failure (empty prediction) scores 0.
"""

import re

import datasets
import evaluate

_INT = re.compile(r"[-+]?\d+")
_STRIP = re.compile(r"[\s.,;:!?()\[\]{}\"']")


def _last_int(text):
    found = _INT.findall(text or "")
    return int(found[-1]) if found else None


def _normalize(text):
    return _STRIP.sub("", (text or "").strip().lower())


class ExactMatch(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="Exact-match accuracy (last integer, or strict normalised string match).",
            citation="Chen et al., AudioICL-Bench: A Benchmark for Large Audio Language Model In-Context Learning.",
            inputs_description="predictions: parsed responses ('' when unparsable); references: target labels; "
            "mode: 'integer' or 'exact'.",
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
        )

    def _compute(self, predictions, references, mode="exact", parse_failures=None):
        if mode not in ("integer", "exact"):
            raise ValueError(f"exact_match: mode must be 'integer' or 'exact', got {mode!r}")
        failures = parse_failures or [False] * len(predictions)
        scores = []
        for pred, ref, failed in zip(predictions, references, failures, strict=True):
            if failed or not pred:
                scores.append(0.0)
            elif mode == "integer":
                value = _last_int(pred)
                scores.append(float(value is not None and value == _last_int(ref)))
            else:
                scores.append(float(_normalize(pred) == _normalize(ref)))
        return {"accuracy": scores}
