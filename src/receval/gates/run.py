"""Checking a gate (:mod:`receval.gates`): read the file, evaluate the model (and the
baseline), and each check against the numbers."""

from __future__ import annotations

import inspect
import math
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from receval import numbers
from receval.compare import ALL, Comparison, compare
from receval.evaluation import evaluate
from receval.exceptions import ReceValError
from receval.gates.grammar import CHECK, OPS, Expectation, parse_check
from receval.gates.outcome import Gate, Outcome
from receval.io.source import read_text, seekable
from receval.randomness import stream
from receval.result import Result
from receval.stats import MAX_RESAMPLES
from receval.stats.intervals import bootstrap_means, percentile_interval
from receval.stats.pairing import alpha_of

#: the keys a gate file may have
KEYS = ("name", "truth", "predictions", "baseline", "train", "strata", "confidence",
        "resamples", "seed", "metrics", "checks", "options")

#: evaluate's keyword arguments a gate sets itself (not in [options])
OWN = ("truth", "predictions", "metrics", "train", "strata")

#: the metric evaluated when every check is a count
COUNT_ONLY_METRIC = "nDCG@10"


# --- the gate file ----------------------------------------------------------------------------


def load(config: str | Path | Mapping[str, Any]) -> tuple[dict[str, Any], str, Path | None]:
    """The gate as a dict, its name (the file's stem, or ``name=``) and the file (``None`` for
    a dict); a file that TOML cannot read is an error naming its line.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "gate.toml"
        >>> _ = p.write_text('checks = ["P@10 >= 0.1"\\n')
        >>> load(p)
        Traceback (most recent call last):
        ...
        receval.exceptions.ReceValError: gate.toml: not valid TOML: Unclosed array (at end of \
document)
    """
    if isinstance(config, Mapping):
        data, path = dict(config), None
    else:
        path = Path(config)
        if not seekable(path).exists():
            raise ReceValError(f"gate file {str(path)!r} does not exist")
        text = read_text(path, "gate")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise ReceValError(f"{path.name}: not valid TOML: {err}") from None
        except RecursionError:  # arrays or tables nested thousands deep
            raise ReceValError(f"{path.name}: not valid TOML for a gate: arrays or tables "
                               "nested too deep") from None
    name = str(data.get("name") or (path.stem if path is not None else "gate"))
    return data, name, path


def input_paths(config: str | Path) -> list[Path]:
    """The files a gate file reads (truth, predictions, baseline, train, a strata file), as
    the gate resolves them: a command writing an output refuses to overwrite one of them.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "gate.toml"
        >>> _ = p.write_text('truth = "t.csv"\\npredictions = "p.csv"\\nchecks = ["P@1 > 0"]\\n')
        >>> [q.name for q in input_paths(p)]
        ['gate.toml', 't.csv', 'p.csv']
    """
    data, _, path = load(config)
    base = _folder(path)
    found = [Path(config)]
    for key in ("truth", "predictions", "baseline", "train", "strata"):
        value = data.get(key)
        if isinstance(value, str):
            found.append(Path(_input(value, base)))
    return found


