"""From ids to codes: the :class:`~receval.beyond.context.Context` and the lists of an
evaluation (:func:`from_evaluation`), the item features table (:func:`read_features`) and a
public helper over a frame of ranked lists (:func:`beyond_metrics`).

Items are coded afresh over the union of the listed items, the truth's, the training data's
and the features' (integer and text ids of different sources are compared as text).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from receval.beyond.compute import compute
from receval.beyond.context import Context, context
from receval.beyond.groups import read_groups
from receval.beyond.names import BeyondSpec, split_metrics
from receval.beyond.settings import PROFILES, BeyondOptions, resolve
from receval.beyond.tied_exposure import needs_scores
from receval.exceptions import ReceValError


def plain_ids(ids: Any) -> np.ndarray:
    """Ids as a numpy array: int64 for integers, else objects.

    Example:
        >>> plain_ids(pa.array(["a", "b"])).tolist(), plain_ids([3, 4]).dtype
        (['a', 'b'], dtype('int64'))
    """
    if isinstance(ids, pa.ChunkedArray):
        ids = ids.combine_chunks()
    if isinstance(ids, pa.DictionaryArray):
        ids = ids.dictionary_decode()
    if isinstance(ids, pa.Array):
        ids = ids.to_numpy(zero_copy_only=False)
    arr = np.asarray(ids)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    if arr.dtype.kind == "b" or arr.dtype.kind == "f":
        return arr
    return arr.astype(object)


def _one_space(arrays: list[np.ndarray]) -> list[np.ndarray]:
    kinds = {a.dtype.kind == "O" for a in arrays if len(a)}
    if len(kinds) > 1:  # integers and text: compare as text
        return [a.astype(str).astype(object) for a in arrays]
    return arrays


def read_features(item_features: Any, item_col: str = "item", *,
                  columns: Mapping[str, str] | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``(item ids, (n, F) float matrix)`` from the item features: a path (read by
    :func:`receval.io.features.read_item_features`, as the command line reads it), a frame
    or a dict. The one place that says what the values mean, for files and frames alike.

    ``columns`` (``item_features_columns``: ``{"item": "movieId", "features": "genres"}``)
    names the item column (default ``item_col``) and the feature column. Without a feature
    column named, the columns besides the item are: numeric columns (an embedding per row),
    or exactly one column of vectors, categories or lists of categories; several candidate
    columns that are not all numeric are an error naming ``item_features_columns``, never a
    silent pick. A dict maps item -> vector (embedding) or item -> category / list of
    categories. Categories become a multi-hot row; a text value ``"a|b"`` is the categories
    ``a`` and ``b`` (MovieLens genres); several rows of one item add categories.

    Example:
        >>> ids, m = read_features({"a": ["x", "y"], "b": "y"})
        >>> ids.tolist(), m.tolist()
        (['a', 'b'], [[1.0, 1.0], [0.0, 1.0]])
        >>> read_features(pd.DataFrame({"item": [1, 2], "f0": [0.5, 1.0], "f1": [1, 0]}))[1]
        array([[0.5, 1. ],
               [1. , 0. ]])
        >>> read_features(pd.DataFrame({"item": [1, 2], "genres": ["x|y", "y"]}))[1].tolist()
        [[1.0, 1.0], [0.0, 1.0]]
    """
    ids, matrix, _ = _read_features(item_features, item_col, columns)
    return ids, matrix


