"""End to end in a real headless browser (Debian's chromium + chromedriver, driven by selenium): open runs of
the three benchmarks, filter, play clips (each <audio> loads and lasts as long as its clip), compare two runs,
see a changed builder's clips marked, and open a static export from disk."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from viewer_helpers import serve

from tests.conftest import run_cli
from tests.support.browser import headless_chromium, unavailable_reason

REASON = unavailable_reason()
pytestmark = [
    pytest.mark.skipif(REASON is not None, reason=f"no headless browser: {REASON}"),
    pytest.mark.slow,
]
WAIT_S = 90


def wait(driver, condition, what: str):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_S, poll_frequency=0.1).until(lambda d: condition(d), message=what)


def text_of(driver, css: str) -> str:
    found = driver.find_elements("css selector", css)
    return found[0].text if found else ""


def choose(driver, select_id: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element("id", select_id)).select_by_value(value)


def count_shown(driver) -> int:
    """The list's sample count; -1 while the page has not drawn it yet (the wait polls again)."""
    shown = text_of(driver, "#match-count").split(" of ")[0]
    return int(shown) if shown.isdigit() else -1


def clip_durations(driver) -> list[tuple[float, float]]:
    """(duration the browser decoded, seconds the sample log gives) of every playable clip on the page."""
    return driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const audios = [...document.querySelectorAll('#main .clip.ok audio')];
        const ready = (a) => new Promise((resolve, reject) => {
          if (a.readyState >= 1) return resolve();
          a.addEventListener('loadedmetadata', resolve, {once: true});
          a.addEventListener('error', () => reject(a.src), {once: true});
          a.load();
        });
        Promise.all(audios.map(ready))
          .then(() => done(audios.map((a) => [a.duration, Number(a.closest('.clip').dataset.seconds)])))
          .catch((src) => done('failed to load ' + src));
        """
    )


def play_first_clip(driver) -> list:
    return driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const a = document.querySelector('#main .clip.ok audio');
        a.play().then(() => setTimeout(() => done([a.currentTime, a.error]), 400)).catch((e) => done([-1, String(e)]));
        """
    )


def open_first_sample(driver) -> None:
    driver.find_elements("css selector", "#sample-list .item")[0].click()
    wait(driver, lambda d: d.find_elements("css selector", ".sample .msg"), "the sample's conversation")


def assert_clips_play(driver) -> int:
    durations = clip_durations(driver)
    assert isinstance(durations, list) and durations, durations
    for decoded, logged in durations:
        assert abs(decoded - logged) < 0.002, durations
    # each player's clock counts tenths of a second, so a clip under a second does not read 0:00
    clocks = [e.text for e in driver.find_elements("css selector", "#main .clip.ok .clock")]
    lengths = [float(c.split(" / ")[1].removesuffix(" s")) for c in clocks]
    assert len(lengths) == len(durations), clocks
    assert all(
        abs(shown - logged) <= 0.05 + 1e-9 for shown, (_, logged) in zip(lengths, durations, strict=True)
    ), clocks
    position, error = play_first_clip(driver)
    assert error is None and position > 0, (position, error)
    return len(durations)


