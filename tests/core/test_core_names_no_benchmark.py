"""The core names no benchmark: a benchmark is added by a wing under audioeval.benchmarks, its tasks/,
datasets_builders/ and metrics/ folders (or one --include_path folder), never by editing the core."""

from __future__ import annotations

import re
from pathlib import Path

from audioeval.data.builders import builder_names
from audioeval.hooks import WINGS_PACKAGE, wing_modules
from audioeval.models.registry import CORE_BACKENDS, backends

SRC = Path(__file__).resolve().parents[2] / "src" / "audioeval"
# benchmark-specific code lives in the wings, their baselines included; everything else is the core
NOT_CORE = ("benchmarks",)


def core_files() -> list[Path]:
    return [
        p
        for p in sorted(SRC.rglob("*"))
        if p.suffix in {".py", ".html", ".js", ".css"} and p.relative_to(SRC).parts[0] not in NOT_CORE
    ]


def test_no_core_file_names_a_benchmark_or_a_wing():
    wings = {m.split(".")[2] for m in wing_modules("about")}
    assert {"alice", "audioicl_bench", "adu_bench"} <= wings  # the check below looks for real names
    core_backends = set(backends()) - {"chance", "demo-majority", "knn-icl"} - set(CORE_BACKENDS)
    names = (
        wings
        | set(builder_names())
        | core_backends
        | {"ADU-Bench", "AudioICL-Bench", "ALICE", "audioicl", "adu"}
    )
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(names)) + r")\b", re.IGNORECASE)
    found = [
        f"{p.relative_to(SRC)}:{i}: {line.strip()}"
        for p in core_files()
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1)
        if pattern.search(line)
    ]
    assert not found, "\n".join(found)


def test_no_core_module_imports_a_wing():
    imports = re.compile(rf"^\s*(from|import)\s+{re.escape(WINGS_PACKAGE)}\b", re.MULTILINE)
    assert [p for p in core_files() if imports.search(p.read_text(encoding="utf-8"))] == []