def _read_features(item_features: Any, item_col: str, columns: Mapping[str, str] | None
                   ) -> tuple[np.ndarray, np.ndarray, list[Any] | None]:
    # read_features plus the categories of the columns (None: an embedding)
    from receval.io.features import features_columns, read_item_features

    item_col, feature = features_columns(columns, item_col)
    if isinstance(item_features, str | Path):
        table = read_item_features(item_features, columns={"item": item_col, **(
            {"features": feature} if feature is not None else {})})
        item_features, item_col = table.to_pandas(), "item"
    if isinstance(item_features, Mapping):
        frame = pd.DataFrame({item_col: list(item_features.keys()),
                              "features": list(item_features.values())})
    elif isinstance(item_features, pd.DataFrame):
        frame = item_features
    else:
        raise ReceValError(f"item_features must be a path, a DataFrame or a dict item -> "
                           f"features; got {type(item_features).__name__}")
    if item_col not in frame.columns:
        raise ReceValError(f"item_features has no column {item_col!r} (columns: "
                           f"{', '.join(map(str, frame.columns))}); name it with "
                           f"item_features_columns={{'item': NAME}} / --item-features-columns "
                           f"item=NAME")
    if feature is not None and feature not in frame.columns:
        raise ReceValError(f"item_features has no column {feature!r} (columns: "
                           f"{', '.join(map(str, frame.columns))})")
    others = [feature] if feature is not None else [c for c in frame.columns if c != item_col]
    if not others:
        raise ReceValError("item_features has no feature column besides the item")
    numeric = all(pd.api.types.is_numeric_dtype(frame[c]) for c in others)
    if len(others) > 1 and not numeric:
        raise ReceValError(
            f"item_features has {len(others)} candidate feature columns "
            f"({', '.join(map(repr, others))}): name the one to use with "
            f"item_features_columns={{'features': NAME}} / --item-features-columns features=NAME")
    ids = plain_ids(frame[item_col].to_numpy())
    if numeric and (len(others) > 1 or not frame[others[0]].map(np.ndim).any()):
        matrix = frame[others].to_numpy(dtype=np.float64)
        return (*_unique_items(ids, matrix, "embedding"), None)
    col = frame[others[0]]
    first = next((v for v in col if v is not None), None)
    if isinstance(first, np.ndarray | list | tuple) and len(first) and all(
            isinstance(x, int | float | np.number) for x in first):
        try:
            matrix = np.vstack([np.asarray(v, dtype=np.float64) for v in col])
        except ValueError:
            raise ReceValError("item_features: the vectors differ in length") from None
        return (*_unique_items(ids, matrix, "embedding"), None)
    # categories: one per row, or a list per row
    rows, cats = [], []
    for r, v in enumerate(col):
        values = v if isinstance(v, list | tuple | np.ndarray | set) else \
            v.split("|") if isinstance(v, str) else [v]
        for c in values:
            if c is None or c == "" or (isinstance(c, float) and np.isnan(c)):
                continue
            rows.append(r)
            cats.append(c)
    cat_codes, cat_names = pd.factorize(pd.Series(cats, dtype=object))
    item_codes, uniq = pd.factorize(pd.Series(ids, dtype=ids.dtype))
    matrix = np.zeros((len(uniq), len(cat_names)), dtype=np.float64)
    if rows:
        matrix[item_codes[np.asarray(rows)], cat_codes] = 1.0
    return plain_ids(np.asarray(uniq)), matrix, list(cat_names)


def feature_groups(item_features: Any, item_col: str = "item", *,
                   columns: Mapping[str, str] | None = None
                   ) -> tuple[np.ndarray, np.ndarray, tuple[Any, ...]]:
    """The item groups of the fairness and calibration metrics when no ``item_groups=`` is
    given: the categories of ``item_features``, read as :func:`read_features` reads them
    (a path, ``item_features_columns``, ``"a|b"`` as two categories), in
    :func:`receval.beyond.groups.read_groups`' form ``(item ids, alignment, group names)``.

    Example:
        >>> ids, align, names = feature_groups(pd.DataFrame({"item": [1, 2, 3],
        ...                                                   "genres": ["x|y", "y", ""]}))
        >>> ids.tolist(), align.tolist(), names
        ([1, 2, 3], [[0.5, 0.5], [0.0, 1.0], [0.0, 0.0]], ('x', 'y'))
    """
    ids, matrix, categories = _read_features(item_features, item_col, columns)
    if categories is None:
        raise ReceValError("item groups: item_features holds numbers (an embedding), not "
                           "categories; pass item_groups= (item -> group)")
    return read_groups({item: [categories[j] for j in np.flatnonzero(row)]
                        for item, row in zip(ids.tolist(), matrix, strict=True)})


