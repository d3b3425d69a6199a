"""The HTML report: self-contained and offline, every id escaped, rendered by a real browser.

The browser test runs Debian's chromium headless (installed by .ci/run from .ci/apt.txt) and
asserts on the DOM it builds and on a screenshot.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import receval
from receval.cli import main
from receval.report.html import render_report, write_report

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")

EVIL_USER = "<script>alert(1)</script>"
EVIL_ITEM = "<img src=x onerror=\"document.title='pwned'\">"
EVIL_MODEL = "<b>model"  # a file name may hold < and >
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


def _evil_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Users u0..u19 find their item; the evil user finds nothing; everyone gets EVIL_ITEM."""
    rng = np.random.default_rng(4)
    users = [f"u{i}" for i in range(20)] + [EVIL_USER]
    truth = pd.DataFrame({"user": users, "item": [f"i{i}" for i in range(21)]})
    rows = []
    for n, user in enumerate(users):
        own = f"i{n}" if user != EVIL_USER else "i999"
        for item, score in ((own, 2.0), (EVIL_ITEM, 1.0), (f"x{rng.integers(50)}", 0.5)):
            rows.append((user, item, score))
    return truth, pd.DataFrame(rows, columns=["user", "item", "score"])


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report made by the CLI from files holding hostile ids and a hostile model name."""
    folder = tmp_path_factory.mktemp("report")
    truth, preds = _evil_frames()
    truth.to_csv(folder / "truth.csv", index=False)
    preds.to_csv(folder / f"{EVIL_MODEL}.csv", index=False)
    preds.assign(score=-preds["score"]).to_csv(folder / "reverse.csv", index=False)
    out = folder / "report.html"
    result = CliRunner().invoke(main, [
        "evaluate", "-t", str(folder / "truth.csv"), "-p", str(folder / f"{EVIL_MODEL}.csv"),
        "-p", str(folder / "reverse.csv"), "-m", "P@1,2", "-m", "nDCG@3", "-m", "MRR",
        "--report", str(out), "-f", "json",
    ])
    assert result.exit_code == 0, result.output
    return out


def test_report_is_self_contained_and_offline(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "default-src 'none'" in page  # CSP: no script, no remote load
    outside_data = re.sub(r'src="data:[^"]*"', "", page)
    assert not re.search(r"https?://|//cdn|<script|<link|@import|url\(", outside_data)
    images = re.findall(r'<img src="data:image/svg\+xml;base64,[A-Za-z0-9+/=]+"', page)
    assert len(images) >= 4 + 3  # 4 plots, a histogram per ranking metric


def test_every_id_is_escaped(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=&#34;document.title=&#39;pwned&#39;&#34;&gt;" in page
    assert "&lt;b&gt;model" in page
    for raw in (EVIL_USER, EVIL_ITEM, EVIL_MODEL):
        assert raw not in page


def test_report_shows_summary_options_counts(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    for section in ("summary", "plots", "distribution", "lowest", "items", "counts", "options"):
        assert f'<section id="{section}">' in page
    assert "users evaluated 21" in page
    assert ">only in truth<" in page and ">truth dropped duplicates<" in page


def test_python_api_and_notebook_view(tmp_path: Path) -> None:
    truth, preds = _evil_frames()
    result = receval.evaluate(truth, preds, ["P@1", "R@1"])
    page = render_report({"m": result})
    assert "&lt;script&gt;" in page and EVIL_USER not in page
    assert write_report(tmp_path / "sub" / "r.html", result).exists()
    html = result._repr_html_()  # the notebook view lists the first users: the evil one too
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert EVIL_USER not in html and "<table" in html and "P@1" in html


# --- in a real browser -----------------------------------------------------------------------


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("chromium is not installed: apt-get install -y chromium (listed in .ci/apt.txt)")


def _browser(*args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as profile:
        command = [_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args]
        env = dict(os.environ, HOME=profile)
        # timeout: a guard against a hung browser, not an assertion on speed
        return subprocess.run(command, capture_output=True, text=True, timeout=180,
                              check=False, env=env)


def test_chromium_renders_the_dom(report: Path) -> None:
    done = _browser("--dump-dom", report.resolve().as_uri())
    dom = done.stdout
    assert done.returncode == 0 and dom.strip(), done.stderr[-2000:]
    assert "<title>receval report</title>" in dom  # the onerror payload never ran
    assert "pwned" not in re.sub(r"&lt;.*?&gt;", "", dom)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom  # the id shows as text
    assert "<script" not in dom.lower()
    assert dom.count('<img src="data:image/svg+xml;base64,') >= 7
    summary = dom[dom.index('<section id="summary">'):dom.index("</section>")]
    assert "&lt;b&gt;model" in summary and "reverse" in summary and "nDCG@3" in summary


def test_chromium_screenshot(report: Path, tmp_path: Path) -> None:
    import matplotlib.image as mpimg

    shot = tmp_path / "report.png"
    done = _browser(f"--screenshot={shot}", "--window-size=1200,1600",
                    report.resolve().as_uri())
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 30_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1200, 1600)
    pixels = mpimg.imread(shot)
    # text and plots, not a blank page: many distinct colours, mostly light background
    assert len(np.unique(pixels.reshape(-1, pixels.shape[-1])[::7], axis=0)) > 50
    assert pixels[..., :3].mean() > 0.7
