"""Regenerate the viewer screenshots in docs/img/: two small AudioICL-Bench runs (dsp-oracle and chance, with
--log_samples), shown by `audioeval view` in headless Chromium (apt-get install -y chromium chromium-driver).

    python scripts/viewer_screenshot.py [--out docs/img]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "img"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="audioeval-screenshot-"))
    os.environ.setdefault("AUDIOEVAL_CACHE", str(work / "cache"))

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: tests/support/browser.py
    from audioeval.run.conductor import RunConfig, run_evaluation
    from audioeval.viewer.run_folder import RunFolder
    from audioeval.viewer.server import ViewerServer
    from audioeval.viewer.site import ServerLinks, Site
    from tests.support.browser import headless_chromium, unavailable_reason

    if unavailable_reason():
        print(f"viewer_screenshot: {unavailable_reason()}", file=sys.stderr)
        return 1
    tasks = "audioicl_audio_remap,audioicl_audio_length,audioicl_audio_count,audioicl_anomaly_detect"
    runs = []
    for model in ("dsp-oracle", "chance"):
        cfg = RunConfig(
            tasks=tasks, model=model, limit="12", output_path=str(work / "results"), log_samples=True
        )
        runs.append(RunFolder.open(run_evaluation(cfg)["run_dir"]))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pages = {
        "viewer.png": (
            "#/samples/0?task=audioicl_anomaly_detect&k=1&sel=audioicl_anomaly_detect/1/1",
            1500,
            1180,
        ),
        "viewer_compare.png": ("#/compare?task=audioicl_audio_count&k=1&ep=1", 1500, 1250),
    }
    with ViewerServer(Site(runs, ServerLinks()), "127.0.0.1", 0) as server:
        for name, (fragment, width, height) in pages.items():
            with headless_chromium(width, height) as driver:
                driver.get(server.url + fragment)
                time.sleep(6)  # the page rebuilds the clips and loads every player
                driver.save_screenshot(str(out / name))
                print(f"viewer_screenshot: wrote {out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
