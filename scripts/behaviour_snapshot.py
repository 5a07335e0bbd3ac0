"""Record what every benchmark produces on the offline baselines, and compare two recordings.

A refactoring must not change behaviour: record before, record after, compare.

    python scripts/behaviour_snapshot.py record /tmp/before
    python scripts/behaviour_snapshot.py record /tmp/after
    python scripts/behaviour_snapshot.py compare /tmp/before /tmp/after

`record` runs each benchmark (small limits, `--log_samples --no_cache --seed 0`) on offline baselines, plus
ADU-Bench and the toy benchmark with an `openai` model and judge answering from a local fake server whose
replies depend only on the request. `compare` diffs every results.json and samples file, leaving out what
legitimately differs between two runs (dates, timings, versions, the git commit, absolute paths, latencies);
keys present on one side only are listed separately, so a step that adds keys says which.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "fixtures" / "toy"
PORT = 18931  # fixed: the judge's and model's identity includes the URL

COMMON = ["--log_samples", "--no_cache", "--seed", "0", "--bootstrap_iters", "200", "--no_progress"]
OPENAI = ["--model", "openai", "--model_args", f"model=fake-audio,base_url=http://127.0.0.1:{PORT}/v1"]
JUDGE = ["--judge", "openai", "--judge_args", f"model=fake-judge,base_url=http://127.0.0.1:{PORT}/v1"]
RUNS: dict[str, list[str]] = {
    "audioicl_dsp_oracle": ["--tasks", "audioicl_bench", "--model", "dsp-oracle", "--limit", "3"],
    "audioicl_shortcut": ["--tasks", "audioicl_bench", "--model", "shortcut", "--limit", "2"],
    "audioicl_knn": [
        "--tasks",
        "audioicl_audio_count,audioicl_morse_code",
        "--model",
        "knn-icl",
        "--limit",
        "3",
    ],
    "alice_chance": ["--tasks", "alice", "--model", "chance", "--limit", "2"],
    "alice_demo_majority": ["--tasks", "alice_stage1", "--model", "demo-majority", "--limit", "2"],
    "adu_openai_judged": ["--tasks", "adu_bench", "--limit", "2", *OPENAI, *JUDGE],
    "toy_openai_judged": [
        "--include_path",
        str(TOY),
        "--tasks",
        "toy_bench",
        "--limit",
        "3",
        *OPENAI,
        *JUDGE,
    ],
}
VOLATILE = {
    "date",
    "git_commit",
    "versions",
    "timing",
    "run_dir",
    "latency_s",
    "latency",
    "cached",
    "builder_file",
    "path",
    "reports",
    "elapsed_s",
}


def fake_reply(body: dict[str, Any]) -> str:
    """A reply that depends only on the request: a score and a YES/NO for judges, a short answer otherwise."""
    digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()
    n = int(digest[:8], 16)
    return f"answer {digest[:6]} {n % 10}. Result: {'YES' if n % 2 else 'NO'}. Rating: [[{n % 11}]]"


def record(out: Path) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from audioeval.testing.fake_openai import FakeOpenAIServer

    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OPENAI_API_KEY": "sk-fake", "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    with FakeOpenAIServer(reply=fake_reply, port=PORT):
        for name, args in RUNS.items():
            cmd = [sys.executable, "-m", "audioeval", *args, *COMMON, "--output_path", str(out / name)]
            done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
            (out / f"{name}.log").write_text(done.stdout + done.stderr)
            print(f"{name}: exit {done.returncode}", flush=True)


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, str) and str(ROOT) in value:
        return value.replace(str(ROOT), "<root>")
    return value


def _diff(a: Any, b: Any, where: str, changed: list[str], added: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a:
                added.append(f"{where}.{key} (after only)")
            elif key not in b:
                added.append(f"{where}.{key} (before only)")
            else:
                _diff(a[key], b[key], f"{where}.{key}", changed, added)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{where}[{i}]", changed, added)
    elif a != b:
        changed.append(f"{where}: {json.dumps(a)[:160]} -> {json.dumps(b)[:160]}")


def _outputs(run_root: Path) -> dict[str, Any]:
    runs = sorted(p.parent for p in run_root.glob("*/*/results.json"))
    if not runs:
        return {}
    run = runs[-1]
    found: dict[str, Any] = {"results.json": _clean(json.loads((run / "results.json").read_text()))}
    for samples in sorted(run.glob("samples_*.jsonl")):
        lines = samples.read_text().splitlines()
        found[samples.name] = [_clean(json.loads(line)) for line in lines]
    return found


def compare(before: Path, after: Path) -> int:
    changed: list[str] = []
    added: list[str] = []
    for name in RUNS:
        a, b = _outputs(before / name), _outputs(after / name)
        if not a or not b:
            changed.append(f"{name}: no results on {'before' if not a else 'after'} side")
            continue
        _diff(a, b, name, changed, added)
    for line in added:
        print("key  ", line)
    for line in changed:
        print("DIFF ", line)
    print(f"{len(changed)} difference(s), {len(added)} key(s) on one side only")
    return 1 if changed else 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("record").add_argument("out", type=Path)
    cmp = sub.add_parser("compare")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "record":
        record(args.out)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
