"""AudioICL-Bench as a dataset card and `audioeval corpora` see it: the paper, licences, the four real corpora
its builder reads, and what each column means."""

from __future__ import annotations

from pathlib import Path

from audioeval.benchmarks.audioicl_bench.sounds.corpora import (
    DistractorCorpus,
    MachineCorpus,
    OneShotCorpus,
    SpokenDigitCorpus,
    check_esc50_listing,
)
from audioeval.data.about import BenchmarkAbout, Corpus, Download
from audioeval.data.builders import standard_feature_descriptions


def _check_osps(root: Path) -> None:
    OneShotCorpus(root).check()


def _check_fsdd(root: Path) -> None:
    SpokenDigitCorpus(root).check()


def _check_esc50(root: Path) -> None:
    DistractorCorpus(root).check()
    check_esc50_listing(root)


def _check_dcase(root: Path) -> None:
    MachineCorpus(root).check()


CORPORA = (
    Corpus(
        name="fsdd",
        title="Free Spoken Digit Dataset",
        builder_args=("fsdd_dir",),
        used_for="AudioOperator, AudioOperatorHard: the spoken digits (speaker jackson, as in the paper)",
        home="https://github.com/Jakobovski/free-spoken-digit-dataset",
        license="cc-by-sa-4.0",
        license_note="Creative Commons Attribution-ShareAlike 4.0; attribute Zohar Jackson and the FSDD contributors",
        layout="ROOT/recordings/<digit>_<speaker>_<take>.wav (or the WAV files directly in ROOT): 3,000 files, "
        "6 speakers x 10 digits x 50 takes, 8 kHz mono",
        check=_check_fsdd,
        download=Download(
            kind="github",
            repo="Jakobovski/free-spoken-digit-dataset",
            ref="26eb9aaf76e81b692f806f9140c2d2777410d7a1",
            subdir="recordings",
            # sha256 over "<file>\t<sha256>\n" lines of the 3,000 recordings at that commit
            content_sha256="8dac6ce326e419e9fcfadedf2e4a67d6c08a40968c34bb8fa2b4e27d74753d5a",
        ),
        download_note="the recordings at commit 26eb9aa (v1.0.10 + 27 commits), checked against their pinned "
        "SHA-256 digest",
    ),
    Corpus(
        name="osps",
        title="One-Shot Percussive Sounds",
        builder_args=("osps_dir",),
        used_for="AudioCount(Hard), AudioLength(Hard), AudioRemap, the AudioOperator(Hard) operator sounds",
        home="https://zenodo.org/record/3665275",
        license="other",
        license_note="Freesound one-shots, each under its own Freesound licence (CC0, CC BY or CC BY-NC), "
        "listed per sound in the corpus's licenses.json",
        layout="ROOT/1..5/<id>.wav (any audio file below ROOT is used; files named MIX__* are skipped)",
        check=_check_osps,
        download=Download(kind="zenodo", repo="3665275", ref="3665275"),
        download_note="every file of the Zenodo record, checked against the record's MD5 sums",
    ),
    Corpus(
        name="esc50",
        title="ESC-50",
        builder_args=("esc50_dir",),
        used_for="AudioCountHard: the background sounds (classes 0-10: nine animals, insects, rain)",
        home="https://github.com/karolpiczak/ESC-50",
        license="cc-by-nc-3.0",
        license_note="Creative Commons Attribution-NonCommercial 3.0; clips from freesound.org",
        layout="ROOT/audio/<fold>-<clip>-<take>-<target>.wav with ROOT/meta/esc50.csv listing them",
        check=_check_esc50,
        download=Download(kind="github", repo="karolpiczak/ESC-50", ref="master"),
        download_note="the repository publishes no checksums: the download is checked against the file list in "
        "meta/esc50.csv (every listed clip present and readable)",
    ),
    Corpus(
        name="dcase",
        title="DCASE 2023-2025 Task 2 development sets (ToyADMOS2 / MIMII DG)",
        builder_args=("dcase_dir",),
        used_for="AnomalyDetect: normal and anomalous machine recordings",
        home="https://dcase.community (Task 2: anomalous sound detection for machine condition monitoring)",
        license="unknown",
        license_note="stated on each year's development-set Zenodo record; check the record you download",
        layout="ROOT/<machine>/{train,test}/section_XX_..._{normal|anomaly}_....wav (one folder per machine type)",
        check=_check_dcase,
        download_note="published as one Zenodo archive per machine type and year: download the machine types you "
        "want from the DCASE page and unpack them side by side under ROOT",
    ),
)

CITATION = """@inproceedings{chen2026audioiclbench,
  title     = {{AudioICL-Bench}: A Benchmark for Large Audio Language Model In-Context Learning},
  author    = {Chen, Jia-Hung and Lin, Yi-Cheng and Chang, Kai-Wei and Lu, Ke-Han and Lee, Hung-Yi},
  booktitle = {Proc. Interspeech 2026},
  year      = {2026},
  note      = {Code: https://github.com/robert0518/AudioICL-Bench}
}"""

FEATURES = standard_feature_descriptions(
    metadata="JSON: the facts that justify the label (the episode's rule, e.g. the operator mapping or the "
    "letter assignment; each clip's source: procedural recipe, or the corpus file it came from)",
    fields="JSON: facts about this demonstration or the query besides its label (e.g. counts, durations, the "
    "expression)",
)

ABOUT = BenchmarkAbout(
    pretty_name="AudioICL-Bench episodes (audioeval)",
    summary="In-context learning episodes for audio-language models: nine tasks whose rule is resampled every "
    "episode, so the answer can only be learned from the demonstrations (counting, duration, spoken arithmetic "
    "with sound operators, letter remapping, Morse code, machine anomalies), plus the single-letter Morse "
    "ablation. Each row is one episode: reference clips, max_shots demonstrations (a k-shot prompt uses the "
    "first k), the query and its reference answer. Generated by audioeval from procedural sound sources and "
    "eSpeak NG speech, or from local copies of the paper's corpora.",
    paper="Chen, Lin, Chang, Lu and Lee, AudioICL-Bench: A Benchmark for Large Audio Language Model In-Context "
    "Learning, Interspeech 2026",
    citation=CITATION,
    homepage="https://github.com/robert0518/AudioICL-Bench",
    upstream_license="the AudioICL-Bench repository publishes no licence; audioeval re-implements the task design "
    "in its own code and copies none of the upstream data.",
    generated_license="apache-2.0",
    generated_note="audioeval's code (Apache-2.0): procedural sounds, eSpeak NG speech, the shipped word list",
    task_categories=("audio-classification", "audio-text-to-text"),
    languages=("en",),
    tags=("in-context-learning", "benchmark", "few-shot"),
    features=FEATURES,
    corpora=CORPORA,
    path_args=("word_list",),
)
