"""ADU-Bench judge scores, per sample, from the judge panel's position-swapped verdicts.

Each judged response was scored twice by every judge: reference first, then response first. Per judge J:

- `score@J`: the mean of the two orders (0-10); None when either order failed (API error, no number in
  the reply, or a number outside the scale) — a judge failure, excluded from the mean and counted in
  `judge_failure_rate@J`;
- `score_ref_first@J`, `score_resp_first@J`, `position_bias@J` (response-first minus reference-first):
  only where both orders succeeded, so the three columns and `score@J` describe the same items;
- `judge_failure_rate@J`: 1 when this judge failed on the sample, else 0;
- `judge_out_of_range@J`: 1 when that failure was a verdict outside the scale (e.g. "15" on 0-10, or "5"
  from the 10-or-0 correctness judge), else 0.

`score`, `judge_failure_rate` and `judge_out_of_range` are the first judge's (the first `--judge`, the
paper's GPT-4 role): judges are reported side by side, never averaged. An empty (or whitespace-only)
response is never sent to a judge: it scores 0 in both orders of every judge (position bias 0), and is
counted in `empty_response_rate`. With no judge configured every score is None (missing) and only
`empty_response_rate` is reported.

`domain_stratum` and `domain_weight` name each sample's domain and that domain's weight in its dataset's
mean (the paper's arithmetic, audioeval.benchmarks.adu_bench.domains.domain_weight); the task's `stratified_mean`
aggregation uses them and does not report them.
"""

import datasets
import evaluate

from audioeval.benchmarks.adu_bench.domains import domain_stratum, domain_weight

ROLES = ("holistic", "correctness")
PER_JUDGE = (
    "score",
    "score_ref_first",
    "score_resp_first",
    "position_bias",
    "judge_failure_rate",
    "judge_out_of_range",
)


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

    def _compute(
        self, predictions, references, responses=None, judgments=None, judge_ids=None, sample_info=None
    ):
        n = len(predictions)
        texts = responses if responses is not None else predictions
        empty = [not (t or "").strip() for t in texts]
        out = {"empty_response_rate": [float(e) for e in empty]}
        if sample_info is not None:
            metas = [(info or {}).get("metadata") or {} for info in sample_info]
            out["domain_stratum"] = [_meta_number(domain_stratum, m) for m in metas]
            out["domain_weight"] = [_meta_number(domain_weight, m) for m in metas]
        if judgments is None:
            out["score"] = [None] * n
            return out
        judges = list(judge_ids) if judge_ids is not None else _judges_in_order(judgments)
        per_judge = {
            j: [_judge_sample(item, j, e) for item, e in zip(judgments, empty, strict=True)] for j in judges
        }
        for judge, rows in per_judge.items():
            for key in PER_JUDGE:
                out[f"{key}@{judge}"] = [row[key] for row in rows]
        first = per_judge[judges[0]] if judges else [_judge_sample({}, None, e) for e in empty]
        for key in ("score", "judge_failure_rate", "judge_out_of_range"):
            out[key] = [row[key] for row in first]
        return out


def _meta_number(function, meta):
    if not meta.get("dataset") or not meta.get("domain"):
        return None
    return function(meta["dataset"], meta["domain"])


def _judges_in_order(judgments):
    """Judge ids in the order they were given (the panel keeps it in every sample's verdicts); for callers
    that pass no `judge_ids`."""
    order = []
    for item in judgments:
        for role in ROLES:
            for judge in item.get(role, {}):
                if judge not in order:
                    order.append(judge)
    return order


def _judge_sample(item, judge, empty):
    """One judge's numbers for one sample."""
    if empty:
        return {
            "score": 0.0,
            "score_ref_first": 0.0,
            "score_resp_first": 0.0,
            "position_bias": 0.0,
            "judge_failure_rate": None,
            "judge_out_of_range": None,
        }
    verdict = next((item[role][judge] for role in ROLES if judge in item.get(role, {})), None)
    if verdict is None:  # this judge was not asked (it applies to no role of this sample)
        return dict.fromkeys(PER_JUDGE)
    values = list(verdict.get("values") or []) + [None, None]
    ref_first, resp_first = values[0], values[1]
    both = ref_first is not None and resp_first is not None
    return {
        "score": verdict.get("value"),
        "score_ref_first": ref_first if both else None,
        "score_resp_first": resp_first if both else None,
        "position_bias": (resp_first - ref_first) if both else None,
        "judge_failure_rate": float(verdict.get("value") is None),
        "judge_out_of_range": float(bool(verdict.get("out_of_range"))),
    }
