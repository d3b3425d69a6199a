"""Which columns a reader must load, under which names they come out, and the missing-column
message (it names the side, the column asked for, the columns found and the flag that fixes it).

Each side has its own column names: ``truth_columns={"user": "userId", ...}`` in Python,
``--truth-columns user=userId,...`` on the command line; the shared ``user_col=`` /
``--user-col`` apply to both sides and are overridden per side.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from receval.exceptions import ReceValError

#: the roles each side may name in ``truth_columns`` / ``prediction_columns``
ROLES = {"truth": ("user", "item", "rating"), "predictions": ("user", "item", "score", "rank")}
#: the Python argument and the command-line flag that name a side's columns
ARGUMENTS = {"truth": ("truth_columns", "--truth-columns"),
             "predictions": ("prediction_columns", "--prediction-columns")}


@dataclass(frozen=True)
class Wanted:
    """The columns of one side: source names in the file, output names ``user``, ``item`` and
    ``rating`` (truth) or ``score`` (predictions; ``rank`` when only a rank column exists).

    Example:
        >>> w = Wanted.predictions(score_col="pred")
        >>> w.resolve(["user", "item", "pred", "extra"], "p.csv")
        {'user': 'user', 'item': 'item', 'score': 'pred'}
    """

    side: str
    user: str = "user"
    item: str = "item"
    value: str = "rating"
    value_as: str = "rating"
    value_required: bool = False
    rank: str | None = None
    #: the columns of the file last resolved (filled by :meth:`resolve`, for later messages)
    found: list[str] = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        named = [("user", self.user), ("item", self.item), (self.value_as, self.value)]
        if self.rank is not None and self.rank != "rank":
            named.append(("rank", self.rank))
        for role, name in named:
            if not isinstance(name, str) or not name:
                raise ReceValError(f"{self.side} {role} column must be a non-empty string; "
                                   f"got {name!r}")
        seen: dict[str, str] = {}
        for role, name in named:
            if name in seen:
                python, flag = ARGUMENTS[self.side]
                raise ReceValError(
                    f"{self.side}: the {seen[name]} and {role} columns are both {name!r}; "
                    f"name two different columns (pass {flag} {seen[name]}=NAME,{role}=NAME / "
                    f"{python}={{'{seen[name]}': NAME, '{role}': NAME}})"
                )
            seen[name] = role

    @classmethod
    def truth(cls, *, user_col: str = "user", item_col: str = "item",
              rating_col: str = "rating", columns: Mapping[str, str] | None = None) -> Wanted:
        """The truth side: the rating column is read when present (it is optional).

        ``columns`` (``{"user": ..., "item": ..., "rating": ...}``) overrides the ``*_col``.

        Example:
            >>> Wanted.truth().resolve(["user", "item"], "t.csv")
            {'user': 'user', 'item': 'item'}
            >>> Wanted.truth(columns={"item": "movieId"}).item
            'movieId'
        """
        names = side_columns("truth", columns, user=user_col, item=item_col, rating=rating_col)
        return cls("truth", names["user"], names["item"], names["rating"], "rating", False, None)

    @classmethod
    def predictions(cls, *, user_col: str = "user", item_col: str = "item",
                    score_col: str = "score",
                    columns: Mapping[str, str] | None = None) -> Wanted:
        """The predictions side: a score column, or else a ``rank`` column (1 = best).

        Example:
            >>> Wanted.predictions().resolve(["user", "item", "rank"], "p.csv")
            {'user': 'user', 'item': 'item', 'rank': 'rank'}
        """
        names = side_columns("predictions", columns, user=user_col, item=item_col,
                             score=score_col, rank="rank")
        return cls("predictions", names["user"], names["item"], names["score"], "score", True,
                   names["rank"])

    @classmethod
    def sides(cls, columns: Mapping[str, Any]) -> tuple[Wanted, Wanted]:
        """The truth and the predictions sides from ``evaluate``'s column keywords
        (``user_col``, ``item_col``, ``rating_col``, ``score_col``, ``truth_columns``,
        ``prediction_columns``; absent ones take their defaults).

        Example:
            >>> wt, wp = Wanted.sides({"item_col": "movieId", "score_col": "s"})
            >>> wt.item, wp.item, wp.value
            ('movieId', 'movieId', 's')
        """
        return (
            cls.truth(user_col=columns.get("user_col", "user"),
                      item_col=columns.get("item_col", "item"),
                      rating_col=columns.get("rating_col", "rating"),
                      columns=columns.get("truth_columns")),
            cls.predictions(user_col=columns.get("user_col", "user"),
                            item_col=columns.get("item_col", "item"),
                            score_col=columns.get("score_col", "score"),
                            columns=columns.get("prediction_columns")),
        )

    def asked(self) -> dict[str, str]:
        """Output name -> source name of every column this side asks for.

        Example:
            >>> Wanted.truth(rating_col="stars").asked()
            {'user': 'user', 'item': 'item', 'rating': 'stars'}
        """
        out = {"user": self.user, "item": self.item, self.value_as: self.value}
        if self.rank is not None:
            out["rank"] = self.rank
        return out

    def positional(self, n_columns: int) -> list[str]:
        """Column names for a file without header: user, item, value, then ``column_<i>``.

        Example:
            >>> Wanted.truth().positional(4)
            ['user', 'item', 'rating', 'column_3']
        """
        names = [self.user, self.item, self.value]
        return (names + [f"column_{i}" for i in range(3, n_columns)])[:n_columns]

    def resolve(self, names: list[str], path: str | Path) -> dict[str, str]:
        """Output name -> source name for the columns to load; a one-line error if any is missing.

        A byte-order mark and blanks around a header name are ignored (``"\\ufeffuser"`` and
        ``" item"`` are the columns ``user`` and ``item``); the source name returned is the
        name as it is in the file.

        Example:
            >>> Wanted.truth().resolve(["\\ufeffuser", " item"], "t.csv")
            {'user': '\\ufeffuser', 'item': ' item'}
            >>> Wanted.truth().resolve(["user;item"], "t.csv")
            Traceback (most recent call last):
            ...
            receval.exceptions.ReceValError: truth file t.csv has no column 'user', 'item'; \
