"""`dsp-oracle`: signal-processing reference answers for AudioICL-Bench, one method module per task family
(count, length, arithmetic, remap, morse, anomaly), calibrated on each episode's demonstrations."""

from audioeval.benchmarks.audioicl_bench.baselines.dsp_oracle.model import METHODS, DspOracleModel

__all__ = ["METHODS", "DspOracleModel"]
