"""ALICE as a dataset card and `audioeval corpora` see it: the paper, licences, the Speech-IFEval / ALICE files
its builder reads, and what each column means."""

from __future__ import annotations

from pathlib import Path

from audioeval.benchmarks.alice.layout import SpeechIFEvalData, resolve_paths
from audioeval.benchmarks.alice.source import LocalSource
from audioeval.data.about import BenchmarkAbout, Corpus, Download


def _check_copy(root: Path) -> None:
    """Every evaluation row, every demonstration list the rows need, every audio file decodes."""
    source = LocalSource(SpeechIFEvalData(resolve_paths(root, {}), check_audio=True))
    for category in ("ceq", "cot"):
        source.data.items(category)
    for key in source.pool_keys():
        source.pool_list(key)


CORPORA = (
    Corpus(
        name="alice",
        title="Speech-IFEval / ALICE evaluation files and demonstration pool",
        builder_args=(
            "data_dir",
            "ceq_file",
            "cot_file",
            "test_audio_dir",
            "pool_file",
            "pool_audio_dir",
            "mmau_map_files",
        ),
        used_for="every ALICE task: the 988 test items (813 CEQ, 175 CoT) and the 912 demonstrations",
        home="https://github.com/yenting-biao/MAI-2025-Fall-Final-Project-Group-3 (ALICE's code base: "
        "evaluation files and demonstration pool) + https://huggingface.co/datasets/kehanlu/Speech-IFEval "
        "(audios.tar, the test audio)",
        license="unknown",
        license_note="neither repository states a licence for its data; the audio comes from public corpora "
        "(Speech-IFEval's tasks; ALICE's demonstrations from CREMA-D, Open Database License, and MMAU)",
        layout="ROOT/data/eval_data/{closed_ended_questions,chain-of-thought}_corrected_filtered.jsonl, "
        "ROOT/data/audios/<Task_folder>/..., ROOT/in-context-examples/ICL_examples.json, "
        "ROOT/in-context-examples/audios/, ROOT/in-context-examples/mmau-id2task.json "
        "(see docs/alice.md, Using the real Speech-IFEval / ALICE data)",
        check=_check_copy,
        download=Download(
            kind="github",
            repo="yenting-biao/MAI-2025-Fall-Final-Project-Group-3",
            ref="main",
            parts=(
                (
                    "data",
                    Download(
                        kind="hub",
                        repo="kehanlu/Speech-IFEval",
                        ref="main",
                        allow_patterns=("audios.tar",),
                        extract=("audios.tar",),
                    ),
                ),
            ),
        ),
        download_note="the code repository publishes no checksums (its files are checked row by row, every audio "
        "file decoded); audios.tar is checked against the Hub's SHA-256",
    ),
)

CITATION = """@misc{piao2026alice,
  title         = {{ALICE}: A Multifaceted Evaluation Framework of Large Audio-Language Models' In-Context Learning Ability},
  author        = {Piao, Yen-Ting and Liao, Jay Chiehen and Chien, Wei-Tang and Ogimoto, Toshiki and Chen, Shang-Tse and Chen, Yun-Nung and Lee, Chun-Yi and Lo, Shao-Yuan},
  year          = {2026},
  eprint        = {2603.20433},
  archivePrefix = {arXiv},
  primaryClass  = {cs.SD},
  url           = {https://arxiv.org/abs/2603.20433}
}"""

_SHARED = {
    "task": "asr, ser, gr or mmau (Speech-IFEval's tasks)",
    "category": "ceq (closed-ended format constraint) or cot (chain of thought)",
    "sub_category": "MMAU sub-category (demonstrations are chosen by it); null for other tasks",
    "instruction_id": "the format constraint's id (e.g. change_case:english_capital); null for CoT",
    "audio": "the item's audio, 16-bit PCM WAV",
    "task_text": "the task question",
    "constraint_text": "the format constraint sentence (empty for stage-2/3 style prompts)",
}

FEATURES = {
    **_SHARED,
    "id": "item id (unique within the config)",
    "index": "the item's position in the config (episodes follow it)",
    "kwargs": "JSON: the constraint's arguments, as the rule-based checker reads them",
    "instruction": "task question and constraint sentence as one instruction",
    "label": "the reference answer",
    "choices": "answer options (closed-set tasks); empty for ASR",
    "choices[]": "one answer option",
    "demos": "the item's demonstrations in order (max_shots of them); a k-shot prompt uses the first k",
    "demos[]": "one demonstration",
    "demos[].pool_id": "the demonstration's row in the demo_pool config (its audio is there)",
    "demos[].task_text": "the demonstration's task question",
    "demos[].constraint_text": "the demonstration's constraint sentence, aligned to the item",
    "demos[].answer": "the demonstration's formatted answer (the assistant turn)",
    "metadata": "JSON: the item's facts (constraint, MMAU categories, demonstration ids, shuffle seed, source: "
    "file name and line, or the synthesis recipe)",
    "pool_id": "demonstration id (referenced by demos[].pool_id)",
    "mmau_category": "MMAU category; null for other tasks",
    "answer": "the demonstration's formatted answer",
    "answer_plain": "the demonstration's answer without formatting (the clip's label)",
    "source": "JSON: where the demonstration comes from (pool file path inside the release, or the recipe)",
}

ABOUT = BenchmarkAbout(
    pretty_name="ALICE episodes (audioeval)",
    summary="Audio in-context learning under output-format constraints on Speech-IFEval's tasks (ASR, SER, GR, "
    "MMAU; closed-ended and chain-of-thought constraints). One config per task and category: each row is a test "
    "item with its audio, question, constraint and label, and its ordered demonstration list; `demo_pool` holds "
    "each demonstration once with its audio. Generated by audioeval from its built-in synthetic corpus (eSpeak "
    "NG speech, items written for audioeval), or from a local Speech-IFEval / ALICE copy.",
    paper="Piao, Liao, Chien, Ogimoto, Chen, Chen, Lee and Lo, ALICE: A Multifaceted Evaluation Framework of "
    "Large Audio-Language Models' In-Context Learning Ability, arXiv 2603.20433, 2026",
    citation=CITATION,
    homepage="https://github.com/yenting-biao/ALICE",
    upstream_license="the ALICE repositories publish no licence; audioeval's built-in corpus, prompts and "
    "checkers are its own, and a build from the built-in corpus contains no upstream data.",
    generated_license="apache-2.0",
    generated_note="audioeval's code and built-in corpus (Apache-2.0): items and demonstrations written for "
    "audioeval, spoken with eSpeak NG",
    task_categories=("automatic-speech-recognition", "audio-classification", "audio-text-to-text"),
    languages=("en",),
    tags=("in-context-learning", "instruction-following", "benchmark"),
    features=FEATURES,
    corpora=CORPORA,
)
