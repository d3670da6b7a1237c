"""Two one-sided tests (TOST) for equivalence of means, paired and independent.

Hypotheses (Schuirmann 1987): H0: d <= low or d >= high against H1: low < d < high,
where d is the mean of ``x - y`` (paired) or ``mean(x) - mean(y)`` (independent).

* lower test: ``t_lower = (d - low) / se``, ``p_lower = P(T_df >= t_lower)``
* upper test: ``t_upper = (d - high) / se``, ``p_upper = P(T_df <= t_upper)``
* ``p_value = max(p_lower, p_upper)``; ``equivalent = p_value < alpha``, which is the
  same as the ``1 - 2*alpha`` confidence interval ``[ci_low, ci_high]`` lying strictly
  inside ``(low, high)``.

These are the formulas of statsmodels ``ttost_paired`` / ``ttost_ind`` (usevar "pooled"
or "unequal" = Welch-Satterthwaite), which the tests check to 1e-12. Where statsmodels
returns NaN or an accidental answer, ddpcore defines the result (``status`` says which
rule applied):

``"ok"``
    the ordinary t statistics.
``"zero_variance"``
    every difference is the same value ``d`` (paired) or both samples are constant
    (independent; a sample of one value counts as constant), or the standard error
    underflows to 0 (values differing by ~1e-160 or less). The data pin the
    difference exactly, so each one-sided test is decided by comparing ``d`` with its
    margin: strictly inside -> ``t = +-inf``, ``p = 0``; exactly on the margin ->
    ``t = 0``, ``p = 0.5``; outside -> ``t = -+inf``, ``p = 1``. The interval is
    ``[d, d]``. Hence all differences exactly on a margin give ``p_value = 0.5`` and
    ``equivalent = False`` (never "equivalent" by accident; pingouin 0.5/0.7 reports
    p = 0 there). "The same value" is decided exactly (``min == max``), not by a
    floating-point variance that happens to be tiny.
``"too_few"``
    paired n < 2; independent pooled n_x < 1, n_y < 1 or n_x + n_y < 3; Welch n_x < 2 or
    n_y < 2. No test is possible: ``p_value = p_lower = p_upper = 1``, t and the
    interval are NaN, ``equivalent = False``. (Only for groups of
    :func:`tost_grouped`; the scalar functions raise D309 on an empty sample and
    return this answer for n = 1.)

Missing values: ``nan_policy="raise"`` (default) raises D302 naming the first NaN;
``"omit"`` drops NaN (paired: the whole pair). Infinite values always raise D312; finite
values above 1e100 in magnitude raise D360 (their differences and squares would overflow to
inf / NaN).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..errors import DDPDataError, DDPUsageError
from .._native import load
from ._table import (MAX_ABS_SCORE, NanPolicy, _fits_int64, check_magnitude, check_nan_policy, factorize, json_safe,
                     signature)

if TYPE_CHECKING:
    import polars as pl

STATUS_OK = "ok"
STATUS_ZERO_VARIANCE = "zero_variance"
STATUS_TOO_FEW = "too_few"


@dataclasses.dataclass(frozen=True)
class TostResult:
    """Result of :func:`tost_paired` or :func:`tost_ind` (see the module docstring)."""

    p_value: float
    equivalent: bool
    mean_diff: float  # paired: mean(x - y); independent: mean(x) - mean(y)
    ci_low: float  # 1 - 2*alpha confidence interval of mean_diff
    ci_high: float
    t_lower: float
    p_lower: float
    t_upper: float
    p_upper: float
    df: float
    n: int  # number of pairs (paired) or n_x + n_y (independent)
    low: float
    high: float
    alpha: float
    design: str  # "paired" | "independent"
    status: str  # "ok" | "zero_variance" | "too_few"
    n_x: int | None = None
    n_y: int | None = None
    equal_var: bool | None = None
    n_omitted: int = 0
    signature: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: what ``ddp stats tost`` says on stderr about this answer (:func:`tost_warnings`): values dropped for a NaN
    #: (``nan_policy="omit"``), a sample too small for a test (``status="too_few"``)
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (non-finite floats become ``None``)."""
        return json_safe(dataclasses.asdict(self))


