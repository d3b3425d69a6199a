"""Count the refusal cells of ``evaluate_scores`` (the issue's "a second pipeline" note).

Two counts: the conformance matrix's cells at the scores door (every family's and
beyond-accuracy metric's sample name x every option set of tests/test_conformance_matrix.py,
seed 0, each name asked alone: refused when it raises ``ReceValError``), and the
no-quiet-number suite's (tests/test_no_quiet_number.py: every case x metric at the
``scores`` door). Run from the repository root on any commit that has both test modules::

    PYTHONPATH=src python benchmarks/scores_refusals.py
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
warnings.simplefilter("ignore")

import test_conformance_matrix as cm  # noqa: E402
import test_no_quiet_number as nq  # noqa: E402

import receval  # noqa: E402


def main() -> None:
    c = cm.case(0)
    extra = {"train": c["train"], "item_features": c["features"]}
    beyond = set(cm.BEYOND_NAMES.values())
    names = [n for ns in cm.FAMILY_NAMES.values() for n in ns] + sorted(beyond)
    cells = refused = 0
    why: dict[str, int] = {}
    for options in cm.OPTION_SETS.values():
        for name in names:
            cells += 1
            try:
                cm.run_door("scores", 0, [name], options, **(extra if name in beyond else {}))
            except receval.ReceValError as err:
                refused += 1
                reason = str(err).split(":")[0].replace(name, "<metric>")[:70]
                why[reason] = why.get(reason, 0) + 1
    print(f"conformance matrix, scores door: {refused} refused of {cells} cells")
    for reason, n in sorted(why.items(), key=lambda kv: -kv[1]):
        print(f"  {n:4d}  {reason}")
    q_refused = sum(len(nq.run(case, "scores")[1]) for case in nq.CASES)
    print(f"no quiet number, scores door: {q_refused} refused of "
          f"{len(nq.CASES) * len(nq.METRICS)} cells")


if __name__ == "__main__":
    main()