class _Lines:
    """Where a key or a check is written in the gate file, for the error messages."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.lines = [] if path is None else read_text(path, "gate").splitlines()

    def key(self, key: str) -> str:
        pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
        return self._at(lambda line: bool(pattern.match(line)), f"key {key!r}")

    def check(self, text: str, index: int) -> str:
        quoted = (f'"{text}"', f"'{text}'")
        return self._at(lambda line: any(q in line for q in quoted), f"check {index + 1}")

    def _at(self, found: Callable[[str], bool], fallback: str) -> str:
        if self.path is None:
            return fallback
        for number, line in enumerate(self.lines, 1):
            if found(line.split("#", 1)[0] if "#" in line and '"' not in line else line):
                return f"{self.path.name} line {number}"
        return f"{self.path.name} ({fallback})"


def check(config: str | Path | Mapping[str, Any]) -> Gate:
    """Check a gate: ``config`` is a gate file (TOML, docs/gates.md) or the same content as a
    dict (where ``truth``, ``predictions``, ``baseline``, ``train`` may also be frames).

    The model (``predictions``) is evaluated with ``truth`` on the metrics the checks name
    (and ``metrics``), with ``train`` and ``strata`` when given and ``[options]`` (the keyword
    arguments of :func:`receval.evaluate`); with ``baseline`` and a check against it, the
    baseline too, and :func:`receval.compare` pairs them at the level ``confidence`` as
    written (:func:`receval.stats.pairing.alpha_of`: 0.95 is alpha 0.05 exactly), the models
    named by their files' stems (or, in a dict, ``predictions = {name: frame}``), so the
    interval is compare's bit for bit. Paths are relative to the gate file's folder. Bad
    input (a key, a check, a file) is a :class:`~receval.exceptions.ReceValError` naming the
    line.

    Example:
        >>> import receval
        >>> truth = {"user": [1, 2, 3, 4], "item": [1, 1, 1, 1]}
        >>> old = {"user": [1, 2, 3, 4], "item": [2, 2, 1, 1], "score": [1.0] * 4}
        >>> new = {"user": [1, 2, 3, 4], "item": [1, 1, 1, 1], "score": [1.0] * 4}
        >>> gate = receval.check({"truth": truth, "predictions": new, "baseline": old,
        ...     "resamples": 1000, "checks": ["P@1 >= 0.9", "P@1 >= baseline - 0.01"]})
        >>> print(gate.to_text())
        pass  P@1 >= 0.9  1.0000  [1.0000, 1.0000]  >= 0.9
        pass  P@1 >= baseline - 0.01  +0.5000  [+0.0000, +1.0000]  low >= -0.01
        2 check(s), 0 failed
    """
    data, name, path = load(config)
    if "monitor" in data:  # a gate over a monitor's decisions (receval.gates.monitor)
        from receval.gates.monitor import check_monitor

        return check_monitor(data, name, path)
    lines = _Lines(path)
    unknown = [k for k in data if k not in KEYS]
    if unknown:
        raise ReceValError(f"{lines.key(unknown[0])}: unknown key {unknown[0]!r}; a gate has "
                           f"{', '.join(KEYS)}")
    for key in ("truth", "predictions"):
        if key not in data:
            raise ReceValError(f"{path.name if path else 'gate'}: {key!r} is missing (the "
                               f"{key} file to evaluate)")
    raw_checks = data.get("checks")
    if not isinstance(raw_checks, list) or not raw_checks:
        raise ReceValError(f"{lines.key('checks')}: 'checks' must be a non-empty list of "
                           "strings such as \"nDCG@10 >= 0.09\"")
    expectations = [parse_check(text, lines.check(str(text), i))
                    for i, text in enumerate(raw_checks)]
    confidence = _number(data, "confidence", 0.95, lines, low=0.0, high=1.0)
    resamples = int(_number(data, "resamples", 10_000, lines, low=1, integer=True))
    if data.get("resamples", 0) > MAX_RESAMPLES:  # compare's cap (the integer as written)
        raise ReceValError(f"{lines.key('resamples')}: 'resamples' must be at most "
                           f"{MAX_RESAMPLES:,}, got {data['resamples']:,}")
    seed = int(_number(data, "seed", 0, lines, low=0, integer=True))
    base = _folder(path)
    for key in ("truth", "predictions", "baseline", "train"):
        _check_input(data.get(key), key, lines)
    options = _options(data.get("options", {}), lines)
    extra = data.get("metrics", [])
    if not isinstance(extra, list) or not all(isinstance(m, str) for m in extra):
        raise ReceValError(f"{lines.key('metrics')}: 'metrics' must be a list of metric names")
    metrics = list(dict.fromkeys([*(e.metric for e in expectations if e.metric), *extra]))
    metrics = metrics or [COUNT_ONLY_METRIC]
    train = _input(data.get("train"), base)
    strata = _strata(data.get("strata"), base, lines)
    grouped = [e for e in expectations if e.group is not None]
    if grouped and strata is None:
        raise ReceValError(f"{grouped[0].where}: check {grouped[0].text!r} names a group: "
                           "set strata = FILE or a built-in name (activity, cold)")
    against = [e for e in expectations if e.kind == "baseline"]
    if against and data.get("baseline") is None:
        raise ReceValError(f"{against[0].where}: check {against[0].text!r} compares with the "
                           "baseline: set baseline = FILE")
    model, base_name = _names(data)
    truth = _input(data["truth"], base)
    kwargs = {**options, **({"train": train} if train is not None else {})}
    result = evaluate(truth, _input(_unnamed(data["predictions"]), base), metrics,
                      strata=strata if grouped else None, **kwargs)
    results = {model: result}
    comparison = None
    if against:
        other = evaluate(truth, _input(_unnamed(data["baseline"]), base), metrics, **kwargs)
        results[base_name] = other
        comparison = compare(None, {model: result, base_name: other}, metrics,
                             baseline=base_name, alpha=alpha_of(confidence),
                             n_resamples=resamples,
                             seed=seed, strata=_resolved(strata, train, result, options)
                             if any(e.group for e in against) else None)
    rows = None
    if any(e.group is not None and e.kind == "metric" for e in expectations):
        from receval.strata import as_mapping, group_rows

        rows = group_rows(result.per_user["user"].to_numpy(),
                          as_mapping(_resolved(strata, train, result, options)))
    outcomes = [o for e in expectations
                for o in _outcomes(e, result, comparison, confidence, resamples, seed, model,
                                   rows)]
    return Gate(name, outcomes, confidence, results, comparison)


def _names(data: Mapping[str, Any]) -> tuple[str, str]:
    """The model's and the baseline's names, which key the pair's random stream as
    :func:`receval.compare` keys it: the name given (``predictions = {name: frame}`` in a
    dict), else the file's stem (its path without the suffix when both stems are the same);
    ``model`` / ``baseline`` only for frames given without a name.

    Example:
        >>> _names({"predictions": "runs/svd.csv", "baseline": "runs/pop.csv"})
        ('svd', 'pop')
        >>> _names({"predictions": "a/svd.csv", "baseline": "b/svd.csv"})
        ('a/svd', 'b/svd')
        >>> _names({"predictions": {"svd": "x.csv"}, "baseline": {"popular": "y.csv"}})
        ('svd', 'popular')
    """
    model = _name(data["predictions"], "model", stem=True)
    base = _name(data.get("baseline"), "baseline", stem=True)
    if model == base:
        model = _name(data["predictions"], "model", stem=False)
        base = _name(data.get("baseline"), "baseline", stem=False)
    return (model, base) if model != base else ("model", "baseline")


def _name(value: Any, default: str, *, stem: bool) -> str:
    if _is_named(value):
        return str(next(iter(value)))
    if isinstance(value, str):
        path = Path(value)
        return path.stem if stem else path.with_suffix("").as_posix()
    return default


def _is_named(value: Any) -> bool:
    """A one-entry mapping ``{name: input}`` (a frame of columns has at least two)."""
    if not isinstance(value, Mapping) or len(value) != 1:
        return False
    inner = next(iter(value.values()))
    return isinstance(inner, str | Mapping) or hasattr(inner, "columns")


def _unnamed(value: Any) -> Any:
    return next(iter(value.values())) if _is_named(value) else value


def _number(data: Mapping[str, Any], key: str, default: float, lines: _Lines, *, low: float,
            high: float | None = None, integer: bool = False) -> float:
    value = data.get(key, default)
    kind = "an integer" if integer else "a number"
    ok = (isinstance(value, int) if integer else isinstance(value, int | float)) and \
        not isinstance(value, bool) and value >= low and (high is None or value < high)
    if not ok or (key == "confidence" and value <= low):
        bounds = f"between {low:g} and {high:g}" if high is not None else f">= {low:g}"
        raise ReceValError(f"{lines.key(key)}: {key!r} must be {kind} {bounds}, got {value!r}")
    return float(value)


def _options(options: Any, lines: _Lines) -> dict[str, Any]:
    """``[options]``: the keyword arguments of :func:`receval.evaluate` (names checked)."""
    if not isinstance(options, Mapping):
        raise ReceValError(f"{lines.key('options')}: 'options' must be a table ([options])")
    known = [p for p in inspect.signature(evaluate).parameters
             if p not in OWN and not p.startswith("_")]  # _partition: not for callers
    for key in options:
        if key not in known:
            raise ReceValError(f"{lines.key(key)}: {key!r} is not an option of "
                               f"receval.evaluate; one of: {', '.join(known)}")
    return dict(options)


def _folder(path: Path | None) -> Path:
    """The folder a gate's relative paths start from: the gate file's, or the working folder
    for a gate given as a dict or through a pipe (``receval check <(cat gate.toml)``)."""
    if path is None or seekable(path) != path:
        return Path()
    return path.parent


def _check_input(value: Any, key: str, lines: _Lines) -> None:
    """A gate's input is a file (a string) or, from Python, a frame, a table or a dict of
    arrays; anything else (``truth = 5``) is an error naming its line."""
    if value is None or isinstance(value, str | Mapping) or hasattr(value, "to_pandas") or \
            hasattr(value, "columns") or hasattr(value, "column_names"):
        return
    raise ReceValError(f"{lines.key(key)}: {key!r} must be a file (a quoted path), got "
                       f"{value!r}")


def _input(value: Any, base: Path) -> Any:
    """A path relative to the gate file's folder; anything else (a frame) as it is."""
    if isinstance(value, str):
        path = Path(value)
        return str(path if path.is_absolute() else base / path)
    return value


