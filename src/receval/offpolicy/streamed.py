"""Off-policy estimates of a served log bigger than memory
(``receval.offpolicy.estimate(..., memory_budget=)``, ``receval offpolicy --memory-budget``).

The log (a Parquet file), each target, the reward model and ``logger=`` are split by a hash of
the request's id (``request``, or ``user`` when the log names requests by ``user`` and
``served_at``) into Arrow IPC spill files in a temporary folder (:mod:`receval.streaming.spill`;
tables already in memory are split in memory): a request's rows all land in one partition, in
the order the file holds them. Each partition is estimated as the in-memory path estimates a
whole log, and the pieces merge exactly:

- each (group, target, estimator)'s sums are exact integers
  (:class:`~receval.offpolicy.sums.EstimateSums`): merged in any order they are the sums of
  the whole log, so the value, the weight diagnostics (ESS, largest weight, its share, mean
  weight) and the counts are those of the in-memory path bit for bit;
- what is global is made global: the positions of the whole log (a partition whose lists
  reach fewer positions still gets a ratio per position, empty), the largest position (the
  reward model's rows at a position no list reaches are counted once, against the whole log),
  the target rows for no logged request (summed), the reward model given per item (read whole,
  its drops counted once);
- the intervals need each request's terms in the global order of requests (the normal
  interval's standard deviation and the bootstrap's resamples both read them in order): each
  partition keeps its per-request terms (8 bytes per request and column) and the request ids;
  at the end the terms are put back in the order of the sorted ids, the order the in-memory
  path codes requests in, and the bootstrap draws the same requests from the same stream.
  Keying the resampling stream by request id instead would make the order irrelevant but
  change every interval from the in-memory path's; restoring the order keeps them equal.

What cannot be exact under the budget is refused in one line: a table that names
requests otherwise than the log, request ids that do not sort, and per-request terms that do
not fit the budget themselves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from receval.exceptions import ReceValError

#: bytes one input row costs the in-memory estimate at its peak (the encoded log, a target's
#: probabilities on it, the estimators' per-row arrays), with a margin: rows per partition =
#: budget / ROW_BYTES
ROW_BYTES = 1000
#: the id columns narrowed to int64 (``narrow_ids``) when every id of the file is canonical,
#: as the command line's reader does
ID_COLUMNS = ("request", "item", "user")


@dataclass
class _Side:
    """One request-keyed input: a Parquet file spilled to partitions, or a frame split in
    memory (``part`` of each row)."""

    what: str
    frame: pd.DataFrame | None = None
    path: Path | None = None
    key: str = "request"
    rows: int = 0
    part_of: np.ndarray | None = None
    writer: Any = None
    int_ids: dict[str, bool] = field(default_factory=dict)
    #: a target given as a Policy: its scores are split, the rule kept
    policy: Any = None

    def spec(self, frame: pd.DataFrame) -> Any:
        """What ``resolve`` takes for a partition's rows: the rows, or the Policy of them."""
        if self.policy is None:
            return frame
        import dataclasses

        return dataclasses.replace(self.policy, scores=frame)

    def columns(self) -> list[str]:
        if self.frame is not None:
            return [str(c) for c in self.frame.columns]
        from receval.io.batches import parquet_schema

        assert self.path is not None
        return list(parquet_schema(self.path, self.what).names)

    def part(self, p: int, narrow_ids: bool) -> pd.DataFrame:
        """Partition ``p``'s rows, in the input's order."""
        if self.frame is not None:
            assert self.part_of is not None
            return self.frame.iloc[np.flatnonzero(self.part_of == p)]
        table = self.writer.read(p)
        if narrow_ids:
            for c, as_int in self.int_ids.items():
                i = table.schema.get_field_index(c)
                if as_int and not pa.types.is_integer(table.schema.field(i).type):
                    table = table.set_column(i, c, pc.cast(table.column(i), pa.int64()))
        return table.to_pandas()