def _unique_items(ids: np.ndarray, matrix: np.ndarray, what: str
                  ) -> tuple[np.ndarray, np.ndarray]:
    codes, uniq = pd.factorize(pd.Series(ids, dtype=ids.dtype))
    if len(uniq) != len(ids):
        dup = np.flatnonzero(np.bincount(codes) > 1)
        raise ReceValError(f"item_features: item {plain_ids(np.asarray(uniq))[dup[0]]!r} has "
                           f"two {what} rows ({len(dup)} items repeated)")
    return ids, matrix


def _catalogue_mask(option: str, n: int, train_codes: np.ndarray, truth_codes: np.ndarray,
                    feature_codes: np.ndarray | None, listed: np.ndarray) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    if option == "features":
        if feature_codes is None:
            raise ReceValError("catalogue='features' needs item_features=")
        mask[feature_codes] = True
    elif option == "recommended":
        mask[listed] = True
    else:
        mask[train_codes] = True
        if option == "train+truth":
            mask[truth_codes] = True
    return mask


@dataclass(frozen=True)
class Popularity:
    """The training popularity of the whole training data, for an evaluation that holds only
    part of it (a Spark partition: each user's own training rows): per item id its training
    rows and distinct training users, and the totals. :func:`build` takes it in place of the
    counts of ``train`` (each user's training items still come from ``train``)."""

    items: list[Any]
    interactions: list[int]
    users: list[int]
    n_interactions: int
    n_train_users: int


def features_needed(specs: Iterable[BeyondSpec], options: BeyondOptions) -> bool:
    """Whether a metric of ``specs`` reads the item features (diversity, serendipity: the
    item similarity; the catalogue ``"features"``).

    Example:
        >>> from receval.beyond.names import parse_beyond
        >>> features_needed([parse_beyond("AWRF@5")], BeyondOptions())
        False
        >>> features_needed([parse_beyond("ILD@5")], BeyondOptions())
        True
    """
    return options.catalogue == "features" or any(
        s.metric in ("diversity", "serendipity") for s in specs)


