"""Format compliance for ALICE / Speech-IFEval, per sample.

Closed-ended (and creative-writing) constraints are checked by rule: Speech-IFEval's modified IFEval
checkers, strict and loose (audioeval.benchmarks.alice.checkers). Chain-of-thought compliance is the LLM judge's
`reasoning` verdict; without a judge it is missing (None), never zero.

Inputs: predictions (the responses; the harness passes the raw text as `responses`) and, per sample, the
constraint: from the harness's `sample_info` (episode metadata), or given directly as
`instruction_id_list` (an id or a list of ids per sample) and `instruction_kwargs` (a dict or a list of dicts;
`kwargs` is accepted as its name too, as in Speech-IFEval rows).

Per-sample scores: format_strict, format_loose (1/0/None); for CEQ samples format_strict_<group> for the
four constraint groups (None for the other groups); for CoT samples cot_judge_failed (1 when the judge
failed or gave no readable verdict).
"""

# ruff: noqa: I001  (evaluate needs one import per line in metric modules)
import datasets
import evaluate

from audioeval.benchmarks.alice import constraints as C
from audioeval.benchmarks.alice.checkers import check_response
from audioeval.benchmarks.alice.judging import REASONING
from audioeval.benchmarks.alice.judging import failure_flag
from audioeval.benchmarks.alice.judging import verdict


def _constraint_of(i, sample_info, instruction_id_list, instruction_kwargs):
    if instruction_id_list is not None:
        ids = instruction_id_list[i]
        kwargs = instruction_kwargs[i] if instruction_kwargs is not None else None
        return ids, kwargs
    meta = ((sample_info or [None] * (i + 1))[i] or {}).get("metadata") or {}
    if "instruction_id" not in meta:
        raise ValueError(
            "alice_format_compliance needs each sample's constraint: pass instruction_id_list=[...] (and "
            "instruction_kwargs=[...]) or run it through audioeval, which passes sample_info."
        )
    return meta["instruction_id"], meta.get("kwargs")


class FormatCompliance(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__,
            citation="Speech-IFEval (Lu et al., Interspeech 2025); ALICE (Piao et al., 2026); IFEval (Zhou et al., 2023)",
            inputs_description="predictions: responses; references: unused; plus the constraints per sample",
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
        )

    def _compute(
        self,
        predictions,
        references,
        responses=None,
        sample_info=None,
        judgments=None,
        instruction_id_list=None,
        instruction_kwargs=None,
        kwargs=None,
    ):
        instruction_kwargs = instruction_kwargs if instruction_kwargs is not None else kwargs
        texts = responses if responses is not None else predictions
        n = len(texts)
        strict, loose, judge_failed = [None] * n, [None] * n, [None] * n
        groups = {g: [None] * n for g in C.CEQ_GROUPS}
        any_ceq = any_cot = False
        for i, text in enumerate(texts):
            ids, kwargs = _constraint_of(i, sample_info, instruction_id_list, instruction_kwargs)
            if ids == C.CHAIN_OF_THOUGHT or ids == [C.CHAIN_OF_THOUGHT]:
                any_cot = True
                v = verdict(judgments, i, REASONING)
                strict[i] = loose[i] = v.value
                judge_failed[i] = failure_flag(v)
                continue
            result = check_response(text, ids, kwargs)
            strict[i], loose[i] = float(result.strict), float(result.loose)
            first_id = ids if isinstance(ids, str) else (ids[0] if len(ids) == 1 else None)
            group = C.GROUPS.get(first_id) if first_id else None
            if group in groups:
                any_ceq = True
                groups[group][i] = strict[i]
        out = {"format_strict": strict, "format_loose": loose}
        if any_ceq:
            out.update({f"format_strict_{g}": values for g, values in groups.items()})
        if any_cot:
            out["cot_judge_failed"] = judge_failed
        return out