its columns are: 'user;item' (is the delimiter right? pass --delimiter; or pass \
--truth-columns user=NAME,item=NAME / truth_columns={'user': NAME, 'item': NAME})
        """
        self.found[:] = names
        lookup: dict[str, str] = {}
        for name in names:
            lookup.setdefault(name, name)
        for name in names:
            lookup.setdefault(clean_name(name), name)
        out: dict[str, str] = {}
        missing = [(role, c) for role, c in (("user", self.user), ("item", self.item))
                   if c not in lookup]
        out["user"], out["item"] = lookup.get(self.user, self.user), lookup.get(self.item,
                                                                                  self.item)
        if self.value in lookup:
            out[self.value_as] = lookup[self.value]
        elif self.rank is not None and self.rank in lookup:
            out["rank"] = lookup[self.rank]
        elif self.value_required:
            missing.append((self.value_as, self.value))
        if missing:
            raise ReceValError(missing_message(f"{self.side} file {path}", self.side, missing,
                                               names))
        return out


def clean_name(name: str) -> str:
    """A header name without a byte-order mark and surrounding blanks.

    Example:
        >>> clean_name("\\ufeff user ")
        'user'
    """
    return name.lstrip("\ufeff").strip()


def side_columns(side: str, columns: Mapping[str, str] | None, **shared: str) -> dict[str, str]:
    """The column of each role of ``side``: ``shared`` (``user=..., item=...``) overridden by
    ``columns``, whose keys must be roles of that side.

    Example:
        >>> side_columns("truth", {"item": "movieId"}, user="user", item="item", rating="r")
        {'user': 'user', 'item': 'movieId', 'rating': 'r'}
        >>> side_columns("truth", {"score": "s"}, user="user", item="item", rating="r")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: truth_columns has an unknown key 'score'; \
its keys are 'user', 'item', 'rating' (--truth-columns likewise)
    """
    out = dict(shared)
    if columns is None:
        return out
    python, flag = ARGUMENTS[side]
    if not isinstance(columns, Mapping):
        raise ReceValError(f"{python} must be a dict such as {{'user': 'userId'}}; "
                           f"got {type(columns).__name__}")
    roles = ROLES[side]
    for key, name in columns.items():
        if key not in roles:
            raise ReceValError(
                f"{python} has an unknown key {key!r}; its keys are "
                f"{', '.join(map(repr, roles))} ({flag} likewise)"
            )
        out[key] = name
    return out


def parse_columns_flag(text: str | None, side: str) -> dict[str, str] | None:
    """``"user=userId,item=movieId"`` (a ``--truth-columns`` value) as a dict.

    Example:
        >>> parse_columns_flag("user=userId, item = movieId", "truth")
        {'user': 'userId', 'item': 'movieId'}
        >>> parse_columns_flag("userId", "truth")
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: --truth-columns takes ROLE=NAME pairs separated by \
commas (e.g. user=userId,item=movieId); got 'userId'
    """
    if text is None:
        return None
    flag = ARGUMENTS[side][1]
    out: dict[str, str] = {}
    for pair in text.split(","):
        role, sep, name = pair.partition("=")
        if not sep or not role.strip() or not name.strip():
            raise ReceValError(
                f"{flag} takes ROLE=NAME pairs separated by commas "
                f"(e.g. user=userId,item=movieId); got {text!r}"
            )
        out[role.strip()] = name.strip()
    return out


def missing_message(where: str, side: str, missing: list[tuple[str, str]],
                    names: list[str]) -> str:
    """The one-line message for columns that ``where`` lacks: the columns asked for, those
    found (``repr`` each, so invisible characters show) and the argument that names them.

    Example:
        >>> missing_message("truth", "truth", [("user", "uid")], ["userId", "item"])
        "truth has no column 'uid'; its columns are: 'userId', 'item' \
(pass --truth-columns user=NAME / truth_columns={'user': NAME})"
    """
    python, flag = ARGUMENTS[side]
    shown = ", ".join(map(repr, names)) if names else "(none)"
    asked = ", ".join(repr(name) for _, name in missing)
    fix = (f"pass {flag} {','.join(f'{role}=NAME' for role, _ in missing)} / "
           f"{python}={{{', '.join(f'{role!r}: NAME' for role, _ in missing)}}}")
    hint = _hint(names)
    return f"{where} has no column {asked}; its columns are: {shown} ({hint}{fix})"


def _hint(names: list[str]) -> str:
    if len(names) == 1 and any(d in names[0] for d in ",;\t|"):
        return "is the delimiter right? pass --delimiter; or "
    if names and all(re.fullmatch(r"-?[0-9.eE+]+", n.strip()) for n in names):
        return "the first line looks like data: pass --no-header; or "
    return ""
