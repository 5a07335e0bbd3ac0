"""ADU-Bench judge scores, per sample, from the judge panel's position-swapped verdicts.

Each judged response was scored twice by every judge: reference first, then response first. Per judge J:

- `score@J`: the mean of the two orders (0-10); None when either order failed (API error or no number in
  the reply) — a judge failure, excluded from the mean and counted in `judge_failure_rate@J`;
- `score_ref_first@J`, `score_resp_first@J`: each order on its own (None where that order failed);
- `position_bias@J`: response-first minus reference-first, where both orders succeeded;
- `judge_failure_rate@J`: 1 when this judge failed on the sample, else 0.

`score` is the mean of `score@J` over the judges, None unless every judge succeeded; `judge_failure_rate` is
1 when any judge failed. An empty (or whitespace-only) response is never sent to a judge: it scores 0 in
`score` and every `score@J`, and is counted in `empty_response_rate`. With no judge configured every score is
None (missing) and only `empty_response_rate` is reported.
"""

import datasets
import evaluate

ROLES = ("holistic", "correctness")


class AduJudgeScore(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="ADU-Bench 0-10 LLM-judge scores with position swapping, per judge",
            citation="Gao et al., Benchmarking Open-ended Audio Dialogue Understanding for Large Audio-Language Models",
            inputs_description="predictions: parsed responses; references: reference answers",
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
        )

    def _compute(self, predictions, references, responses=None, judgments=None):
        n = len(predictions)
        texts = responses if responses is not None else predictions
        empty = [not (t or "").strip() for t in texts]
        out = {"empty_response_rate": [float(e) for e in empty]}
        if judgments is None:
            out["score"] = [None] * n
            return out
        judges = sorted({j for item in judgments for role in ROLES for j in item.get(role, {})})
        per_judge = {
            j: [_judge_sample(item, j, e) for item, e in zip(judgments, empty, strict=True)] for j in judges
        }
        for judge, rows in per_judge.items():
            for key in (
                "score",
                "score_ref_first",
                "score_resp_first",
                "position_bias",
                "judge_failure_rate",
            ):
                out[f"{key}@{judge}"] = [row[key] for row in rows]
        combined, failed = [], []
        for i in range(n):
            if empty[i]:
                combined.append(0.0)
                failed.append(None)
                continue
            values = [per_judge[j][i]["score"] for j in judges]
            ok = bool(values) and all(v is not None for v in values)
            combined.append(sum(values) / len(values) if ok else None)
            failed.append(None if not judges else float(not ok))
        out["score"] = combined
        out["judge_failure_rate"] = failed
        return out


def _judge_sample(item, judge, empty):
    """One judge's numbers for one sample."""
    if empty:
        return {
            "score": 0.0,
            "score_ref_first": 0.0,
            "score_resp_first": 0.0,
            "position_bias": None,
            "judge_failure_rate": None,
        }
    verdict = next((item[role][judge] for role in ROLES if judge in item.get(role, {})), None)
    if verdict is None:  # this judge was not asked (it applies to no role of this sample)
        return dict.fromkeys(
            ("score", "score_ref_first", "score_resp_first", "position_bias", "judge_failure_rate")
        )
    values = list(verdict.get("values") or []) + [None, None]
    ref_first, resp_first = values[0], values[1]
    both = ref_first is not None and resp_first is not None
    return {
        "score": verdict.get("value"),
        "score_ref_first": ref_first,
        "score_resp_first": resp_first,
        "position_bias": (resp_first - ref_first) if both else None,
        "judge_failure_rate": float(verdict.get("value") is None),
    }