def build(
    top_codes: np.ndarray,
    n_list: np.ndarray,
    decode: Callable[[np.ndarray], Any],
    row_users: Any,
    truth: tuple[np.ndarray, np.ndarray] | None,
    train: tuple[Any, Any] | None,
    item_features: Any,
    options: BeyondOptions,
    *,
    item_col: str = "item",
    truth_items: np.ndarray | None = None,
    features_columns: Mapping[str, str] | None = None,
    item_groups: Any = None,
    groups_needed: bool = False,
    features_needed: bool = True,
    popularity: Popularity | None = None,
    catalogue: Any = None,
) -> tuple[np.ndarray, Context]:
    """Recode an evaluation's lists into a fresh item space and build its context.

    ``top_codes`` (``(U, K)``) and ``truth`` (a per-row CSR ``(indptr, codes)`` of each row's
    relevant items) hold codes that ``decode`` turns into ids; the first ``n_list`` entries
    of each row are the list (``-1`` can be a real id); ``row_users`` the rows' user ids;
    ``train`` ``(user ids, item ids)``. ``truth_items``: the codes of every truth item,
    relevant or not (the catalogue ``train+truth`` takes them, so it does not move with the
    relevance threshold); by default the relevant ones of ``truth``. ``groups_needed``: read
    the item groups (``item_groups``: :func:`receval.beyond.groups.read_groups`, else the
    categories of ``item_features``: :func:`feature_groups`). ``features_needed=False``
    (no metric reads the features) with ``item_groups`` naming a column of
    ``item_features`` leaves the other columns unread. ``popularity``: the whole training
    data's counts (:class:`Popularity`), which replace those of ``train``; ``catalogue``:
    the catalogue's item ids, which replace the ``options.catalogue`` set.

    Example:
        >>> ids = np.array(["x", "y", "z"], dtype=object)
        >>> top, ctx = build(np.array([[0, 2], [1, 0]]), np.array([2, 1]), lambda c: ids[c],
        ...                  np.array(["a", "b"], dtype=object), None,
        ...                  (np.array(["a", "c"]), np.array(["x", "w"])), None,
        ...                  BeyondOptions())
        >>> top.tolist(), ctx.n_items, ctx.interactions.tolist()
        ([[0, 2], [1, -1]], 4, [1, 0, 0, 1])
    """
    top_codes = np.asarray(top_codes, dtype=np.int64)
    n_rows, width = top_codes.shape
    valid = np.arange(width)[None, :] < np.minimum(np.asarray(n_list), width)[:, None]
    t_ptr = truth[0] if truth is not None else np.zeros(n_rows + 1, np.int64)
    t_codes = np.asarray(truth[1] if truth is not None else [], dtype=np.int64)
    all_truth = t_codes if truth_items is None else np.asarray(truth_items, dtype=np.int64)
    shown = top_codes[valid]
    every = np.concatenate([shown, t_codes, all_truth])
    lo = int(every.min()) if len(every) else 0
    span = int(every.max()) - lo + 1 if len(every) else 0
    dense = span <= 4 * len(every) + 1_000_000  # codes from a dense dictionary: a table
    if dense:
        uniq = np.flatnonzero(np.bincount(every - lo, minlength=span)) + lo
    else:
        uniq = np.unique(every)
    uniq_ids = plain_ids(decode(uniq)) if len(uniq) else np.zeros(0, np.int64)
    train_users = train_items = None
    if train is not None:
        train_users, train_items = plain_ids(train[0]), plain_ids(train[1])
    # item_groups="genre" of a frame with other columns: those are read only when needed
    read_feats = item_features is not None and (features_needed
                                                or not isinstance(item_groups, str))
    feat_ids, feat_matrix = (read_features(item_features, item_col, columns=features_columns)
                             if read_feats else (None, None))
    group_ids = group_align = None
    group_names: tuple[Any, ...] = ()
    if groups_needed and item_groups is None and item_features is not None:
        group_ids, group_align, group_names = feature_groups(item_features, item_col,
                                                             columns=features_columns)
    elif groups_needed:
        group_ids, group_align, group_names = read_groups(item_groups, item_features, item_col)
    parts = [uniq_ids] + ([train_items] if train_items is not None else []) + (
        [feat_ids] if feat_ids is not None else []) + (
        [group_ids] if group_ids is not None else [])
    if popularity is not None:
        parts.append(plain_ids(np.asarray(popularity.items, dtype=object)))
    if catalogue is not None:
        parts.append(plain_ids(np.asarray(catalogue, dtype=object)))
    parts = _one_space(parts)
    _, space = pd.factorize(pd.Series(np.concatenate(parts) if len(parts) > 1 else parts[0],
                                      dtype=object))
    index = pd.Index(space)
    n_items = len(index)
    my_uniq = index.get_indexer(parts[0])
    top = np.full((n_rows, width), -1, dtype=np.int64)
    if dense:
        table = np.full(span, -1, dtype=np.int64)
        table[uniq - lo] = my_uniq

        def recode(codes: np.ndarray) -> np.ndarray:
            return table[codes - lo]
    else:
        def recode(codes: np.ndarray) -> np.ndarray:
            return my_uniq[np.searchsorted(uniq, codes)]
    top[valid] = recode(shown)
    truth_mine = recode(t_codes) if len(t_codes) else t_codes
    catalogue_truth = recode(all_truth) if len(all_truth) else all_truth
    pos = 1
    t_user_codes = t_item_codes = None
    row_train = None
    if train_items is not None and train_users is not None:
        t_item_codes = index.get_indexer(parts[pos])
        pos += 1
        users_all = _one_space([plain_ids(row_users), train_users])
        u_codes, u_space = pd.factorize(pd.Series(users_all[1], dtype=object))
        t_user_codes = u_codes.astype(np.int64)
        row_train = pd.Index(u_space).get_indexer(users_all[0]).astype(np.int64)
    features = None
    feat_codes = None
    if feat_ids is not None and feat_matrix is not None:
        feat_codes = index.get_indexer(parts[pos])
        features = np.zeros((n_items, feat_matrix.shape[1]), dtype=np.float64)
        features[feat_codes] = feat_matrix
        pos += 1
    mask = _catalogue_mask(options.catalogue, n_items,
                           t_item_codes if t_item_codes is not None else np.zeros(0, np.int64),
                           catalogue_truth, feat_codes, top[valid])
    ctx = context(t_user_codes, t_item_codes, n_items, row_users=row_train,
                  truth=(np.asarray(t_ptr, np.int64), truth_mine) if truth is not None
                  else None, features=features, catalogue=mask)
    if group_ids is not None and group_align is not None:
        ctx.groups = np.zeros((n_items, group_align.shape[1]), dtype=np.float64)
        ctx.groups[index.get_indexer(parts[pos])] = group_align
        ctx.group_names = group_names
        pos += 1
    if popularity is not None:
        codes = index.get_indexer(parts[pos])
        ctx.interactions = np.zeros(n_items, dtype=np.int64)
        ctx.interactions[codes] = np.asarray(popularity.interactions, dtype=np.int64)
        ctx.users = np.zeros(n_items, dtype=np.int64)
        ctx.users[codes] = np.asarray(popularity.users, dtype=np.int64)
        ctx.n_interactions, ctx.n_train_users = (popularity.n_interactions,
                                                 popularity.n_train_users)
        pos += 1
    if catalogue is not None:
        ctx.catalogue = np.zeros(n_items, dtype=bool)
        ctx.catalogue[index.get_indexer(parts[pos])] = True
    return top, ctx


