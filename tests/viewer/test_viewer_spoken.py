"""The viewer on a run whose model answered in speech: each sample's spoken answer plays beside the
conversation, with the model's transcript and the ASR text side by side and the scored one marked; the
audio is served from the run folder's spoken/ files and copied into a static export."""

from __future__ import annotations

from pathlib import Path

import pytest
from viewer_helpers import api, get, serve

from audioeval.run.conductor import RunConfig, run_evaluation
from audioeval.testing.fake_openai import FakeOpenAIServer
from audioeval.viewer.export import export_site
from audioeval.viewer.run_folder import RunFolder
from tests.support.browser import headless_chromium, unavailable_reason

TOY = Path(__file__).resolve().parents[1] / "fixtures" / "toy"


def misheard(wav: bytes, fields: dict) -> str:
    return "hi" if len(wav) % 2 else "lo"


@pytest.fixture(scope="module")
def spoken_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("spoken")
    with FakeOpenAIServer(reply=lambda body: "high") as server:
        server.transcribe = misheard
        cfg = RunConfig(
            tasks="toy_tones",
            model="openai",
            model_args={"model": "gpt-audio", "base_url": server.base_url, "audio_output": True},
            include_path=[str(TOY)],
            limit="2",
            output_path=str(out),
            log_samples=True,
            cache_dir=str(out / "cache"),
            show_progress=False,
            bootstrap_resamples=0,
            asr="openai",
            asr_args={"model": "w", "base_url": server.base_url},
        )
        return Path(run_evaluation(cfg)["run_dir"])


@pytest.mark.slow
def test_the_detail_carries_the_spoken_answer_and_serves_its_audio(spoken_run):
    with serve(spoken_run) as server:
        detail = api(server, "run/0/sample/toy_tones/0/0")
        spoken = detail["spoken"]
        assert (
            spoken["transcript"] == "high"
            and spoken["asr_text"] in ("hi", "lo")
            and spoken["asr"] == "openai"
        )
        assert spoken["scored"] == "asr" and detail["response"] == spoken["asr_text"]
        assert "spoken" not in detail["other"]
        status, headers, body = get(server, "/" + spoken["url"])
        assert status == 200 and headers["Content-Type"] == "audio/wav"
        assert body == (spoken_run / "spoken" / f"{spoken['sha256']}.wav").read_bytes()
        for bad in ("/spoken/0/..%2Fresults.json", "/spoken/0/" + "0" * 64 + ".wav", "/spoken/9/x.wav"):
            assert get(server, bad)[0] == 404, bad


def test_a_missing_audio_file_is_said_not_broken(spoken_run, tmp_path):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(spoken_run, copy)
    shutil.rmtree(copy / "spoken")
    with serve(copy) as server:
        spoken = api(server, "run/0/sample/toy_tones/0/0")["spoken"]
    assert spoken["url"] is None and spoken["transcript"] == "high"


def test_a_static_export_copies_the_spoken_audio(spoken_run, tmp_path):
    export_site([RunFolder.open(spoken_run)], tmp_path / "site")
    names = {p.name for p in (tmp_path / "site" / "spoken").iterdir()}
    assert names == {p.name for p in (spoken_run / "spoken").iterdir()}


@pytest.mark.slow
@pytest.mark.skipif(unavailable_reason() is not None, reason=f"no headless browser: {unavailable_reason()}")
def test_the_browser_plays_the_spoken_answer_beside_both_texts(spoken_run, tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait

    with serve(spoken_run) as server, headless_chromium() as driver:
        driver.get(server.url + "#/samples/0")
        wait = WebDriverWait(driver, 90, poll_frequency=0.1)
        wait.until(lambda d: d.find_elements("css selector", "#sample-list .item"), message="the sample list")
        driver.find_elements("css selector", "#sample-list .item")[0].click()
        wait.until(lambda d: d.find_elements("css selector", ".sample .spoken"), message="the spoken answer")
        decoded, logged = driver.execute_async_script(
            """
            const done = arguments[arguments.length - 1];
            const a = document.querySelector('.spoken audio');
            const seconds = Number(a.closest('.clip').dataset.seconds);
            if (a.readyState >= 1) return done([a.duration, seconds]);
            a.addEventListener('loadedmetadata', () => done([a.duration, seconds]), {once: true});
            a.addEventListener('error', () => done([-1, seconds]), {once: true});
            a.load();
            """
        )
        assert abs(decoded - logged) < 0.002, (decoded, logged)
        transcript = driver.find_element(
            "css selector", ".spoken-transcript"
        ).text.lower()  # headings in capitals
        asr = driver.find_element("css selector", ".spoken-asr").text.lower()
        assert "model's transcript" in transcript and "high" in transcript and "scored" not in transcript
        assert "asr (openai)" in asr and "scored" in asr
        played = driver.execute_async_script(
            """
            const done = arguments[arguments.length - 1];
            const a = document.querySelector('.spoken audio');
            a.play().then(() => setTimeout(() => done(a.currentTime), 300)).catch((e) => done(String(e)));
            """
        )
        assert isinstance(played, float) and played > 0, played
        driver.save_screenshot(str(tmp_path / "spoken.png"))
        driver.save_screenshot("/tmp/viewer_spoken.png")
