"""The report's curves evaluate cutoffs only as deep as the lists go (issue 12: report speed)."""

from __future__ import annotations

import pyarrow as pa

from receval.cli.common import _within_depth
from receval.report.models import curve_ks, with_curves


def test_curve_cutoffs_stop_at_the_first_one_past_the_deepest_list() -> None:
    users = [u for u in range(5) for _ in range(20)] + [9] * 3  # deepest list: 20 items
    preds = pa.table({"user": users, "item": list(range(len(users)))})
    asked = ["P@10", "nDCG@10", "P@500"]
    wanted = with_curves(asked, curve_ks(asked, 1000))
    kept = _within_depth(wanted, asked, preds)
    extra = [n for n in kept if n not in asked]
    # 1..20 for both P and R (20 is a curve cutoff), nothing deeper; asked names all kept
    assert sorted({int(n.split("@")[1]) for n in extra}) == list(range(1, 21))
    assert [n for n in kept if n in asked] == asked
    # 33 items: the first curve cutoff at or past it is 40 (dense 1..30, then 40, 50, ...)
    deeper = pa.table({"user": [0] * 33, "item": list(range(33))})
    assert max(int(n.split("@")[1]) for n in _within_depth(wanted, asked, deeper)
               if n not in asked) == 40


def test_without_curve_extras_nothing_changes() -> None:
    preds = pa.table({"user": [1, 1], "item": [1, 2]})
    assert _within_depth(["P@10", "R@50"], ["P@10", "R@50"], preds) == ["P@10", "R@50"]


def test_plot_differences_gets_the_asked_metrics_and_seed(tmp_path, monkeypatch) -> None:
    from click.testing import CliRunner

    from receval.cli import main
    from receval.report import plots

    (tmp_path / "t.csv").write_text("user,item\n1,1\n2,2\n")
    for name in ("a", "b"):
        (tmp_path / f"{name}.csv").write_text("user,item,score\n1,1,0.9\n1,2,0.5\n2,2,0.4\n")
    seen: dict[str, object] = {}
    monkeypatch.setattr(plots, "plot", lambda results, kind, path, **kw: seen.update(kw, kind=kind))
    out = CliRunner().invoke(main, ["plot", "-t", str(tmp_path / "t.csv"), "-p",
                                    str(tmp_path / "a.csv"), "-p", str(tmp_path / "b.csv"),
                                    "--kind", "differences", "-m", "P@1", "-m", "MRR",
                                    "--seed", "3", "-o", str(tmp_path / "d.png")])
    assert out.exit_code == 0, out.output
    assert seen == {"kind": "differences", "metrics": ["P@1", "MRR"], "seed": 3}