def _strata(value: Any, base: Path, lines: _Lines) -> Any:
    """A built-in name as it is; a file (CSV, TSV or Parquet) as a frame."""
    if not isinstance(value, str):
        return value
    path = Path(_input(value, base))
    if not path.exists():
        if ("/" in value or "." in value) and ":" not in value:
            raise ReceValError(f"{lines.key('strata')}: strata file {value!r} does not exist")
        return value  # a built-in stratum: evaluate checks the name
    from receval.io.frames import read_frame

    return read_frame(path, "strata", ids=("user",)).to_pandas()


def _resolved(strata: Any, train: Any, result: Result, options: Mapping[str, Any]) -> Any:
    """A built-in stratum as the mapping ``evaluate`` used, for ``compare``."""
    if not isinstance(strata, str):
        return strata
    from receval.training import read_train, resolve_strata

    # the training data read as evaluate read it ([options] may rename its columns)
    frame = None if train is None else read_train(
        train, user_col=options.get("user_col", "user"), item_col=options.get("item_col", "item"),
        columns=options.get("train_columns"))
    return resolve_strata(strata, frame, result.per_user["user"].tolist())


# --- checking ---------------------------------------------------------------------------------


def _outcomes(e: Expectation, result: Result, comparison: Comparison | None,
              confidence: float, resamples: int, seed: int, model: str,
              rows: dict[str, np.ndarray] | None) -> list[Outcome]:
    if e.kind == "count":
        return [_count(e, result)]
    groups: list[str | None] = [None]
    if e.group is not None:
        present = [str(g) for g in result.strata["group"]] if e.kind == "metric" else \
            [str(g) for g in dict.fromkeys(comparison.table["group"]) if g != ALL] \
            if comparison is not None else []
        if e.group == "*":
            groups = list(present)
        elif e.group in present:
            groups = [e.group]
        else:
            raise ReceValError(f"{e.where}: check {e.text!r}: no group {e.group!r} in strata "
                               f"(groups: {', '.join(present) or 'none'})")
    if e.kind == "baseline":
        assert comparison is not None
        return [_against(e, g, comparison, model) for g in groups]
    return [_absolute(e, g, result, confidence, resamples, seed,
                      None if g is None or rows is None else rows.get(g)) for g in groups]