#: when a sample is too small for a test (``status="too_few"``), in the words of every warning that says it
TOO_FEW_RULE = ("a test needs 2 pairs (paired), 2 scores of each condition (Welch, --welch) or 3 scores with one of "
                "each condition (pooled, --independent)")


def tost_warnings(n: int, n_omitted: int, status: str, paired: bool) -> tuple[str, ...]:
    """The warning lines of one TOST (:attr:`TostResult.warnings`, what ``ddp stats tost`` prints): ``n_omitted``
    pairs (``paired``) or values dropped for a NaN, and ``status="too_few"`` (no test: p = 1, not equivalent)."""
    out = []
    if n_omitted:
        what = "pair(s)" if paired else "value(s)"
        out.append(f"{n_omitted} {what} with a NaN dropped (nan_policy='omit'); the test rests on the other {n}")
    if status == STATUS_TOO_FEW:
        out.append(f"too few observations for a test (n = {n}): no t statistic and no interval, p = 1, not "
                   f"equivalent; {TOO_FEW_RULE}")
    return tuple(out)


# --------------------------------------------------------------------------- validation


class _Margins(NamedTuple):
    """The checked equivalence interval ``(low, high)`` and the level ``alpha`` of each one-sided test."""

    low: float
    high: float
    alpha: float


def _check_margins(low: float, high: float, alpha: float) -> _Margins:
    try:
        low, high, alpha = float(low), float(high), float(alpha)
    except (TypeError, ValueError):
        raise DDPUsageError("low, high and alpha must be numbers (--margin EPS or --bounds LOW HIGH, --alpha)",
                            code="D311") from None
    if not (np.isfinite(low) and np.isfinite(high)):
        raise DDPUsageError(f"equivalence margins must be finite, got low={low}, high={high} (--margin EPS or --bounds LOW HIGH)", code="D311")
    if not low < high:
        raise DDPUsageError(
            f"the equivalence interval needs low < high, got low={low}, high={high}; "
            "for a symmetric margin eps use low=-eps, high=eps (--margin EPS; --bounds LOW HIGH for asymmetric "
            "margins)",
            code="D311",
        )
    if not 0.0 < alpha < 0.5:
        raise DDPUsageError(f"alpha must be in (0, 0.5), got {alpha} (--alpha)", code="D311")
    return _Margins(low, high, alpha)


def _as_1d(values: npt.ArrayLike, name: str) -> npt.NDArray[np.float64]:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise DDPDataError(f"{name} must contain numbers only", code="D303") from None
    if arr.ndim != 1:
        raise DDPDataError(f"{name} must be one-dimensional, got shape {arr.shape}", code="D308")
    if np.isinf(arr).any():
        i = int(np.flatnonzero(np.isinf(arr))[0])
        raise DDPDataError(f"{name}[{i}] is infinite; scores must be finite", code="D312")
    check_magnitude(arr, name)
    return arr


def _nan_error(name: str, mask: npt.NDArray[np.bool_]) -> DDPDataError:
    i = int(np.flatnonzero(mask)[0])
    return DDPDataError(
        f"{name} contains {int(mask.sum())} NaN value(s) (first at index {i}); remove them or pass "
        "nan_policy='omit' (--nan-policy omit) to drop them",
        code="D302",
    )


# --------------------------------------------------------------------------- vectorised core