def beyond_metrics(
    lists: pd.DataFrame,
    metrics: str | Iterable[str],
    *,
    train: Any = None,
    truth: pd.DataFrame | None = None,
    item_features: Any = None,
    beyond: BeyondOptions | Mapping[str, Any] | None = None,
    profile: str | None = None,
    user_col: str = "user",
    item_col: str = "item",
    score_col: str = "score",
    item_features_columns: Mapping[str, str] | None = None,
    item_groups: Any = None,
) -> tuple[dict[str, float], pd.DataFrame]:
    """Beyond-accuracy metrics of ranked lists given as a frame, without an evaluation:
    ``(summary, per_user)``.

    ``lists`` has ``user_col``, ``item_col`` and ``score_col`` (higher first; equal scores
    keep their input order) or a ``rank`` column (1 best). ``train`` and ``truth`` are frames
    of (user, item) rows; ``item_features`` and ``item_features_columns`` as
    :func:`receval.evaluate` takes them. Per-user metrics average over the users of ``lists``
    (undefined values skipped); catalogue ones are in the summary only. ``item_groups`` are
    the item groups of the fairness and calibration metrics, as :func:`receval.evaluate` takes
    them.

    Example:
        >>> lists = pd.DataFrame({"user": [1, 1, 2, 2], "item": [10, 11, 10, 12],
        ...                       "score": [2.0, 1.0, 2.0, 1.0]})
        >>> train = pd.DataFrame({"user": [1, 2, 3], "item": [10, 10, 11]})
        >>> summary, per_user = beyond_metrics(lists, ["coverage@2", "ARP@2"], train=train)
        >>> summary
        {'coverage@2': 1.0, 'ARP@2': 1.25}
    """
    if profile is not None and str(profile).strip().lower() not in PROFILES:
        # an unknown (or accuracy-only) profile would change nothing here: say so
        raise ReceValError(f"profile {profile!r} has no beyond-accuracy switches; the tools "
                           f"that have: {', '.join(sorted(PROFILES))}")
    opts = resolve(profile, beyond)
    accuracy, specs, _ = split_metrics(metrics)
    if needs_scores(specs, opts.ee_ties):
        raise ReceValError("beyond ee_ties='permute' reads the scores of every scored item: "
                           "use receval.evaluate (receval evaluate) for it")
    if accuracy:
        raise ReceValError(f"{accuracy[0]!r} is not a beyond-accuracy metric; use "
                           f"receval.evaluate for it")
    for col in (user_col, item_col):
        if col not in lists.columns:
            raise ReceValError(f"lists have no column {col!r}")
    frame = lists.reset_index(drop=True)
    if "rank" in frame.columns and score_col not in frame.columns:
        order = np.lexsort((np.arange(len(frame)), frame["rank"].to_numpy()))
    elif score_col in frame.columns:
        order = np.lexsort((np.arange(len(frame)), -frame[score_col].to_numpy(np.float64)))
    else:
        raise ReceValError(f"lists need a {score_col!r} or a 'rank' column")
    frame = frame.iloc[order]
    user_codes, users = pd.factorize(frame[user_col])
    item_codes, items = pd.factorize(frame[item_col])
    k_max = max(s.k for s in specs)
    order2 = np.argsort(user_codes, kind="stable")
    uc, ic = user_codes[order2], item_codes[order2]
    starts = np.searchsorted(uc, np.arange(len(users) + 1))
    pos = np.arange(len(uc)) - starts[uc]
    keep = pos < k_max
    top = np.full((len(users), k_max), -1, dtype=np.int64)
    top[uc[keep], pos[keep]] = ic[keep]
    n_list = np.minimum(np.diff(starts), k_max)
    item_ids = plain_ids(np.asarray(items))
    truth_csr = None
    if truth is not None:
        t_users = pd.Index(users).get_indexer(truth[user_col])
        t_items = pd.Index(items).get_indexer(truth[item_col])
        extra = plain_ids(truth[item_col].to_numpy())[t_items < 0]
        new_ids = pd.unique(extra) if len(extra) else extra
        item_ids = np.concatenate([item_ids, np.asarray(new_ids, dtype=item_ids.dtype)])
        t_items = np.where(t_items >= 0, t_items,
                           len(items) + pd.Index(new_ids).get_indexer(
                               truth[item_col].to_numpy()))
        ok = t_users >= 0
        o = np.argsort(t_users[ok], kind="stable")
        tu, ti = t_users[ok][o], t_items[ok][o]
        truth_csr = (np.searchsorted(tu, np.arange(len(users) + 1)).astype(np.int64),
                     ti.astype(np.int64))
    train_pair = None
    if train is not None:
        tf = pd.DataFrame(train) if not isinstance(train, pd.DataFrame) else train
        train_pair = (tf[user_col].to_numpy(), tf[item_col].to_numpy())
    top_mine, ctx = build(top, n_list, lambda c: item_ids[c], plain_ids(np.asarray(users)),
                          truth_csr, train_pair, item_features, opts, item_col=item_col,
                          features_columns=item_features_columns,
                          item_groups=item_groups,
                          groups_needed=any("groups" in s.entry.needs for s in specs),
                          features_needed=features_needed(specs, opts))
    per_user, summary = compute(specs, top_mine, ctx, opts)
    out: dict[str, float] = {}
    for spec in specs:
        if spec.name in summary:
            out[spec.name] = summary[spec.name]
        else:
            v = per_user[spec.name]
            v = v[~np.isnan(v)]
            out[spec.name] = float(v.mean()) if len(v) else float("nan")
    frame_out = pd.DataFrame({"user": plain_ids(np.asarray(users)), **per_user})
    return out, frame_out
