"""Which columns a reader must load, under which names they come out, and the missing-column
message with a hint (wrong delimiter? no header?)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from receval.exceptions import ReceValError


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

    @classmethod
    def truth(cls, *, user_col: str = "user", item_col: str = "item",
              rating_col: str = "rating") -> Wanted:
        """The truth side: the rating column is read when present (it is optional).

        Example:
            >>> Wanted.truth().resolve(["user", "item"], "t.csv")
            {'user': 'user', 'item': 'item'}
        """
        return cls("truth", user_col, item_col, rating_col, "rating", False, None)

    @classmethod
    def predictions(cls, *, user_col: str = "user", item_col: str = "item",
                    score_col: str = "score") -> Wanted:
        """The predictions side: a score column, or else a ``rank`` column (1 = best).

        Example:
            >>> Wanted.predictions().resolve(["user", "item", "rank"], "p.csv")
            {'user': 'user', 'item': 'item', 'rank': 'rank'}
        """
        return cls("predictions", user_col, item_col, score_col, "score", True, "rank")

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

        Example:
            >>> Wanted.truth().resolve(["user;item"], "t.csv")
            Traceback (most recent call last):
            ...
            receval.exceptions.ReceValError: truth file t.csv has no column 'user', 'item'; \
its columns are: user;item (is the delimiter right? pass --delimiter)
        """
        out: dict[str, str] = {}
        missing = [c for c in (self.user, self.item) if c not in names]
        out["user"], out["item"] = self.user, self.item
        if self.value in names:
            out[self.value_as] = self.value
        elif self.rank is not None and self.rank in names:
            out["rank"] = self.rank
        elif self.value_required:
            missing.append(self.value)
        if missing:
            shown = ", ".join(names) if names else "(none)"
            raise ReceValError(
                f"{self.side} file {path} has no column {', '.join(map(repr, missing))}; "
                f"its columns are: {shown}{_hint(names)}"
            )
        return out


def _hint(names: list[str]) -> str:
    if any(d in n for n in names for d in ",;\t|"):
        return " (is the delimiter right? pass --delimiter)"
    if names and all(re.fullmatch(r"-?[0-9.eE+]+", n.strip()) for n in names):
        return " (the first line looks like data: pass --no-header)"
    return ""
