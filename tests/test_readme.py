"""Every code block of the README runs, so the README cannot drift from the code.

Python blocks run in order in one namespace; a line ``expression   # value`` also checks the
value (``...`` in it matches anything, as in a doctest). Shell blocks run line by line with the
installed ``receval`` command, in a folder holding small files under every name the examples
use (``test.csv``, ``run.csv``, ``a.csv``, ``test.qrels``...). The two set-up commands are the
CI's own job, and a block preceded by ``<!-- readme-test: skip (reason) -->`` is not run: the
reason is printed and the number of such blocks is pinned below, so a new one is a decision.
"""

from __future__ import annotations

import doctest
import os
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from receval.exceptions import ReceValWarning

README = Path(__file__).resolve().parents[1] / "README.md"
SETUP_COMMANDS = ("pip install . && receval demo", "bash .ci/run")
SKIP_MARK = re.compile(r"<!-- readme-test: skip \((.+?)\) -->\s*$")
#: blocks marked as not run; change it only with a reason in the README
EXPECTED_SKIPS = 2


def blocks() -> list[tuple[str, str, str | None]]:
    """(language, code, skip reason) for each fenced block of the README."""
    text = README.read_text(encoding="utf-8")
    out = []
    for match in re.finditer(r"```(\w*)\n(.*?)```", text, re.S):
        before = text[: match.start()].rstrip("\n").splitlines()
        skip = SKIP_MARK.match(before[-1]) if before else None
        out.append((match.group(1), match.group(2), skip.group(1) if skip else None))
    return out


def test_the_readme_has_exactly_two_setup_commands_near_the_top() -> None:
    lang, code, _ = blocks()[0]
    commands = [line.split("#")[0].strip() for line in code.splitlines() if line.strip()]
    assert lang == "bash"
    assert commands == list(SETUP_COMMANDS)


def test_skipped_blocks_are_counted() -> None:
    skipped = [reason for _, _, reason in blocks() if reason]
    print("README blocks not run:", skipped)
    assert len(skipped) == EXPECTED_SKIPS


def test_python_blocks_run_and_show_what_they_claim(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_example_files(tmp_path)
    namespace: dict[str, object] = {}
    checker = doctest.OutputChecker()
    python = [code for lang, code, skip in blocks() if lang == "python" and not skip]
    assert python, "the README shows Python"
    for code in python:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            exec(compile(code, str(README), "exec"), namespace)
        # an example that trips one of receval's own warnings teaches the wrong call
        ours = [str(w.message) for w in caught if issubclass(w.category, ReceValWarning)]
        assert not ours, ours
        for line in code.splitlines():
            claim = re.match(r"^(\w[\w.\[\]\"']*)\s+#\s*(\{.*\}|[-\d.]+\.*)\s*$", line)
            if claim is None:
                continue
            shown = repr(eval(claim.group(1), namespace))
            assert checker.check_output(claim.group(2) + "\n", shown + "\n",
                                        doctest.ELLIPSIS), (line, shown)


def shell_commands() -> list[str]:
    commands = []
    for lang, code, skip in blocks()[1:]:
        if lang not in ("bash", "sh", "shell") or skip:
            continue
        joined = code.replace("\\\n", " ")
        for line in joined.splitlines():
            command = line.split(" #")[0].strip()
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


@pytest.mark.parametrize("command", shell_commands())
def test_shell_examples_run(command: str, tmp_path: Path) -> None:
    write_example_files(tmp_path)
    assert shlex.split(command)[0] == "receval", f"not a receval command: {command}"
    # the console script pip installed beside this interpreter, run by a shell as a user would
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr


def write_example_files(folder: Path) -> None:
    """Small truth and prediction files under every name the README's examples use, and each
    ``toml`` block whose first line is ``# NAME.toml...`` as that file (a gate)."""
    for lang, code, _ in blocks():
        named = re.match(r"# ([\w.-]+\.toml)\b", code)
        if lang == "toml" and named:
            (folder / named.group(1)).write_text(code)
    rng = np.random.default_rng(5)
    users = [f"u{u}" for u in range(30)]
    truth_rows, runs = [], {name: [] for name in ("run", "a", "b", "bm25", "dense")}
    for user in users:
        items = rng.choice(80, 25, replace=False)
        for item in items[:6]:
            truth_rows.append((user, f"i{item}", int(rng.integers(1, 6))))
        for rows in runs.values():
            shown = rng.permutation(items)[:20]
            rows.extend((user, f"i{item}", round(float(s), 4))
                        for item, s in zip(shown, rng.random(20), strict=True))
    (folder / "ratings.csv").write_text("userId,movieId,rating\n1,007,4.5\n1,7,2.0\n2,7,5.0\n")
    (folder / "scores.csv").write_text("user,item,prediction\n1,7,0.9\n1,007,0.8\n2,7,0.7\n")
    truth = pd.DataFrame(truth_rows, columns=["user", "item", "rating"])
    truth.to_csv(folder / "test.csv", index=False)
    # an interaction log with times (splits) and training rows (train audit, exclusion)
    log = pd.DataFrame([(user, f"i{item}", int(rng.integers(1, 6)), int(rng.integers(1e9, 2e9)))
                        for user in users for item in rng.choice(80, 15, replace=False)],
                       columns=["user", "item", "rating", "timestamp"])
    log.to_csv(folder / "log.csv", index=False)
    log[["user", "item", "rating"]].to_csv(folder / "train.csv", index=False)
    # served lists and their delayed feedback (monitoring)
    served = pd.DataFrame([(user, f"i{item}", rank, f"2024-01-{day:02d} 09:00")
                           for day in (1, 8, 15) for user in users
                           for rank, item in enumerate(rng.choice(80, 10, replace=False), 1)],
                          columns=["user", "item", "rank", "served_at"])
    served.to_csv(folder / "served.csv", index=False)
    clicks = served.sample(frac=0.2, random_state=5).assign(value=1.0, at=lambda f: (
        pd.to_datetime(f["served_at"]) + pd.Timedelta(hours=3)).astype(str))
    clicks[["user", "item", "value", "at"]].to_csv(folder / "clicks.csv", index=False)
    with open(folder / "test.qrels", "w") as fh:
        for user, item, rating in truth_rows:
            fh.write(f"{user} 0 {item} {int(rating >= 4)}\n")
    for name, rows in runs.items():
        frame = pd.DataFrame(rows, columns=["user", "item", "score"])
        frame.to_csv(folder / f"{name}.csv", index=False)
        with open(folder / f"{name}.run", "w") as fh:
            for user, group in frame.groupby("user", sort=True):
                ranked = group.sort_values("score", ascending=False)
                for rank, (item, score) in enumerate(zip(ranked["item"], ranked["score"],
                                                         strict=True), 1):
                    fh.write(f"{user} Q0 {item} {rank} {score} {name}\n")