def _named(e: Expectation, group: str | None) -> str:
    if group is None:
        return e.text
    subject = str(e.subject)
    return CHECK.sub(lambda m: f"{subject}[{group}] {m['op']} {m['bound']}", e.text)


def _count(e: Expectation, result: Result) -> Outcome:
    node: Any = result.counts
    for depth, part in enumerate(e.subject):
        if isinstance(node, Mapping) and part not in node and part.isdigit() and \
                int(part) in node:  # ties_at_cutoff.10: the cutoff is an integer key
            part = int(part)
        if not isinstance(node, Mapping) or part not in node:
            where = ".".join(e.subject[:depth]) or "counts"
            have = ", ".join(map(str, node)) if isinstance(node, Mapping) else "no names"
            why = (" (train = FILE adds the training audit)"
                   if e.subject[0] == "train" and depth == 0 else "")
            raise ReceValError(f"{e.where}: check {e.text!r}: {where} has no {part!r}{why}; "
                               f"it has {have}")
        node = node[part]
    if isinstance(node, Mapping | bool) or not isinstance(node, int | float):
        raise ReceValError(f"{e.where}: check {e.text!r}: {'.'.join(e.subject)} is not a "
                           "count; name one of its entries")
    value = float(node)
    passed = OPS[e.op](value, e.bound)
    return Outcome(e, e.text, None, value, math.nan, math.nan, passed,
                   f"{'.'.join(e.subject)} = {value:g}, needs {e.op} {e.bound:g}")


