"""``--propensity``, ``--debias`` and ``--propensity-clip`` of ``receval evaluate`` and
``receval compare``: the debiased metrics of :mod:`receval.debias`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from receval.exceptions import ReceValError


def parse_propensity(text: str | None) -> Any:
    """The ``propensity=`` of :func:`receval.evaluate` from the flag's text.

    Example:
        >>> parse_propensity("popularity:1.5"), parse_propensity("popularity:estimate")
        (('popularity', 1.5), ('popularity', 'estimate'))
        >>> parse_propensity("uniform"), parse_propensity("p_obs")
        ('uniform', 'p_obs')
    """
    if text is None or text == "uniform":
        return text
    if text == "popularity" or text.startswith("popularity:"):
        gamma = text.partition(":")[2]
        if gamma == "estimate":
            return ("popularity", "estimate")
        try:
            return ("popularity", float(gamma))
        except ValueError:
            raise ReceValError(f"--propensity {text}: write popularity:GAMMA (a number, e.g. "
                               "popularity:1.5) or popularity:estimate") from None
    return text


def with_propensity_column(truth: Any, path: Any, truth_format: str, params: dict[str, Any],
                           reading: dict[str, Any]) -> Any:
    """``truth`` (an Arrow table) with the file's ``--propensity COLUMN`` beside it (the
    reader keeps only user, item and rating), read as the truth was read."""
    from receval import io
    from receval.io.wanted import parse_columns_flag

    wanted = parse_propensity(params.get("propensity"))
    if not isinstance(wanted, str) or wanted == "uniform" or wanted in truth.column_names:
        return truth
    columns = dict(parse_columns_flag(params.get("truth_columns"), "truth") or {})
    columns["rating"] = wanted
    extra = io.read_truth(path, format=truth_format, user_col=params["user_col"],
                          item_col=params["item_col"], rating_col=wanted, columns=columns,
                          **reading)
    if "rating" not in extra.column_names or extra.num_rows != truth.num_rows:
        raise ReceValError(f"--propensity {wanted}: the truth file {path} has no column "
                           f"{wanted!r} to read propensities from")
    return truth.append_column(wanted, extra.column("rating"))


def check_one_gamma(params: dict[str, Any]) -> None:
    """Refuse ``--propensity popularity:estimate`` with several ``--predictions``: gamma would
    be fitted to each model's own lists, and the significance letters would compare models
    weighed differently (``receval compare`` refuses it with any number of models).

    Example:
        >>> check_one_gamma({"propensity": "popularity:estimate", "predictions": ["a.csv"]})
        >>> check_one_gamma({"propensity": "popularity:estimate",
        ...                  "predictions": ["a.csv", "b.csv"]})
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: --propensity popularity:estimate with 2 \
--predictions files would fit gamma to each model's own lists and compare models weighed \
differently: evaluate one with it, then pass --propensity popularity:G with the gamma its \
options line shows
    """
    paths = list(params.get("predictions") or ())
    if params.get("propensity") == "popularity:estimate" and len(paths) > 1:
        raise ReceValError(f"--propensity popularity:estimate with {len(paths)} --predictions "
                           "files would fit gamma to each model's own lists and compare models "
                           "weighed differently: evaluate one with it, then pass --propensity "
                           "popularity:G with the gamma its options line shows")


def debias_kwargs(params: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of :func:`receval.evaluate` the three flags give (none unset).

    Example:
        >>> debias_kwargs({"debias": "snips", "propensity": "popularity:2"})
        {'debias': 'snips', 'propensity': ('popularity', 2.0)}
    """
    out: dict[str, Any] = {}
    if params.get("debias"):
        out["debias"] = params["debias"]
    if params.get("propensity"):
        out["propensity"] = parse_propensity(params["propensity"])
    if params.get("propensity_clip") is not None:
        out["propensity_clip"] = params["propensity_clip"]
    return out


def debias_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The three flags, for a command whose ``params`` reach ``_semantics``."""
    f = click.option("--propensity-clip", type=float, default=None, metavar="W",
                     help="With --debias: clip every weight 1/propensity at W.")(f)
    f = click.option("--debias", type=click.Choice(["ips", "snips"]), default=None,
                     help="Debiased P, R, nDCG, AP, RBP and hit rate (Yang et al. 2018): each "
                          "relevant item weighted by 1/propensity; snips self-normalises per "
                          "user (inside each metric's range), ips may exceed it (marked).")(f)
    return click.option("--propensity", default=None,
                        metavar="uniform|popularity:G|popularity:estimate|COLUMN",
                        help="With --debias: the propensity of each relevant truth row: "
                             "uniform, item popularity in --train to the power (G+1)/2 "
                             "(G fitted with popularity:estimate), or a truth column.")(f)
