"""A non-editable install carries tasks/, datasets_builders/ and metrics/ inside the package and adds no
generic top-level `tasks` or `metrics` modules to site-packages."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_carries_resources_and_runs_from_any_directory(tmp_path):
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheel_dir), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = wheel_dir.glob("audioeval-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {n.split("/")[0] for n in names}
    assert top_level <= {"audioeval", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}
    for folder in ("tasks", "metrics", "datasets_builders"):
        shipped = {
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }
        assert shipped, folder
        assert {f"audioeval/_resources/{name}" for name in shipped} <= set(names)
    viewer = ROOT / "src" / "audioeval" / "viewer"
    assets = {
        p.relative_to(ROOT / "src").as_posix()
        for d in ("static", "templates")
        for p in (viewer / d).iterdir()
    }
    assert assets and assets <= set(names)  # the viewer's page, script and styles travel in the wheel
    # audioeval.testing ships the stand-in servers only; the suite's helpers stay in the checkout
    testing = {Path(n).stem for n in names if n.startswith("audioeval/testing/")}
    assert {"fake_openai", "fake_realtime"} <= testing
    assert not [t for t in testing if t.startswith(("tiny", "browser", "vllm"))], testing
    assert any(n.endswith((".dist-info/licenses/LICENSE", ".dist-info/LICENSE")) for n in names)

    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    assert not (target / "tasks").exists() and not (target / "metrics").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    probe = subprocess.run(
        [sys.executable, "-c", "import audioeval.resources as r; print(r.resource_root())"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip() == str(target / "audioeval" / "_resources")
    listing = subprocess.run(
        [sys.executable, "-m", "audioeval", "--tasks", "list"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert listing.returncode == 0, listing.stderr
