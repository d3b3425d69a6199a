"""Every document the project points at is in the repository (issue 19.9): the relative links of
README.md and docs/*.md, and every ``*.md`` file named in those, in pyproject.toml and in the
source (docstrings and comments), resolved from the naming file's folder or the repository
root."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCES = sorted((ROOT / "src" / "receval").rglob("*.py"))
#: a markdown link or image: [text](target) / ![alt](target)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
#: a document named in text: SEMANTICS.md, docs/spark.md, ../x/y.md
NAMED = re.compile(r"(?<![\w/.-])((?:\.{1,2}/)?[\w.-]+(?:/[\w.-]+)*\.md)\b")


def _exists(target: str, base: Path) -> bool:
    return (base / target).exists() or (ROOT / target).exists()


def _relative_links(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks hold no links
    out = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
            continue  # https:, mailto:, an anchor in the same page
        out.append(target.split("#", 1)[0])
    return out


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_relative_links_of_the_docs_exist(path: Path) -> None:
    missing = [t for t in _relative_links(path) if not _exists(t, path.parent)]
    assert not missing, f"{path.relative_to(ROOT)} links to missing files: {missing}"


@pytest.mark.parametrize("path", [*DOCS, ROOT / "pyproject.toml", *SOURCES],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_named_document_exists(path: Path) -> None:
    named = set(NAMED.findall(path.read_text(encoding="utf-8")))
    missing = sorted(n for n in named if not _exists(n, path.parent))
    assert not missing, f"{path.relative_to(ROOT)} names missing documents: {missing}"


def test_the_checks_see_the_references() -> None:
    """The patterns find what they must (a test that could not fail would prove nothing)."""
    assert _relative_links(ROOT / "README.md")  # README links docs/*.md
    assert "docs/semantics.md" in NAMED.findall((ROOT / "src/receval/options.py").read_text())
    assert NAMED.findall("see SEMANTICS.md section 2") == ["SEMANTICS.md"]
    assert not _exists("SEMANTICS.md", ROOT / "src" / "receval")
