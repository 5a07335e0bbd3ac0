"""AudioICL-Bench's builder configs, listed once. The builder, the episode seeds, the baselines and the tests
read this table; the task YAML files are `tasks/audioicl_bench/audioicl_<config>.yaml`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ConfigSpec:
    task_id: int  # part of every episode's seed: never renumber
    family: str  # the generator module of this package that builds its episodes
    sources: tuple[str, ...]  # the builder arguments naming the folders it may read
    # `--augment` transforms that would make its label false (see EpisodeBuilder.augmentation_refusal)
    label_changing: dict[str, str] = field(default_factory=dict)


_DROPOUT = {"time_mask_fraction": "a dropout can silence part of what the label counts or spells"}

CONFIGS: dict[str, ConfigSpec] = {
    "audio_count": ConfigSpec(1, "count", ("osps_dir",), _DROPOUT),
    "audio_count_hard": ConfigSpec(2, "count", ("osps_dir", "esc50_dir"), _DROPOUT),
    "audio_length": ConfigSpec(
        3,
        "length",
        ("osps_dir",),
        {"time_stretch_rate": "the label is the clip's duration, which a time stretch changes"},
    ),
    "audio_length_hard": ConfigSpec(
        4,
        "length",
        ("osps_dir",),
        {
            "time_stretch_rate": "the label is the non-silent duration, which a time stretch changes",
            "time_mask_fraction": "the label is the non-silent duration, which a dropout shortens",
        },
    ),
    "audio_operator": ConfigSpec(5, "operator", ("osps_dir", "fsdd_dir"), _DROPOUT),
    "audio_operator_hard": ConfigSpec(6, "operator", ("osps_dir", "fsdd_dir"), _DROPOUT),
    "audio_remap": ConfigSpec(7, "remap", ("osps_dir",), _DROPOUT),
    "morse_code": ConfigSpec(8, "morse", ("word_list",), _DROPOUT),
    "anomaly_detect": ConfigSpec(9, "anomaly", ("dcase_dir",)),
    "morse_letter": ConfigSpec(10, "morse", (), _DROPOUT),
}


def configs_of(family: str) -> tuple[str, ...]:
    """The configs one generator family builds, e.g. configs_of("count") -> audio_count, audio_count_hard."""
    return tuple(name for name, spec in CONFIGS.items() if spec.family == family)