def _absolute(e: Expectation, group: str | None, result: Result, confidence: float,
              resamples: int, seed: int, members: np.ndarray | None) -> Outcome:
    """The model's value (in ``group``: the rows ``members`` of its per-user values) against
    the bound; the interval: the bootstrap percentile interval of the mean over users."""
    metric = str(e.subject)
    if group is None:
        value = float(result.summary[metric])
    else:
        row = result.strata.loc[result.strata["group"].astype(str) == group].iloc[0]
        value = float(row[metric])
    low = high = math.nan
    if metric in result.per_user.columns and (group is None or members is not None):
        values = result.per_user[metric].to_numpy(dtype=float)
        if members is not None:
            values = values[members]
        values = values[~np.isnan(values)]
        if len(values):
            rng = stream(seed, "gate", metric, *(() if group is None else (group,)))
            low, high = percentile_interval(bootstrap_means(values, resamples, rng),
                                            alpha_of(confidence))
    passed = not math.isnan(value) and OPS[e.op](value, e.bound)
    shown = numbers.value(value)
    return Outcome(e, _named(e, group), group, value, low, high, passed,
                   f"{metric}{f'[{group}]' if group else ''} = {shown}, needs {e.op} "
                   f"{e.bound:g}")


def _against(e: Expectation, group: str | None, comparison: Comparison, model: str) -> Outcome:
    table = comparison.table
    pick = (table["model"] == model) & (table["metric"] == e.subject)
    if "group" in table.columns:
        pick &= table["group"].astype(str) == (ALL if group is None else group)
    row = table.loc[pick].iloc[0]
    delta, low, high = float(row["delta"]), float(row["ci_low"]), float(row["ci_high"])
    end, name = (low, "low") if e.op in (">=", ">") else (high, "high")
    passed = not math.isnan(end) and OPS[e.op](end, e.bound)
    shown = numbers.delta(end)
    level = f"{1 - comparison.options['alpha']:.0%}"
    return Outcome(e, _named(e, group), group, delta, low, high, passed,
                   f"difference {numbers.delta(delta)}; its {level} interval's {name} end "
                   f"is {shown}, needs {e.op} {e.bound:+g}")