def _t_sf(df: npt.NDArray[np.float64], t: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    from scipy import special

    return special.stdtr(df, -t)  # same call as scipy.stats.t.sf


def _t_cdf(df: npt.NDArray[np.float64], t: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    from scipy import special

    return special.stdtr(df, t)  # same call as scipy.stats.t.cdf


def _tost_core(
    diff: npt.NDArray[np.float64],
    se: npt.NDArray[np.float64],
    dof: npt.NDArray[np.float64],
    constant: npt.NDArray[np.bool_],
    too_few: npt.NDArray[np.bool_],
    margins: _Margins,
) -> dict[str, np.ndarray]:
    """TOST for many tests at once from (difference, standard error, df) arrays.

    ``constant`` marks tests whose difference is known exactly (zero variance): ``diff``
    must then hold that exact value. ``too_few`` marks tests that cannot be run.
    """
    from scipy import special

    low, high, alpha = margins
    # a standard error that underflows to 0 pins the difference as well as a constant sample
    constant = (constant | (se == 0.0)) & ~too_few
    ok = ~(constant | too_few)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_lower = np.where(ok, (diff - low) / se, np.nan)
        t_upper = np.where(ok, (diff - high) / se, np.nan)
        p_lower = _t_sf(dof, t_lower)
        p_upper = _t_cdf(dof, t_upper)
        # scipy.stats.t.ppf(1 - alpha, df), evaluated once per distinct df (groups often share one)
        dof_unique, dof_index = np.unique(dof, return_inverse=True)
        crit = special.stdtrit(dof_unique, 1.0 - alpha)[dof_index.reshape(dof.shape)]
        ci_low = diff - crit * se
        ci_high = diff + crit * se
    # zero variance: each one-sided test is decided exactly
    sign_l = np.sign(diff - low)
    sign_u = np.sign(diff - high)
    t_lower = np.where(constant, np.select([sign_l > 0, sign_l == 0], [np.inf, 0.0], -np.inf), t_lower)
    t_upper = np.where(constant, np.select([sign_u > 0, sign_u == 0], [np.inf, 0.0], -np.inf), t_upper)
    p_lower = np.where(constant, np.select([sign_l > 0, sign_l == 0], [0.0, 0.5], 1.0), p_lower)
    p_upper = np.where(constant, np.select([sign_u < 0, sign_u == 0], [0.0, 0.5], 1.0), p_upper)
    ci_low = np.where(constant, diff, ci_low)
    ci_high = np.where(constant, diff, ci_high)
    # too few observations: no test
    nan = np.full_like(diff, np.nan)
    t_lower = np.where(too_few, nan, t_lower)
    t_upper = np.where(too_few, nan, t_upper)
    p_lower = np.where(too_few, 1.0, p_lower)
    p_upper = np.where(too_few, 1.0, p_upper)
    ci_low = np.where(too_few, nan, ci_low)
    ci_high = np.where(too_few, nan, ci_high)
    p_value = np.maximum(p_lower, p_upper)
    status = np.where(too_few, STATUS_TOO_FEW, np.where(constant, STATUS_ZERO_VARIANCE, STATUS_OK))
    return {
        "mean_diff": diff,
        "df": dof,
        "t_lower": t_lower,
        "p_lower": p_lower,
        "t_upper": t_upper,
        "p_upper": p_upper,
        "p_value": p_value,
        "ci_low": ci_low,
        "ci_high": ci_high,
        "equivalent": p_value < alpha,
        "status": status,
    }


class _SampleStats(NamedTuple):
    """Sufficient statistics of one sample per group, each of shape (n_groups,): size, mean, sum of
    squared deviations, and whether the sample is constant (``min == max``; ``mean`` is then that
    exact value)."""

    n: npt.NDArray[np.float64]
    mean: npt.NDArray[np.float64]
    ss: npt.NDArray[np.float64]
    const: npt.NDArray[np.bool_]


def _paired_from_stats(d: _SampleStats, margins: _Margins) -> dict[str, np.ndarray]:
    """Paired TOST from per-test sufficient statistics of the differences.

    ``d.n`` pairs, ``d.mean`` of the differences, ``d.ss`` = sum of squared deviations from the
    mean, ``d.const`` = all differences are exactly equal (``mean`` then holds that value).
    """
    n, mean, ss, constant = d
    too_few = n < 2
    constant = constant & ~too_few
    diff = mean
    with np.errstate(divide="ignore", invalid="ignore"):
        # statsmodels DescrStatsW(ddof=0): std_mean = sqrt(ss / n) / sqrt(n - 1)
        se = np.sqrt(ss / n) / np.sqrt(n - 1.0)
    dof = n - 1.0
    out = _tost_core(diff, se, dof, constant, too_few, margins)
    out["n"] = n
    return out


def _ind_from_stats(sx: _SampleStats, sy: _SampleStats, margins: _Margins, equal_var: bool) -> dict[str, np.ndarray]:
    """Independent-samples TOST from per-sample sufficient statistics (arrays of shape (n_groups,))."""
    n_x, mean_x, ss_x, const_x = sx
    n_y, mean_y, ss_y, const_y = sy
    if equal_var:
        too_few = (n_x < 1) | (n_y < 1) | (n_x + n_y < 3)
    else:
        too_few = (n_x < 2) | (n_y < 2)
    constant = const_x & const_y & ~too_few
    diff = mean_x - mean_y
    with np.errstate(divide="ignore", invalid="ignore"):
        if equal_var:
            dof = n_x + n_y - 2.0
            var_pooled = (ss_x + ss_y) / dof
            se = np.sqrt(var_pooled * (1.0 / n_x + 1.0 / n_y))
        else:
            sem_x = (ss_x / n_x) / (n_x - 1.0)
            sem_y = (ss_y / n_y) / (n_y - 1.0)
            sem = sem_x + sem_y
            dof = 1.0 / ((sem_x / sem) ** 2 / (n_x - 1.0) + (sem_y / sem) ** 2 / (n_y - 1.0))
            # both samples constant (or variances underflowing to 0): Welch-Satterthwaite
            # is 0/0; report the pooled df
            dof = np.where(constant | (sem == 0.0), n_x + n_y - 2.0, dof)
            se = np.sqrt(sem)
    out = _tost_core(diff, se, dof, constant, too_few, margins)
    out["n_x"] = n_x
    out["n_y"] = n_y
    out["n"] = n_x + n_y
    return out


def _moments(
    codes: npt.NDArray[np.int64], x: npt.NDArray[np.float64], y: npt.NDArray[np.float64] | None, n_groups: int
) -> tuple[np.ndarray, ...]:
    """(n, mean, ss, constant) per group of ``x - y`` (or ``x``) via the native kernel; NaN skipped."""
    n = np.empty(n_groups)
    mean = np.empty(n_groups)
    ss = np.empty(n_groups)
    const = np.empty(n_groups, dtype=np.uint8)
    load("stats_kernels").group_moments(
        np.ascontiguousarray(codes, dtype=np.int64),
        np.ascontiguousarray(x, dtype=np.float64),
        None if y is None else np.ascontiguousarray(y, dtype=np.float64),
        n_groups, n, mean, ss, const,
    )
    return n, mean, ss, const.astype(bool)


def _all_finite(values: npt.NDArray[np.float64]) -> bool:
    """True if no NaN/inf: one summation pass (inf or NaN anywhere makes the sum non-finite;
    a finite overflow to inf is re-checked elementwise)."""
    total = float(np.sum(values))
    return bool(np.isfinite(total) or np.isfinite(values).all())


def _one_sample(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64] | None = None) -> _SampleStats:
    return _SampleStats(*_moments(np.zeros(x.size, dtype=np.int64), x, y, 1))


def _result(out: dict[str, np.ndarray], **extra: Any) -> TostResult:
    def f(key: str) -> float:
        return float(np.asarray(out[key])[0])

    status = str(np.asarray(out["status"])[0])
    return TostResult(
        p_value=f("p_value"),
        equivalent=bool(np.asarray(out["equivalent"])[0]),
        mean_diff=f("mean_diff"),
        ci_low=f("ci_low"),
        ci_high=f("ci_high"),
        t_lower=f("t_lower"),
        p_lower=f("p_lower"),
        t_upper=f("t_upper"),
        p_upper=f("p_upper"),
        df=f("df"),
        n=int(f("n")),
        status=status,
        warnings=tost_warnings(int(f("n")), extra.get("n_omitted", 0), status, extra["design"] == "paired"),
        **extra,
    )


# --------------------------------------------------------------------------- public API


def tost_paired(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    low: float,
    high: float,
    alpha: float = 0.05,
    nan_policy: NanPolicy = "raise",
) -> TostResult:
    """Paired TOST on the differences ``x - y`` (statsmodels ``ttost_paired(x, y, low, high)``).

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Paired scores (same item under two conditions); equal lengths.
    low, high : float
        Equivalence interval for the mean difference, ``low < high`` (same unit as scores).
    alpha : float
        Significance level of each one-sided test; the reported interval is ``1 - 2*alpha``.
    nan_policy : {"raise", "omit"}
        ``"omit"`` drops every pair with a NaN on either side.
    """
    margins = _check_margins(low, high, alpha)
    low, high, alpha = margins
    check_nan_policy(nan_policy)
    xa, ya = _as_1d(x, "x"), _as_1d(y, "y")
    if xa.shape != ya.shape:
        raise DDPDataError(
            f"paired samples must have the same length, got len(x)={xa.size} and len(y)={ya.size}; "
            "pair the rows first (ddpcore.stats._table.pair_conditions)",
            code="D308",
        )
    nan = np.isnan(xa) | np.isnan(ya)
    n_omitted = 0
    if nan.any():
        if nan_policy == "raise":
            raise _nan_error("x" if np.isnan(xa).any() else "y", np.isnan(xa) if np.isnan(xa).any() else np.isnan(ya))
        n_omitted = int(nan.sum())
        xa, ya = xa[~nan], ya[~nan]
    if xa.size == 0:
        raise DDPDataError("no pairs to test (empty input" + (" after omitting NaN" if n_omitted else "") + ")", code="D309")
    out = _paired_from_stats(_one_sample(xa, ya), margins)
    return _result(
        out,
        low=low,
        high=high,
        alpha=alpha,
        design="paired",
        n_omitted=n_omitted,
        signature=signature("tost_paired", low=low, high=high, alpha=alpha, nan_policy=nan_policy),
    )


def tost_ind(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    low: float,
    high: float,
    alpha: float = 0.05,
    equal_var: bool = True,
    nan_policy: NanPolicy = "raise",
) -> TostResult:
    """Independent-samples TOST on ``mean(x) - mean(y)``.

    ``equal_var=True`` pools the variances (statsmodels ``ttost_ind(..., usevar="pooled")``),
    ``False`` is Welch's test with Satterthwaite df (``usevar="unequal"``).

    Parameters
    ----------
    x : array_like, shape (n_x,)
    y : array_like, shape (n_y,)
    low, high, alpha, nan_policy
        As in :func:`tost_paired`; ``"omit"`` drops NaN from each sample separately.
    """
    margins = _check_margins(low, high, alpha)
    low, high, alpha = margins
    check_nan_policy(nan_policy)
    xa, ya = _as_1d(x, "x"), _as_1d(y, "y")
    n_omitted = 0
    for name, arr in (("x", xa), ("y", ya)):
        if np.isnan(arr).any() and nan_policy == "raise":
            raise _nan_error(name, np.isnan(arr))
    if nan_policy == "omit":
        n_omitted = int(np.isnan(xa).sum() + np.isnan(ya).sum())
        xa, ya = xa[~np.isnan(xa)], ya[~np.isnan(ya)]
    for name, arr in (("x", xa), ("y", ya)):
        if arr.size == 0:
            raise DDPDataError(f"sample {name} is empty" + (" after omitting NaN" if n_omitted else ""), code="D309")
    sx, sy = _one_sample(xa), _one_sample(ya)
    out = _ind_from_stats(sx, sy, margins, equal_var)
    return _result(
        out,
        low=low,
        high=high,
        alpha=alpha,
        design="independent",
        n_x=int(sx.n[0]),
        n_y=int(sy.n[0]),
        equal_var=bool(equal_var),
        n_omitted=n_omitted,
        signature=signature("tost_ind", low=low, high=high, alpha=alpha, equal_var=bool(equal_var), nan_policy=nan_policy),
    )


def tost_grouped(
    df: Any,
    by: str | Sequence[str],
    x: str,
    y: str,
    low: float,
    high: float,
    alpha: float = 0.05,
    paired: bool = True,
    equal_var: bool = True,
    nan_policy: NanPolicy = "raise",
) -> pl.DataFrame:
    """TOST for every group of a table in one vectorised pass (no Python loop per group).

    Parameters
    ----------
    df
        polars/pandas DataFrame, pyarrow Table or path with the group columns and two
        score columns.
    by
        Group column(s), e.g. ``["metric", "domain", "system"]``. Every distinct
        combination is one test.
    x, y
        Score columns. ``paired=True``: each row is one pair ``(x, y)``; a null in either
        column is a missing value (handled by ``nan_policy``). ``paired=False``: the
        non-null values of ``x`` and of ``y`` within a group are two independent samples
        of possibly different sizes (null = absent); NaN follows ``nan_policy``.
    low, high, alpha, equal_var
        As in :func:`tost_paired` / :func:`tost_ind`.

    Returns
    -------
    polars.DataFrame
        One row per group, sorted by ``by``: the group columns, ``n`` (pairs, or
        ``n_x + n_y``), [``n_x``, ``n_y``], ``mean_diff``, ``df``, ``t_lower``,
        ``p_lower``, ``t_upper``, ``p_upper``, ``p_value``, ``ci_low``, ``ci_high``,
        ``equivalent``, ``status`` (see the module docstring; a group left with too few
        values gets ``status="too_few"`` instead of stopping the other groups).
    """
    import polars as pl

    from ._frames import as_frame

    margins = _check_margins(low, high, alpha)
    check_nan_policy(nan_policy)
    by = _check_by([by] if isinstance(by, str) else list(by))
    frame = as_frame(df, key_columns=by)
    xs, ys = _grouped_scores(frame, by, x, y, paired, nan_policy)
    moments, keys = _grouped_moments(frame, by, xs, ys if paired else None)
    if paired:
        d = _SampleStats(*moments(xs, ys))  # NaN on either side -> pair skipped
        out = _paired_from_stats(d, margins)
        cols: dict[str, Any] = {"n": d.n.astype(np.int64)}
    else:
        sx, sy = _SampleStats(*moments(xs, None)), _SampleStats(*moments(ys, None))
        out = _ind_from_stats(sx, sy, margins, equal_var)
        cols = {"n": out["n"].astype(np.int64), "n_x": sx.n.astype(np.int64), "n_y": sy.n.astype(np.int64)}
    for key in ("mean_diff", "df", "t_lower", "p_lower", "t_upper", "p_upper", "p_value", "ci_low", "ci_high"):
        cols[key] = np.asarray(out[key], dtype=np.float64)
    cols["equivalent"] = np.asarray(out["equivalent"], dtype=bool)
    cols["status"] = np.asarray(out["status"]).astype(str)
    return keys.with_columns([pl.Series(k, v) for k, v in cols.items()])


#: the columns :func:`tost_grouped` adds after the group columns
GROUPED_COLUMNS = ("n", "n_x", "n_y", "mean_diff", "df", "t_lower", "p_lower", "t_upper", "p_upper", "p_value",
                   "ci_low", "ci_high", "equivalent", "status")


def _check_by(by: list[str]) -> list[str]:
    """The group columns of :func:`tost_grouped`, checked (D311): at least one, none given twice, none named
    like a column the result adds (the result's ``n`` or ``status`` would silently replace a group column of
    that name, and the groups could no longer be told apart)."""
    if not by:
        raise DDPUsageError("tost_grouped needs at least one group column (by=); for one test over the whole "
                            "table use tost_paired / tost_ind", code="D311")
    twice = sorted({str(k) for k in by if by.count(k) > 1})
    if twice:
        raise DDPUsageError(f"group columns name {', '.join(map(repr, twice))} twice (by= / --by); give each column once",
                            code="D311")
    taken = [k for k in by if k in GROUPED_COLUMNS]
    if taken:
        raise DDPUsageError(f"group column {taken[0]!r} (by= / --by) has the name of a column the grouped TOST adds "
                            f"to its result ({', '.join(GROUPED_COLUMNS)}), which would replace it; rename the "
                            "column in the table first", code="D311")
    return by


def _grouped_scores(frame: Any, by: list[str], x: str, y: str, paired: bool,
                    nan_policy: NanPolicy) -> tuple[np.ndarray, np.ndarray]:
    """The two score columns of :func:`tost_grouped` as float64 arrays (n_rows,), nulls as NaN,
    after its checks: columns present (D301), rows (D309), numeric (D303), finite (D312), missing
    values under ``nan_policy="raise"`` (D302), magnitude (D360)."""
    import polars as pl

    for col in [*by, x, y]:
        if col not in frame.columns:
            raise DDPDataError(f"column '{col}' is missing; available columns: {', '.join(frame.columns)}", code="D301")
    if frame.height == 0:
        raise DDPDataError("the table has no rows", code="D309")
    for col in (x, y):
        if not frame.schema[col].is_numeric():
            raise DDPDataError(f"column '{col}' must be numeric, got {frame.schema[col]}", code="D303")
    xs = frame[x].cast(pl.Float64).to_numpy()
    ys = frame[y].cast(pl.Float64).to_numpy()  # nulls become NaN
    n_missing = frame[x].null_count() + frame[y].null_count()
    scan = load("stats_segments").scan_values
    clean = not n_missing and not any(scan(np.ascontiguousarray(a), MAX_ABS_SCORE) != (False, False) for a in (xs, ys))
    if not clean and (n_missing or not (_all_finite(xs) and _all_finite(ys))):
        for arr, name in ((xs, x), (ys, y)):
            inf = np.isinf(arr)
            if inf.any():
                raise DDPDataError(f"column '{name}' row {int(np.flatnonzero(inf)[0]) + 1} is infinite; scores must be finite", code="D312")
        if nan_policy == "raise":
            for arr, name in ((xs, x), (ys, y)):
                # paired: any missing value is an error; independent: null = absent, NaN = error
                missing = np.isnan(arr) if paired else (np.isnan(arr) & frame[name].is_not_null().to_numpy())
                if missing.any():
                    raise DDPDataError(
                        f"column '{name}' row {int(np.flatnonzero(missing)[0]) + 1}: {int(missing.sum())} missing "
                        "(null/NaN) score(s); remove them or pass nan_policy='omit' (--nan-policy omit)",
                        code="D302",
                    )
    if not clean:
        check_magnitude(xs, x)
        check_magnitude(ys, y)
    return xs, ys


def _grouped_moments(frame: Any, by: list[str], xs: np.ndarray, ys: np.ndarray | None) -> tuple[Any, Any]:
    """Per-group (n, mean, ss, constant) of ``x - y`` (or one column) and the group keys.

    Rows already grouped in ascending key order (the usual layout of a long table) take the
    segmented kernel (``stats_segments.segment_moments``: one group at a time, in cache); a
    single integer key column is then used as is, without factorising. Other tables are
    factorised and go through ``stats_kernels.group_moments``. Both kernels do the same
    arithmetic in the same order, so the results are identical.

    Returns ``(moments, keys)``: ``moments(a, b)`` gives four arrays of shape (n_groups,).
    """
    import polars as pl

    seg = load("stats_segments")
    height = frame.height
    raw = None
    if len(by) == 1 and (frame.schema[by[0]].is_integer() or frame.schema[by[0]] == pl.Boolean):
        col = frame[by[0]]
        if col.null_count() == 0 and _fits_int64(col):  # ids beyond the int64 range: factorised (ranked) below
            raw = np.ascontiguousarray(col.cast(pl.Int64).to_numpy())

    def segmented(keys_row: np.ndarray) -> tuple[Any, np.ndarray] | None:
        n = np.empty(height)
        mean = np.empty(height)
        ss = np.empty(height)
        const = np.empty(height, dtype=np.uint8)
        first = np.empty(height, dtype=np.int64)
        xa = np.ascontiguousarray(xs, dtype=np.float64)
        ya = None if ys is None else np.ascontiguousarray(ys, dtype=np.float64)
        k = seg.segment_moments(keys_row, xa, ya, n, mean, ss, const, first)
        if k < 0:
            return None
        done = (n[:k], mean[:k], ss[:k], const[:k].astype(bool))

        def moments(a: np.ndarray, b: np.ndarray | None) -> tuple[np.ndarray, ...]:
            if a is xs and b is ys:
                return done
            out = (np.empty(k), np.empty(k), np.empty(k), np.empty(k, dtype=np.uint8), np.empty(k, dtype=np.int64))
            seg.segment_moments(keys_row, np.ascontiguousarray(a, dtype=np.float64),
                                None if b is None else np.ascontiguousarray(b, dtype=np.float64), *out)
            return out[0], out[1], out[2], out[3].astype(bool)

        return moments, first[:k]

    if raw is not None:
        got = segmented(raw)
        if got is not None:
            return got[0], frame.select(by)[got[1]]
    codes, keys = factorize(frame, by)
    got = segmented(np.ascontiguousarray(codes, dtype=np.int64))
    if got is not None:
        return got[0], keys
    n_groups = keys.height
    return (lambda a, b: _moments(codes, a, b, n_groups)), keys


def tost_grouped_signature(
    low: float, high: float, alpha: float = 0.05, paired: bool = True, equal_var: bool = True, nan_policy: str = "raise"
) -> dict[str, Any]:
    """Signature describing a :func:`tost_grouped` run (the table itself carries none)."""
    return signature(
        "tost_grouped",
        design="paired" if paired else "independent",
        low=float(low),
        high=float(high),
        alpha=float(alpha),
        equal_var=bool(equal_var),
        nan_policy=nan_policy,
    )


__all__ = ["TostResult", "tost_paired", "tost_ind", "tost_grouped", "tost_grouped_signature"]
