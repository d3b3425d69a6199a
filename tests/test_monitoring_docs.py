"""docs/monitoring.md, section "Variants": its Python blocks run in order in one namespace, and
a line ``expression  # (value, ...)`` checks the value (the numbers the text quotes)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "monitoring.md"


def _section_blocks() -> list[str]:
    text = DOC.read_text()
    start = text.index("## Variants")
    end = text.index("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end], re.S)


def test_the_variants_section_runs_and_its_numbers_hold() -> None:
    blocks = _section_blocks()
    assert len(blocks) == 2
    namespace: dict[str, object] = {}
    claims = 0
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), namespace)
        for line in code.splitlines():
            claim = re.match(r"^(\S.*?)\s+#\s*(\(.*\))\s*$", line)
            if claim:
                assert repr(eval(claim.group(1), namespace)) == claim.group(2), line
                claims += 1
    assert claims == 5
