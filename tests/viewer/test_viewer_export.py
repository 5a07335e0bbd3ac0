"""`audioeval view RUN_DIR --export DIR`: a static site holding every shown sample and its audio as files."""

from __future__ import annotations

import json
import re
from pathlib import Path

from audioeval.audio.wav import decode_wav
from audioeval.types import AudioClip
from tests.conftest import run_cli


def _data(folder: Path, path: str):
    text = (folder / "data" / f"{path}.js").read_text(encoding="utf-8")
    match = re.fullmatch(r"audioevalData\((\".*?\"), (.*)\);\n", text, flags=re.S)
    assert match and json.loads(match[1]) == path
    return json.loads(match[2])


def test_export_writes_pages_data_and_each_distinct_clip_once(adu_run, tmp_path):
    out = tmp_path / "site"
    code, stdout, err = run_cli(
        ["view", str(adu_run), "--export", str(out), "--limit", "2", "--tasks", "adu_skill"]
    )
    assert code == 0, err
    assert "open it in a browser, no server needed" in stdout
    assert (out / "index.html").is_file() and (out / "static" / "app.js").is_file()
    html = (out / "index.html").read_text()
    assert 'data-mode="static"' in html and "//" not in html.replace("<!doctype html>", "").split("<body")[0]
    samples = _data(out, "run/0/samples")["samples"]
    assert sorted(s["id"] for s in samples) == ["adu_skill/0/0", "adu_skill/1/0"]  # --tasks and --limit
    clips = []
    for s in samples:
        detail = _data(out, f"run/0/sample/{s['id']}")
        clips += [p for m in detail["messages"] for p in m["parts"] if p["type"] == "audio"]
    assert clips and all(p["url"] == f"audio/{p['sha256']}.wav" for p in clips)
    wavs = sorted((out / "audio").iterdir())
    assert [w.name for w in wavs] == sorted({f"{p['sha256']}.wav" for p in clips})
    for wav in wavs:
        samples_, rate = decode_wav(wav.read_bytes())
        assert AudioClip.from_array(samples_, rate).sha256 == wav.stem
    assert (out / "files" / "0" / "adu_bench_domains.png").stat().st_size > 1000
    overview = _data(out, "run/0/overview")["html"]
    assert 'src="files/0/adu_bench_domains.png"' in overview
    assert [r["model"] for r in _data(out, "runs")] == ["openai (lalm)"]


def test_export_refuses_a_folder_with_other_files_and_replaces_an_earlier_export(toy_runs, tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    code, _, err = run_cli(["view", str(toy_runs[0]), "--export", str(busy)])
    assert code == 2 and "is not empty and holds no earlier export" in err
    assert (busy / "notes.txt").read_text() == "mine" and not (busy / "index.html").exists()

    out = tmp_path / "site"
    assert run_cli(["view", *map(str, toy_runs), "--export", str(out)])[0] == 0
    assert _data(out, "run/1/samples")["samples"]
    assert run_cli(["view", str(toy_runs[0]), "--export", str(out), "--limit", "1"])[0] == 0
    assert not (out / "data" / "run" / "1").exists()  # the earlier export's files are gone
    assert {s["episode"] for s in _data(out, "run/0/samples")["samples"]} == {0}


def test_export_of_an_unknown_task_is_refused(toy_runs, tmp_path):
    code, _, err = run_cli(["view", str(toy_runs[0]), "--export", str(tmp_path / "s"), "--tasks", "nope"])
    assert code == 2 and "--tasks nope: not in run" in err and "toy_tones" in err
    assert not (tmp_path / "s").exists()
