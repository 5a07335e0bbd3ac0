"""ALICE task performance, per sample: ASR word errors (for corpus WER) and SER/GR/MMAU accuracy.

Closed-ended (CEQ) responses are scored by rule: the item's format is undone (audioeval.benchmarks.alice.extract),
then ASR is compared with the reference after ALICE's A-Z normalizer, and SER/GR/MMAU answers are matched
to the label (last emotion / gender word, or exact normalised match). Chain-of-thought (CoT) responses are
scored through the LLM judge: ASR uses the transcript the judge extracted (Whisper's basic normalizer;
a response that ends in a repetition loop counts as an empty transcript), SER/GR/MMAU use the judge's
verdict on whether the answer matches the label. Without a judge, CoT scores are missing (None).

Inputs: predictions (responses; the harness passes the raw text as `responses`), references (labels), and
per sample the task, category and constraint — from `sample_info` (episode metadata) or given as
`tasks` (asr/ser/gr/mmau or Speech-IFEval dataset names), `categories` (ceq/cot; default: ceq unless the
id is "chain-of-thought"), `instruction_id_list` and `instruction_kwargs` (or `kwargs`, as in Speech-IFEval
rows).

`scoring`: "fixed" (default) or "upstream" — undo formats and match answers exactly as ALICE's
evaluation_main.py does, its known bugs included (audioeval.benchmarks.alice.upstream); through audioeval it comes from
the task parameter of the same name.

Per-sample scores: ASR wer_errors and wer_words (aggregate as a ratio: corpus WER), and for CoT ASR
degenerate (1 when the response ended in a loop); others accuracy; for CoT task_judge_failed.
"""

# ruff: noqa: I001  (evaluate needs one import per line in metric modules)
import datasets
import evaluate

from audioeval.benchmarks.alice import constraints as C
from audioeval.benchmarks.alice.extract import answer_matches
from audioeval.benchmarks.alice.extract import extract_answer
from audioeval.benchmarks.alice.judging import ANSWER
from audioeval.benchmarks.alice.judging import TRANSCRIPT
from audioeval.benchmarks.alice.judging import failure_flag
from audioeval.benchmarks.alice.judging import verdict
from audioeval.benchmarks.alice.upstream import answer_matches_upstream
from audioeval.benchmarks.alice.upstream import extract_answer_upstream
from audioeval.benchmarks.alice.upstream import scoring_mode
from audioeval.benchmarks.alice.wer import looks_degenerate
from audioeval.benchmarks.alice.wer import word_errors


def _facts(i, sample_info, tasks, categories, instruction_id_list, instruction_kwargs):
    """(task code, category, instruction id, kwargs) of sample i."""
    meta = {}
    if sample_info is not None:
        meta = (sample_info[i] or {}).get("metadata") or {}
    task = C.task_code(tasks[i] if tasks is not None else meta.get("task"))
    category = categories[i] if categories is not None else meta.get("category")
    iid = instruction_id_list[i] if instruction_id_list is not None else meta.get("instruction_id")
    kwargs = instruction_kwargs[i] if instruction_kwargs is not None else meta.get("kwargs")
    if isinstance(iid, list):
        iid = iid[0] if iid else None
    if isinstance(kwargs, list):
        kwargs = kwargs[0] if kwargs else None
    if task is None:
        given = tasks[i] if tasks is not None else meta.get("task")
        raise ValueError(
            f"alice_task: sample {i} has task {given!r}; pass tasks=[...] with asr/ser/gr/mmau (or Speech-IFEval "
            "dataset names) per sample (audioeval passes it in sample_info)."
        )
    if category is None:
        category = "cot" if iid == C.CHAIN_OF_THOUGHT else "ceq"
    if category not in ("ceq", "cot"):
        raise ValueError(f"alice_task: sample {i} has category {category!r}; expected ceq or cot.")
    if category == "ceq" and iid not in C.CEQ_IDS:
        raise ValueError(
            f"alice_task: CEQ sample {i} has instruction id {iid!r}; expected one of {C.CEQ_IDS}."
        )
    return task, category, iid, kwargs or {}


class AliceTask(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__,
            citation="ALICE (Piao et al., 2026); Speech-IFEval (Lu et al., Interspeech 2025)",
            inputs_description="predictions: responses; references: labels; plus task/category/constraint",
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
        tasks=None,
        categories=None,
        instruction_id_list=None,
        instruction_kwargs=None,
        kwargs=None,
        scoring=None,
    ):
        instruction_kwargs = instruction_kwargs if instruction_kwargs is not None else kwargs
        texts = responses if responses is not None else predictions
        n = len(texts)
        default_mode = scoring_mode(None, scoring or "fixed")
        errors, words, accuracy = [None] * n, [None] * n, [None] * n
        degenerate, judge_failed = [None] * n, [None] * n
        seen = set()
        for i, (text, reference) in enumerate(zip(texts, references, strict=True)):
            task, category, iid, kwargs = _facts(
                i, sample_info, tasks, categories, instruction_id_list, instruction_kwargs
            )
            seen.add((task == "asr", category))
            if category == "ceq":
                info = sample_info[i] if sample_info is not None else None
                if scoring_mode(info, default_mode) == "upstream":
                    answer = extract_answer_upstream(text, iid, kwargs)
                    correct = task != "asr" and answer_matches_upstream(answer, reference)
                else:
                    answer = extract_answer(text, iid, kwargs, task)
                    correct = task != "asr" and answer_matches(answer, reference, task)
                if task == "asr":
                    errors[i], words[i] = word_errors(reference, answer, "alice")
                else:
                    accuracy[i] = float(correct)
                continue
            if task == "asr":
                v = verdict(judgments, i, TRANSCRIPT)
                judge_failed[i] = failure_flag(v)
                degenerate[i] = float(looks_degenerate(text))
                if degenerate[i]:
                    errors[i], words[i] = word_errors(reference, "", "whisper_basic")
                elif v.value is not None:
                    errors[i], words[i] = word_errors(reference, v.value, "whisper_basic")
            else:
                v = verdict(judgments, i, ANSWER)
                judge_failed[i] = failure_flag(v)
                accuracy[i] = v.value
        out = {}
        if any(asr for asr, _ in seen):
            out["wer_errors"], out["wer_words"] = errors, words
        if any(not asr for asr, _ in seen):
            out["accuracy"] = accuracy
        if (True, "cot") in seen:
            out["degenerate"] = degenerate
        if any(category == "cot" for _, category in seen):
            out["task_judge_failed"] = judge_failed
        return out
