"""The training data in the picture: the leakage audit, training-item exclusion and strata.

receval sees the predictions and the held-out truth; with ``train=`` it also sees what the
model was trained on (docs/semantics.md section 15), and can say what the numbers cannot show:

- ``predictions_in_train``: prediction rows whose (user, item) is a training row. Under the
  full-ranking protocol these items take places in the top k that a held-out item could have
  had (``exclude_train=True`` removes them before ranking: the standard protocol);
- ``truth_in_train``: truth rows that are also training rows (is the truth the test set?);
- ``users_without_train`` / ``items_without_train``: evaluated users and truth items that the
  training data never saw (cold start);
- ``train_after_test`` (timestamps on both sides): training rows dated after their user's first
  test row, a temporal leak (Ji et al., TOIS 2023).

One job per module: :mod:`~receval.training.reading` (the training interactions, read as the
other sides are: ``user`` and ``item``, an optional ``timestamp``; a ``rating`` column may be
there and is not used), :mod:`~receval.training.leakage` (:class:`Leakage`, the counts and their
warnings) and :mod:`~receval.training.groups` (the strata: :func:`activity_groups`,
:func:`cold_start_groups` map users to a group for ``evaluate(strata=...)``;
:func:`popularity_groups` maps items to ``head`` / ``tail``). This package names them all.

Example:
    >>> import numpy as np
    >>> train = {"user": [1, 1, 2], "item": [10, 11, 10]}
    >>> t = read_train(train)
    >>> len(t), t.in_train(np.array([1, 2, 2]), np.array([10, 10, 12])).tolist()
    (3, [True, True, False])
"""

from receval.randomness import user_seed
from receval.training.groups import (
    STRATA,
    activity_groups,
    cold_start_groups,
    popularity_groups,
    resolve_strata,
    truth_by_items,
    users_of,
)
from receval.training.leakage import LARGE_SHARE, Leakage, check
from receval.training.reading import (
    TRAIN_ROLES,
    Training,
    index_of,
    member,
    missing_train_message,
    plain_ids,
    read_train,
    train_columns,
    truth_timestamps,
    with_truth_timestamps,
)

__all__ = [
    "LARGE_SHARE",
    "STRATA",
    "TRAIN_ROLES",
    "Leakage",
    "Training",
    "activity_groups",
    "check",
    "cold_start_groups",
    "index_of",
    "member",
    "missing_train_message",
    "plain_ids",
    "popularity_groups",
    "read_train",
    "resolve_strata",
    "train_columns",
    "truth_by_items",
    "truth_timestamps",
    "user_seed",
    "users_of",
    "with_truth_timestamps",
]
