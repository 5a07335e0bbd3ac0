"""ADU-Bench (Gao et al., "Benchmarking Open-ended Audio Dialogue Understanding for Large Audio-Language
Models"): its taxonomy, query files, audio rendering, the ADU-Bench folder layout and human agreement.

The episode builder is `datasets_builders/adu_bench/adu_bench.py`, the tasks are under `tasks/adu_bench/`,
the judge metric is `metrics/adu_bench_judge_score/` and the report is `audioeval.benchmarks.adu_bench.report`.
"""
