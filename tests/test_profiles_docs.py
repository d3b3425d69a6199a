"""docs/profiles.md lists every profile and its switches: the table between the
``profile-switches`` markers is the profiles' own options (those that differ from receval's
defaults), per-family and pinned options and beyond-accuracy bundle, so a profile added or
changed without its row fails here."""

from __future__ import annotations

from pathlib import Path

from receval.beyond.settings import PROFILES as BEYOND_PROFILES
from receval.beyond.settings import BeyondOptions
from receval.options import Options
from receval.profiles import PROFILES

DOC = Path(__file__).parent.parent / "docs" / "profiles.md"


def _options(opts: dict) -> str:
    default = Options()
    shown = [f"`{k}={v!r}`" for k, v in opts.items()
             if getattr(default, k) != v
             and not (k == "precision_denominator" and v == "k" and opts.get("score_threshold")
                      is None)]
    return ", ".join(shown) or "-"


def _families(per: dict) -> str:
    return "; ".join(f"{fam}: " + ", ".join(f"`{k}={v!r}`" for k, v in o.items())
                     for fam, o in per.items()) or "-"


def switch_rows() -> list[str]:
    """The table's rows, one per profile, from the code."""
    rows = []
    base = BeyondOptions()
    for name in sorted(PROFILES):
        p = PROFILES[name]
        b = BEYOND_PROFILES.get(name)
        beyond = "-" if b is None else ", ".join(
            f"`{f}={getattr(b, f)!r}`" for f in BeyondOptions.__dataclass_fields__
            if getattr(b, f) != getattr(base, f))
        rows.append(f"| `{name}` | {p.version} | {_options(dict(p.options))} | "
                    f"{_families(dict(p.per_family))} | {_families(dict(p.pinned))} | {beyond} |")
    return rows


def test_docs_list_every_profile_and_its_switches() -> None:
    text = DOC.read_text()
    block = text.split("<!-- profile-switches:start -->")[1].split(
        "<!-- profile-switches:end -->")[0]
    documented = [line for line in block.strip().splitlines()[2:]]
    assert documented == switch_rows(), "\n".join(switch_rows())
