"""Evaluation statistics: TOST, ranking tau with bootstrap, system clustering, agreement.

Names are resolved lazily (``__getattr__``) so that ``import ddpcore.stats`` stays cheap:
numpy, scipy and polars load only when a function is first used. Public API::

    tost_paired, tost_ind, tost_grouped, TostResult             ddpcore.stats.tost
    kendall_tau_b, pearson, spearman                           ddpcore.stats.correlation
    bootstrap_tau, BootstrapTauResult, bootstrap_system_means  ddpcore.stats.bootstrap
    cluster_systems, ClusterResult, wilcoxon_signed_rank,
    compare_clusters, ClusterComparisonResult                  ddpcore.stats.clustering
    krippendorff_alpha, reliability_matrix, znormalize         ddpcore.stats.agreement
    krippendorff_alpha_bootstrap, AlphaBootstrapResult         ddpcore.stats.alpha_bootstrap
    lowess                                                     ddpcore.stats.lowess
    errors_per_1000_chars, error_free_rate,
    boundary_span_rate, boundary_rate_difference,
    score_recoverability_r2, ols_r2                            ddpcore.stats.spans
    annotation_time_per_segment                                ddpcore.stats.timing
    compare_systems, CompareResult, CompareTests               ddpcore.stats.compare
    blindness, BlindnessResult, BlindnessDesign,
    BlindnessInputs                                            ddpcore.stats.blindness
    tost_power, tost_n_needed, t_test_power, t_test_mdd        ddpcore.stats.power
    binom_test, sign_test, BinomTestResult                     ddpcore.stats.binom
    load_long_table, pair_conditions, check_conditions,
    check_single_condition, json_safe, SCORE_A, SCORE_B        ddpcore.stats._table
    TableColumns                                               ddpcore.stats.columns
    ResampleOptions                                            ddpcore.stats.options
    stratify                                                   ddpcore.stats.stratify
"""
from __future__ import annotations

import importlib
import sys
import types
from typing import Any

#: public name -> submodule (relative to ddpcore.stats) defining it
_EXPORTS: dict[str, str] = {
    # tables
    "load_long_table": "_table",
    "pair_conditions": "_table",
    "signature": "_table",
    "json_safe": "_table",
    "check_conditions": "_table",
    "check_single_condition": "_table",
    "SCORE_A": "_table",
    "SCORE_B": "_table",
    "TableColumns": "columns",
    "ResampleOptions": "options",
    # TOST
    "tost_paired": "tost",
    "tost_ind": "tost",
    "tost_grouped": "tost",
    "TostResult": "tost",
    # correlation
    "kendall_tau_b": "correlation",
    "pearson": "correlation",
    "spearman": "correlation",
    # bootstrap
    "bootstrap_tau": "bootstrap",
    "BootstrapTauResult": "bootstrap",
    # clustering
    "cluster_systems": "clustering",
    "ClusterResult": "clustering",
    "wilcoxon_signed_rank": "clustering",
    "compare_clusters": "clustering",
    "ClusterComparisonResult": "clustering",
    "bootstrap_system_means": "bootstrap",
    "BootstrapMeansResult": "bootstrap",
    # agreement
    "krippendorff_alpha": "agreement",
    "reliability_matrix": "agreement",
    "znormalize": "agreement",
    "krippendorff_alpha_bootstrap": "alpha_bootstrap", "AlphaBootstrapResult": "alpha_bootstrap",
    # smoothing
    "lowess": "lowess",
    # error spans
    "errors_per_1000_chars": "spans",
    "error_free_rate": "spans",
    "boundary_span_rate": "spans",
    "boundary_rate_difference": "spans",
    "score_recoverability_r2": "spans",
    "ols_r2": "spans",
    # timing
    "annotation_time_per_segment": "timing",
    # binomial test and sign test
    "binom_test": "binom", "sign_test": "binom", "BinomTestResult": "binom",
    # every system against a baseline (paired bootstrap + approximate randomization)
    "compare_systems": "compare", "CompareResult": "compare", "CompareTests": "compare",
    # MIX documents, blindness battery, power (issue 10)
    "blindness": "blindness", "BlindnessResult": "blindness", "BlindnessDesign": "blindness",
    "BlindnessInputs": "blindness",
    "tost_power": "power", "tost_n_needed": "power", "t_test_power": "power", "t_test_mdd": "power",
    # scores stratified by DDP (issue 9)
    "stratify": "stratify",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ddpcore.stats' has no attribute {name!r}")
    try:
        mod = importlib.import_module(f"{__name__}.{module}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{module}":
            raise AttributeError(
                f"ddpcore.stats.{name} is not available in this build (module ddpcore.stats.{module} is missing)"
            ) from None
        raise
    value = getattr(mod, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


class _Stats(types.ModuleType):
    """``stratify``, ``blindness`` and ``lowess`` are functions named like the submodules defining them: the
    import system binds the submodule to the package attribute when it is first imported (``from
    ddpcore.stats.stratify import ...``, as the CLI and the report do), so ``ddpcore.stats.stratify(...)`` would
    be the module (TypeError: not callable) or the function depending on what was imported first. The
    function, always."""

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        if isinstance(value, types.ModuleType) and _EXPORTS.get(name) == name:
            value = getattr(value, name)
            globals()[name] = value
        return value


sys.modules[__name__].__class__ = _Stats
