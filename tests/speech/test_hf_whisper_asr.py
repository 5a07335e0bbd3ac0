"""`--asr hf`: a Whisper checkpoint (a tiny random one built here) hears the spoken answers through
transformers' pipeline, on the serving path: cached, the same text for the same audio."""

from __future__ import annotations

import sqlite3

import pytest

from tests.conftest import latest_run, load_results, load_samples, run_cli
from tests.speech.speech_helpers import toy_run_args

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny_whisper(tmp_path_factory):
    from tests.support.tiny_whisper import build_tiny_whisper

    return build_tiny_whisper(tmp_path_factory.mktemp("tiny_whisper"))


def _run(tmp_path, name: str, whisper, cache: str | None = None):
    args = toy_run_args(
        tmp_path / name, tmp_path / (cache or name), "tts", "text_model=chance",
        "--asr", "hf", "--asr_args", f"pretrained={whisper},max_new_tokens=4,batch=2", "--limit", "2",
    )  # fmt: skip
    code, _out, err = run_cli(args)
    assert code == 0, err
    return latest_run(tmp_path / name)


@pytest.mark.slow
def test_a_local_whisper_hears_the_answers_the_same_way_every_time(tmp_path, tiny_whisper):
    first, second = _run(tmp_path, "a", tiny_whisper), _run(tmp_path, "b", tiny_whisper)
    speech = load_results(first)["speech"]
    assert speech["asr"] == "hf" and speech["asr_identity"]["max_new_tokens"] == 4
    heard = [
        (s["spoken"]["audio"]["sha256"], s["spoken"]["asr_text"]) for s in load_samples(first, "toy_tones")
    ]
    assert heard == [
        (s["spoken"]["audio"]["sha256"], s["spoken"]["asr_text"]) for s in load_samples(second, "toy_tones")
    ]
    assert all(isinstance(text, str) for _, text in heard)
    with sqlite3.connect(tmp_path / "a" / "responses.sqlite") as db:
        asr_entries = db.execute("SELECT COUNT(*) FROM responses WHERE kind = 'asr'").fetchone()[0]
    assert asr_entries == len({sha for sha, _ in heard})


@pytest.mark.slow
def test_a_rerun_asks_the_checkpoint_nothing(tmp_path, tiny_whisper):
    _run(tmp_path, "a", tiny_whisper)
    again = _run(tmp_path, "again", tiny_whisper, cache="a")
    assert load_results(again)["timing"]["endpoints"]["asr hf"]["requests"] == 0


def test_a_folder_that_is_not_a_checkpoint_is_one_clear_line(tmp_path):
    (tmp_path / "empty").mkdir()
    args = toy_run_args(tmp_path / "o", tmp_path / "c", "tts", "text_model=chance", "--asr", "hf",
                        "--asr_args", f"pretrained={tmp_path / 'empty'}")  # fmt: skip
    code, _out, err = run_cli(args)
    assert code == 2 and "--asr hf: --asr_args pretrained=" in err and "Traceback" not in err, err
