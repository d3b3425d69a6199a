"""One check path for every input file (:func:`receval.io.source.check_file`): the small text
inputs read whole (:func:`~receval.io.source.read_text`: gate files) are refused exactly as a
truth file is, an empty file included, and a pipe's errors name the path given, not the
temporary copy the pipe was read into."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from receval.exceptions import ReceValError
from receval.io.source import check_file, read_text


def _both(path: str | Path) -> tuple[str, str]:
    """The error of each reader on ``path`` (side ``gate``)."""
    errors = []
    for read in (check_file, read_text):
        with pytest.raises(ReceValError) as caught:
            read(path, "gate")
        errors.append(str(caught.value))
    return errors[0], errors[1]


@pytest.mark.parametrize(
    ("make", "text"),
    [
        (lambda p: p.write_bytes(b""), "gate file is empty: {p}"),
        (lambda p: p.mkdir(), "gate path is a directory, not a file: {p}"),
        (lambda p: None, "gate file not found: {p}"),
    ],
    ids=["empty", "directory", "missing"],
)
def test_read_text_refuses_what_check_file_refuses(tmp_path: Path, make, text: str) -> None:
    path = tmp_path / "gate.toml"
    make(path)
    first, second = _both(path)
    assert first == second == text.format(p=path)


def test_an_empty_pipe_is_named_by_its_path() -> None:
    r, w = os.pipe()
    os.close(w)  # nothing written: an empty input
    name = f"/dev/fd/{r}"
    try:
        with pytest.raises(ReceValError) as caught:
            read_text(name, "gate")
    finally:
        os.close(r)
    assert str(caught.value) == f"gate file is empty: {name}"


def test_a_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "gate.toml"
    path.write_bytes(b"checks = ['\xff']\n")
    with pytest.raises(ReceValError, match=r"^cannot read gate file .*gate\.toml: .*utf-8"):
        read_text(path, "gate")


def test_a_text_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "gate.toml"
    path.write_text("a = 1\nb = 'é'\n", encoding="utf-8")
    assert read_text(path, "gate") == "a = 1\nb = 'é'\n"
