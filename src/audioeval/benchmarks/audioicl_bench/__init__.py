"""AudioICL-Bench episode generators: one module per task family, all pure functions of
(settings, index). The dataset builder in datasets_builders/audioicl_bench wires them to `datasets`."""
