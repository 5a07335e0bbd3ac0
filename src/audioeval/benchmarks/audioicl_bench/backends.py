"""AudioICL-Bench's own baselines, registered by name (see audioeval.models.registry)."""

from audioeval.models.registry import Backend

BACKENDS = {
    "dsp-oracle": Backend(
        "audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle:DspOracleModel",
        "AudioICL-Bench: task-aware signal processing, calibrated on the episode's demonstrations (offline)",
    ),
    "shortcut": Backend(
        "audioeval.benchmarks.audioicl_bench.baselines.shortcut:ShortcutModel",
        "AudioICL-Bench: what the episodes give away without analysing the signal (offline)",
    ),
}