def test_open_filter_listen_and_compare_runs_of_all_three_benchmarks(
    audioicl_runs, alice_run, adu_run, tmp_path
):
    with serve(*audioicl_runs, alice_run, adu_run) as server, headless_chromium() as driver:
        # overview: the report's table and its plot
        driver.get(server.url + "#/overview/0")
        wait(driver, lambda d: "dsp-oracle" in text_of(d, ".run-head h2"), "the overview")
        assert "AudioICL-Bench" in text_of(driver, ".report h2")
        # the plot loads after the page: wait for the image to finish (or fail) before measuring it
        figure = (
            "const i = document.querySelector('.figures img'); return i ? [i.complete, i.naturalWidth] : null"
        )
        wait(driver, lambda d: (d.execute_script(figure) or [False])[0], "the plot image")
        assert driver.execute_script(figure)[1] > 100

        # samples: filter by task, k and outcome; open one; every clip loads with its length; play one
        driver.get(server.url + "#/samples/0")
        wait(driver, lambda d: text_of(d, "#match-count") == "18 of 18 samples", "the sample list")
        choose(driver, "filter-task", "audioicl_audio_remap")
        wait(driver, lambda d: count_shown(d) == 9, "the task filter")
        choose(driver, "filter-k", "3")
        wait(driver, lambda d: count_shown(d) == 3, "the k filter")
        choose(driver, "filter-outcome", "correct")
        wait(driver, lambda d: 0 <= count_shown(d) <= 3, "the outcome filter")
        assert all("✓" in item.text for item in driver.find_elements("css selector", "#sample-list .item"))
        assert "outcome=correct" in driver.current_url and "k=3" in driver.current_url
        if count_shown(driver) == 0:
            choose(driver, "filter-outcome", "")
        open_first_sample(driver)
        assert "k = 3" in text_of(driver, ".detail-head h2")
        assert assert_clips_play(driver) == 12  # three demos and the query, three clips each
        places = [e.text for e in driver.find_elements("css selector", ".sample .clip .place")]
        assert places[:3] == ["DEMO 1 · A", "DEMO 1 · B", "DEMO 1 · MIX"] and places[-1] == "QUERY · MIX"
        driver.save_screenshot(str(tmp_path / "samples.png"))

        # ALICE: system turn, demo and query with labels; the constraint facet
        driver.get(server.url + "#/samples/2")
        wait(driver, lambda d: count_shown(d) > 0, "the ALICE samples")
        constraint = driver.find_elements("css selector", "#filter-f\\.instruction_id option")[
            1
        ].get_attribute("value")
        choose(driver, "filter-f.instruction_id", constraint)
        wait(driver, lambda d: 0 < count_shown(d) < 16, "the constraint facet")
        open_first_sample(driver)
        assert [e.text for e in driver.find_elements("css selector", ".sample .msg .role")][0] == "SYSTEM"
        assert_clips_play(driver)

        # ADU-Bench: filter the judge failures, see the judge's raw replies
        driver.get(server.url + "#/samples/3")
        wait(driver, lambda d: count_shown(d) == 8, "the ADU-Bench samples")
        choose(driver, "filter-judge", "yes")
        wait(driver, lambda d: 0 < count_shown(d) < 8, "the judge failure filter")
        open_first_sample(driver)
        verdicts = text_of(driver, "table.verdicts")
        assert "judge-x" in verdicts and "failed" in verdicts and "I would rather not say." in verdicts
        assert_clips_play(driver)
        choose(driver, "filter-judge", "")
        choose(driver, "filter-f.domain", "daily_question")
        wait(
            driver,
            lambda d: (
                count_shown(d) >= 1
                and all(
                    "adu_general" in i.text for i in d.find_elements("css selector", "#sample-list .item")
                )
            ),
            "the domain facet",
        )

        # compare: shot scaling across the two AudioICL-Bench runs, the same episode side by side
        driver.get(server.url + "#/compare?task=audioicl_audio_length&k=1")
        wait(
            driver,
            lambda d: len(d.find_elements("css selector", "#side-by-side .col")) == 2,
            "the side-by-side view",
        )
        columns = driver.find_elements("css selector", "#side-by-side .col")
        assert "dsp-oracle" in columns[0].text and "chance" in columns[1].text
        assert all("RESPONSE" in c.text for c in columns)
        charts = driver.find_elements("css selector", "#shot-scaling .chart")
        names = [c.find_element("css selector", "figcaption").text for c in charts]
        assert any(n.startswith("audioicl_audio_length") for n in names)
        length_chart = charts[[n.startswith("audioicl_audio_length") for n in names].index(True)]
        assert len(length_chart.find_elements("css selector", "g.series")) == 2  # one line per run
        # accuracy is a proportion: drawn in %, 0 to 100, as every table shows it
        assert length_chart.find_element("css selector", "figcaption").text.endswith("accuracy (%)")
        assert "100" in [t.text for t in length_chart.find_elements("css selector", "text.tick")]
        assert_clips_play(driver)
        driver.save_screenshot(str(tmp_path / "compare.png"))
        problems = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not problems, problems


def test_a_changed_builder_is_marked_in_the_page(toy_runs, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(toy_runs[0], run)
    results = json.loads((run / "results.json").read_text())
    for block in results["configs"].values():
        block["config"]["builder_kwargs"]["seed"] = 777
    (run / "results.json").write_text(json.dumps(results))
    with serve(run) as server, headless_chromium() as driver:
        driver.get(server.url + "#/samples/0?sel=toy_tones/1/1")
        wait(driver, lambda d: d.find_elements("css selector", ".clip.missing"), "the marked clips")
        marks = [e.text for e in driver.find_elements("css selector", ".clip.missing .why")]
        assert marks and all(m == "⚠ cannot be regenerated (sha256 differs)" for m in marks)
        assert not driver.find_elements("css selector", ".sample audio")
        assert "cannot be played" in text_of(driver, ".audio-bad")


def test_a_static_export_opens_from_disk(audioicl_runs, tmp_path):
    out = tmp_path / "site"
    code, _, err = run_cli(["view", *map(str, audioicl_runs), "--export", str(out), "--limit", "2"])
    assert code == 0, err
    with headless_chromium() as driver:
        driver.get((out / "index.html").as_uri() + "#/samples/1")
        wait(driver, lambda d: text_of(d, "#match-count") == "12 of 12 samples", "the exported samples")
        choose(driver, "filter-task", "audioicl_audio_length")
        wait(driver, lambda d: count_shown(d) == 6, "the task filter")
        open_first_sample(driver)
        assert assert_clips_play(driver) >= 1
        driver.get((out / "index.html").as_uri() + "#/compare")
        wait(
            driver,
            lambda d: len(d.find_elements("css selector", "#side-by-side .col")) == 2,
            "the exported compare view",
        )
        driver.get((out / "index.html").as_uri() + "#/overview/0")
        wait(
            driver,
            lambda d: d.execute_script(
                "const i = document.querySelector('.figures img'); return i && i.naturalWidth"
            ),
            "the report plot",
        )
        assert Path(out / "files" / "0" / "audioicl_shot_scaling.png").is_file()
