"""Metric-name parsing: aliases, cutoffs, comma lists, and helpful errors."""

import pytest

from receval import parse_metric, parse_metrics
from receval.exceptions import ReceValError
from receval.measures.spec import Family


@pytest.mark.parametrize(
    ("name", "family", "k"),
    [
        ("P@10", Family.PRECISION, 10),
        ("precision@10", Family.PRECISION, 10),
        ("R@10", Family.RECALL, 10),
        ("recall@5", Family.RECALL, 5),
        ("F1@10", Family.FBETA, 10),
        ("AP@10", Family.AP, 10),
        ("MAP@10", Family.AP, 10),
        ("map", Family.AP, None),
        ("nDCG@10", Family.NDCG, 10),
        ("NDCG@3", Family.NDCG, 3),
        ("RR@10", Family.RR, 10),
        ("MRR@10", Family.RR, 10),
        ("MRR", Family.RR, None),
        ("Hit@10", Family.HIT, 10),
        ("HitRate@10", Family.HIT, 10),
        ("success@1", Family.HIT, 1),
        ("Rprec", Family.RPREC, None),
        ("R-precision", Family.RPREC, None),
        ("RMSE", Family.RMSE, None),
        ("mae", Family.MAE, None),
    ],
)
def test_aliases(name: str, family: Family, k: int | None) -> None:
    spec = parse_metric(name)
    assert (spec.family, spec.k, spec.name) == (family, k, name)


def test_fbeta_beta_is_parsed() -> None:
    assert parse_metric("F0.5@10").beta == 0.5
    assert parse_metric("F2@5").beta == 2.0
    assert parse_metric("F1@5").canonical == "F1@5"


def test_comma_list_expands_in_order() -> None:
    assert [s.name for s in parse_metrics("P@5,10,20")] == ["P@5", "P@10", "P@20"]


def test_comma_list_mixes_whole_names_and_bare_cutoffs() -> None:
    names = [s.name for s in parse_metrics(["AP@10, nDCG@5,10,MRR", "F0.5@3,4"])]
    assert names == ["AP@10", "nDCG@5", "nDCG@10", "MRR", "F0.5@3", "F0.5@4"]
    assert [s.canonical for s in parse_metrics("MRR,Rprec")] == ["RR", "Rprec"]
    with pytest.raises(ReceValError, match="must be an integer"):
        parse_metrics("P@5,2.5")  # a number after a metric is its cutoff, checked as one


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("P@0", "must be positive"),
        ("P@-3", "must be positive"),
        ("P@2.5", "must be an integer"),
        ("P@ten", "is not an integer"),
        ("P", "needs a cutoff"),
        ("Rprec@10", "takes no cutoff"),
        ("RMSE@5", "takes no cutoff"),
    ],
)
def test_bad_cutoffs(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_metric(name)


def test_unknown_metric_suggests_the_closest() -> None:
    with pytest.raises(ValueError, match=r"unknown metric 'nDGC@10'; did you mean 'ndcg@10'\?"):
        parse_metric("nDGC@10")


def test_duplicate_and_empty_requests_are_errors() -> None:
    with pytest.raises(ValueError, match="requested twice"):
        parse_metrics(["P@10", "P@10"])
    with pytest.raises(ValueError, match="no metric requested"):
        parse_metrics([])