def _hash(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    from receval.streaming.spill import user_hash

    return user_hash(values, as_text=True)


def _frame_hash(series: pd.Series) -> np.ndarray:
    """The hash of a frame's ids as text: the same as a file's ids (:func:`_hash`)."""
    text = series.astype(str).to_numpy(dtype=object)
    return _hash(pa.array(text, type=pa.string()))


def _source(spec: Any, what: str) -> Any:
    """A table of the call: a frame, a Parquet file's path or a Policy (of scores); one line
    for anything else."""
    from receval.offpolicy.policies import Policy

    if isinstance(spec, dict) and "scores" in spec:
        spec = Policy(**spec)
    if isinstance(spec, pd.DataFrame | Policy):
        return spec
    if isinstance(spec, str | Path):
        from receval.streaming.logs import check_parquet

        return check_parquet(spec, what)
    raise ReceValError(
        f"memory_budget takes {what} as a table or a Parquet file; got a "
        f"{type(spec).__name__} (run without a budget)"
    )


def _key_of(columns: list[str], log_key: str, what: str, optional: bool = False) -> str | None:
    """The column naming a table's requests as the log names them (None: a table the same
    for every request, where ``optional``)."""
    if log_key in columns:
        return log_key
    named = "request" in columns or {"user", "served_at"} <= set(columns)
    if optional and not named:
        return None
    raise ReceValError(
        f"memory_budget: {what} must name its requests by {log_key!r}, as the log does "
        f"(columns: {', '.join(columns)}); run without a budget"
    )


def streamed(
    core: Any,
    log: Any,
    targets: Mapping[str, Any],
    *,
    names: list[str],
    left_out: list[str],
    reward_model: Any,
    seed: int,
    n_resamples: int,
    by_cols: tuple[str, ...],
    clip: float | None,
    threshold: float,
    alpha: float,
    memory_budget: str | int,
    narrow_ids: bool,
    options: dict[str, Any],
    parts: int | None = None,
) -> Any:
    """:func:`receval.offpolicy.estimate` of a Parquet log in partitions of requests within
    ``memory_budget`` (the arguments checked by ``estimate``; ``core``: the module
    :mod:`receval.offpolicy.estimate`, whose pieces estimate each partition); ``parts``
    overrides the number of partitions the budget gives (tests).

    Example:
        >>> import tempfile, pathlib, pandas as pd
        >>> from receval.offpolicy import estimate
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> pd.DataFrame({"request": [1, 2, 3, 4], "item": ["a", "b", "a", "b"],
        ...     "position": 1, "reward": [1.0, 0, 0, 1], "propensity": 0.5}
        ...     ).to_parquet(d / "log.parquet")
        >>> new = pd.DataFrame({"request": [1, 2, 3, 4], "item": "a", "position": 1,
        ...                     "probability": 1.0})
        >>> r = estimate(str(d / "log.parquet"), {"a": new}, estimators=["ips"],
        ...              n_resamples=0, memory_budget="64MiB")
        >>> r.table["value"].tolist(), r.options["partitions"]
        ([0.5], 1)
    """
    from receval.checks import silence
    from receval.streaming.budget import parse_budget
    from receval.streaming.spill import SpillFolder

    budget = parse_budget(memory_budget)
    log_path = _source(log, "served")
    if not isinstance(log_path, Path):
        from receval.streaming.logs import check_parquet

        check_parquet(log, "served")
    logger = options.get("logger")
    sources: dict[str, Any] = {}
    for name in sorted(targets, key=str):
        sources[f"target {str(name)!r}"] = _source(targets[name], f"target {str(name)!r}")
    if reward_model is not None:
        sources["reward_model"] = _source(reward_model, "reward_model")
    if logger is not None:
        sources["logger"] = _source(logger, "logger=")
    with silence(options.get("silence")), SpillFolder() as folder:
        return _run(
            core,
            log_path,
            sources,
            folder,
            budget,
            parts,
            names=names,
            left_out=left_out,
            targets=[str(t) for t in sorted(targets, key=str)],
            seed=seed,
            n_resamples=n_resamples,
            by_cols=by_cols,
            clip=clip,
            threshold=threshold,
            alpha=alpha,
            narrow_ids=narrow_ids,
            options=options,
        )


def _spill(
    side: _Side, folder: Path, tag: str, parts: int, chunk: int, positions: set[float] | None = None
) -> None:
    """Split one side into ``parts`` partitions (a file: into spill files, in one pass that
    also finds its id types and, for the log, its positions)."""
    if side.frame is not None:
        side.part_of = (_frame_hash(side.frame[side.key]) % np.uint64(parts)).astype(np.int64)
        return
    from receval.io.batches import parquet_batches, parquet_schema
    from receval.io.ids import narrow
    from receval.streaming.spill import Partitioner

    assert side.path is not None
    schema = parquet_schema(side.path, side.what)
    names = schema.names
    side.int_ids = {c: True for c in ID_COLUMNS if c in names}
    side.writer = Partitioner(folder, tag, parts, as_text=True, key=side.key)
    side.writer.schema = schema
    for table in parquet_batches(side.path, side.what, chunk):
        if table.num_rows == 0:
            continue
        for c in side.int_ids:
            side.int_ids[c] &= pa.types.is_integer(narrow(table.column(c).combine_chunks()).type)
        if positions is not None and "position" in names:
            found = pc.unique(table.column("position")).to_numpy(zero_copy_only=False)
            found = np.asarray(found, dtype=np.float64)
            positions.update(found[np.isfinite(found)].tolist())
        side.writer.add(table)
    side.writer.close()


def _align_positions(data: Any, positions: np.ndarray) -> None:
    """Give a partition's log the positions of the whole log: one (k, rows, indicator) per
    position any list reaches, empty where none of its own does (the in-memory path's ratio
    per position, restricted to the partition's requests)."""
    if np.array_equal(np.unique(data.position), positions):
        return
    out = []
    for k in positions:
        rows = np.flatnonzero(data.position == k)
        m = np.zeros(data.n_requests)
        m[data.request[rows]] = 1.0
        out.append((int(k), rows, m))
    data.cache["positions"] = out


@dataclass
class _Dropped:
    dropped: int


def _run(
    core: Any,
    log_path: Path,
    sources: dict[str, Any],
    folder: Path,
    budget: int,
    parts: int | None,
    *,
    names: list[str],
    left_out: list[str],
    targets: list[str],
    seed: int,
    n_resamples: int,
    by_cols: tuple[str, ...],
    clip: float | None,
    threshold: float,
    alpha: float,
    narrow_ids: bool,
    options: dict[str, Any],
) -> Any:
    from receval.io.batches import parquet_rows, parquet_schema

    # the in-memory path's pieces, from the module that calls this one (no import back)
    COLUMNS, OffPolicyResult, UNNORMALISED = core.COLUMNS, core.OffPolicyResult, core.UNNORMALISED
    _blows_up, _context, _groups, _Part = core._blows_up, core._context, core._groups, core._Part
    _RewardModel, _row, _warn_weights = core._RewardModel, core._row, core._warn_weights
    _with_window = core._with_window
    from receval.offpolicy.estimators import ESTIMATORS, Terms
    from receval.offpolicy.intervals import bootstrap
    from receval.offpolicy.logs import read_log
    from receval.offpolicy.policies import ItemCodes, resolve
    from receval.offpolicy.sums import EstimateSums
    from receval.streaming.budget import chunk_rows

    log_names = list(parquet_schema(log_path, "log").names)
    key = "request" if "request" in log_names else "user"
    if key == "user" and "served_at" not in log_names:
        raise ReceValError(
            "log has no column 'request' (one served list), nor 'user' and "
            f"'served_at' to make it; columns: {', '.join(log_names)}"
        )
    sides = {"log": _Side("log", path=log_path, key=key, rows=parquet_rows(log_path, "log"))}
    model_whole: pd.DataFrame | None = None
    for what, src in sources.items():
        policy = None if isinstance(src, pd.DataFrame | Path) else src
        frame = src if isinstance(src, pd.DataFrame) else None
        frame = policy.scores if policy is not None else frame
        path = src if isinstance(src, Path) else None
        side = _Side(what, frame=frame, path=path, policy=policy)
        found = _key_of(side.columns(), key, what, optional=what == "reward_model")
        if found is None:  # a reward model the same for every request: read whole
            model_whole = frame if frame is not None else _whole(src, narrow_ids)
            continue
        side.key = found
        side.rows = len(frame) if frame is not None else parquet_rows(src, what)
        sides[what] = side
    n_parts = parts or max(1, math.ceil(sum(s.rows for s in sides.values()) * ROW_BYTES / budget))
    chunk = chunk_rows(budget)
    seen: set[float] = set()
    for i, (what, side) in enumerate(sides.items()):
        _spill(side, folder, f"side{i}", n_parts, chunk, seen if what == "log" else None)
    if sides["log"].rows == 0:
        raise ReceValError("log is empty: no shown item to estimate from")
    positions = np.array(sorted(int(k) for k in seen if k >= 1 and k == int(k)), dtype=np.int64)
    top = int(positions.max()) if positions.size else 1
    model_side = sides.get("reward_model")
    repeats = options.get("repeats", "refuse") == "allow"

    all_sums: dict[tuple[Any, ...], EstimateSums] = {}
    kept: dict[tuple[Any, ...], list[tuple[np.ndarray, list[tuple[np.ndarray, ...]]]]] = {}
    request_ids: dict[tuple[Any, ...], list[np.ndarray]] = {}
    dropped = dict.fromkeys(targets, 0)
    matched = dict.fromkeys(targets, 0)
    model_dropped = 0
    kept_bytes = 0
    for p in range(n_parts):
        frame = sides["log"].part(p, narrow_ids)
        if len(frame) == 0:  # every other row of this partition names no logged request
            for t in targets:
                dropped[t] += len(sides[f"target {t!r}"].part(p, narrow_ids))
            if model_side is not None:
                model_dropped += len(model_side.part(p, narrow_ids))
            continue
        data = read_log(_with_window(frame, by_cols, options), by=by_cols, repeats=repeats)
        del frame
        _align_positions(data, positions)
        items = ItemCodes(data.items)
        model = None
        if model_side is not None:
            model = _RewardModel(model_side.part(p, narrow_ids), data, items, top=top)
            model_dropped += model.dropped
        elif model_whole is not None:
            model = _RewardModel(model_whole, data, items, top=top)
            model_dropped = model.dropped  # the same in every partition: counted once
        log_policy = None
        if "logger" in sides:
            lframe, _, _ = _known(sides["logger"].part(p, narrow_ids), data, "logger")
            log_policy = resolve(
                "logger", sides["logger"].spec(lframe), data, items, options=options
            )
        groups = _groups(data, by_cols)
        for t_index, target in enumerate(targets):
            side = sides[f"target {target!r}"]
            tframe, n_known, n_unknown = _known(
                side.part(p, narrow_ids), data, f"target {target!r}"
            )
            resolved = resolve(target, side.spec(tframe), data, items, options=options)
            dropped[target] += resolved.dropped + n_unknown
            matched[target] += n_known
            ctx = _context(data, resolved, model, log_policy, options, clip, threshold)
            terms = {name: ESTIMATORS[name](ctx) for name in names}
            for gkey, requests, rows in groups:
                part = _Part(data, requests, rows)
                sub = {name: part.terms(term) for name, term in terms.items()}
                part.precompute(sub.values())
                if t_index == 0:
                    ids = data.requests if requests is None else data.requests[requests]
                    request_ids.setdefault(gkey, []).append(np.asarray(ids))
                for name, term in sub.items():
                    sums = part.sums(term, resolved)
                    k = (*gkey, target, name)
                    all_sums[k] = all_sums[k].merge(sums) if k in all_sums else sums
                    kept.setdefault(k, []).append((term.c, [tuple(r) for r in term.ratios]))
                    kept_bytes += 8 * term.c.size * (1 + 3 * len(term.ratios))
            del terms, ctx
        if kept_bytes > budget // 2:
            raise ReceValError(
                f"memory_budget of {budget} bytes: the per-request terms the intervals need "
                f"({kept_bytes} bytes after {p + 1} of {n_parts} partitions) take more than "
                "half of it; give a larger budget"
            )
    for t in targets:
        if matched[t] == 0 and sides[f"target {t!r}"].rows > 0:
            raise ReceValError(
                f"target {t!r}: none of its {sides[f'target {t!r}'].rows} "
                "row(s) names a request of the log; ids match exactly, a text "
                "id never equals a number"
            )
    table_rows: list[dict[str, Any]] = []
    order_of = {g: _order(ids) for g, ids in request_ids.items()}
    group_keys = _sorted_groups(list(request_ids), by_cols)
    pending: dict[tuple[Any, ...], list[tuple[Any, dict[str, Any]]]] = {g: [] for g in group_keys}
    for target in targets:
        warned = False
        for gkey in group_keys:
            order = order_of[gkey]
            new_rows = []
            for name in names:
                k = (*gkey, target, name)
                pieces = kept.pop(k)
                c = np.concatenate([x for x, _ in pieces])[order]
                width = {len(r) for _, r in pieces}
                if len(width) != 1:
                    raise ReceValError(
                        f"memory_budget: {name} gave partitions different "
                        "numbers of terms; run without a budget"
                    )
                ratios = [
                    tuple(np.concatenate([r[j][i] for _, r in pieces])[order] for i in range(3))
                    for j in range(width.pop())
                ]
                term = Terms(c, ratios)
                row = _row(
                    target,
                    name,
                    term,
                    all_sums[k],
                    math.nan,
                    math.nan,
                    cast(Any, _Dropped(dropped[target])),  # _row reads its ``dropped``
                    alpha,
                )
                row["weights_blow_up"] = name in UNNORMALISED and _blows_up(row)
                new_rows.append({**dict(zip(by_cols, gkey, strict=True)), **row})
                pending[gkey].append((term, new_rows[-1]))
            table_rows.extend(new_rows)
            if not warned:
                warned = _warn_weights(target, new_rows)
    for gkey in group_keys:
        stream_names = tuple(f"{c}={v}" for c, v in zip(by_cols, gkey, strict=True))
        intervals = bootstrap([t for t, _ in pending[gkey]], n_resamples, seed, alpha, stream_names)
        for (_, row), (low, high) in zip(pending[gkey], intervals, strict=True):
            row["ci_low"], row["ci_high"] = low, high
    table = pd.DataFrame(table_rows, columns=[*by_cols, *COLUMNS])
    used: dict[str, Any] = {
        "estimators": names,
        "seed": seed,
        "n_resamples": n_resamples,
        "alpha": alpha,
        "clip": clip,
        "switch_threshold": threshold,
        "by": list(by_cols),
        "ci_method": "bootstrap percentile over requests",
        "left_out": left_out,
        "reward_model_rows_dropped": model_dropped,
    }
    if "window" in by_cols and "window" in options:
        used["window"] = options["window"]
    used["partitions"] = n_parts
    return OffPolicyResult(table, used, all_sums)


def _whole(path: Path, narrow_ids: bool) -> pd.DataFrame:
    """A Parquet file read whole (its text ids narrowed as the command line narrows them)."""
    from receval.io.frames import read_frame

    return read_frame(path, "reward_model", ids=ID_COLUMNS if narrow_ids else ()).to_pandas()


def _known(frame: pd.DataFrame, data: Any, what: str) -> tuple[pd.DataFrame, int, int]:
    """A table's rows for requests of the partition's log, their number and the others'
    (counted as the in-memory path drops them)."""
    from receval.offpolicy.logs import request_codes

    req = request_codes(frame, data, what)
    known = req >= 0
    n_known = int(known.sum())
    return (frame if n_known == len(frame) else frame[known]), n_known, len(frame) - n_known


def _order(ids: list[np.ndarray]) -> np.ndarray:
    """The permutation putting the partitions' requests (concatenated) in the order the
    in-memory path codes them: sorted by id."""
    values = np.concatenate(ids) if len(ids) > 1 else ids[0]
    try:
        codes, _ = pd.factorize(pd.Series(values).infer_objects(), sort=True)
    except TypeError:
        raise ReceValError(
            "memory_budget: the log's request ids do not sort (mixed types); run without a budget"
        ) from None
    return np.argsort(codes, kind="stable")


def _sorted_groups(keys: list[tuple[Any, ...]], by_cols: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """The groups in the in-memory path's order (sorted by their values)."""
    if not by_cols:
        return keys
    frame = pd.DataFrame([list(k) for k in keys], columns=list(by_cols)).infer_objects()
    codes, _ = pd.MultiIndex.from_frame(frame).factorize(sort=True)
    return [keys[i] for i in np.argsort(codes, kind="stable")]
