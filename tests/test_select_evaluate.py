"""``ddp select --evaluate`` (ddpcore.curate.evaluate) against slow, obviously-correct loops.

The oracles below restate zouharvi/subset2evaluate ``subset2evaluate/evaluate.py`` (read through the
code index, commit 02830664): ``eval_subset_clusters`` (systems sorted by mean, best first; the next
system opens a cluster when all its differences to the previous one are 0 or
``scipy.stats.wilcoxon(diffs, alternative="less").pvalue < 0.05``; 1 below 3 items),
``eval_subset_correlation`` (``scipy.stats.spearmanr`` of subset vs full system means, 0 on a
constant input) and ``eval_clucor_par`` (smallest k >= 5 of the ordered data reaching the target,
as ``k / (n * prop)``). Per-system Kendall tau-b is ``scipy.stats.kendalltau`` (tau-b by default).
All expected values are computed here by scipy (1.17 when written) from these loops.
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import polars as pl
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from ddpcore.curate.evaluate import (EvaluateOptions, clusters_rows, evaluate_arrays, evaluate_selection,
                                     parity_budget, random_units, spearman_rows, tau_rows)
from ddpcore.errors import DDPDataError, DDPUsageError


# --------------------------------------------------------------------------- oracles (subset2evaluate, restated)


def oracle_clusters(h: np.ndarray, alpha: float = 0.05) -> int:
    if len(h) < 3:
        return 1
    means = h.mean(axis=0)
    order = sorted(range(h.shape[1]), key=lambda j: means[j], reverse=True)  # python stable sort, as theirs
    clusters = [[order.pop(0)]]
    while order:
        j = order.pop(0)
        diffs = h[:, j] - h[:, clusters[-1][-1]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if all(d == 0 for d in diffs) or scipy.stats.wilcoxon(diffs, alternative="less").pvalue < alpha:
                clusters.append([j])
            else:
                clusters[-1].append(j)
    return len(clusters)


def oracle_spearman(h_sub: np.ndarray, h_full: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("error", scipy.stats.ConstantInputWarning)
        try:
            return float(scipy.stats.spearmanr(h_full.mean(0), h_sub.mean(0)).correlation)
        except scipy.stats.ConstantInputWarning:
            return 0.0


def oracle_tau(e: np.ndarray, h: np.ndarray) -> float:
    vals = []
    for j in range(h.shape[1]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = scipy.stats.kendalltau(e, h[:, j]).statistic
        if not np.isnan(t):
            vals.append(t)
    return float(np.mean(vals)) if vals else float("nan")


def oracle_parity(h: np.ndarray, order: np.ndarray, prop: float, clu_t: float, cor_t: float) -> tuple[float, float]:
    data = h[order]
    n = len(h)
    for k in range(5, n + 1):
        if oracle_clusters(data[:k]) >= clu_t:
            break
    kc = k
    for k in range(5, n + 1):
        if oracle_spearman(data[:k], h) >= cor_t:
            break
    return kc / (n * prop), k / (n * prop)


def _data(n: int, s: int, seed: int, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    quality = rng.normal(0, 1, s)
    difficulty = rng.gamma(2.0, 2.0, n)
    h = quality[None, :] - 0.4 * difficulty[:, None] + rng.normal(0, 1.5, (n, s))
    if ties:
        h = np.round(np.clip(h * 10, -25, 0))  # MQM-like: many zeros (perfect) and ties
    est = np.round(difficulty + rng.normal(0, 1, n))
    return h, est


# --------------------------------------------------------------------------- the measures


@pytest.mark.parametrize("ties", [False, True])
def test_measures_against_the_loops(ties: bool) -> None:
    h, e = _data(80, 6, 1, ties)
    idx = random_units(40, 80, 25, seed=3)
    masks = np.zeros((40, 80), dtype=bool)
    np.put_along_axis(masks, idx, True, axis=1)
    clu = clusters_rows(h, masks)
    sp = spearman_rows((masks.astype(float) @ h) / 25, h.mean(0))
    tau, _ = tau_rows(e, h, np.sort(idx, axis=1))
    for r in range(40):
        sub = np.sort(idx[r])
        assert clu[r] == oracle_clusters(h[sub])
        assert sp[r] == pytest.approx(oracle_spearman(h[sub], h), abs=1e-12)
        assert tau[r] == pytest.approx(oracle_tau(e[sub], h[sub]), abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 40), st.integers(1, 6))
def test_tau_level_form_equals_scipy(seed: int, k: int, n_levels: int) -> None:
    # the O(k V) form of tau_rows (used for large subsets) against scipy.stats.kendalltau, ties on both sides
    import ddpcore.curate.evaluate as ev

    rng = np.random.default_rng(seed)
    e = rng.integers(0, n_levels, 60).astype(float)
    h = np.round(rng.normal(0, 1.5, (60, 3)))
    idx = np.sort(random_units(5, 60, k, seed), axis=1)
    old = ev.TAU_LEVELS_FACTOR
    try:
        ev.TAU_LEVELS_FACTOR = 0  # force the level form
        got, _ = tau_rows(e, h, idx)
    finally:
        ev.TAU_LEVELS_FACTOR = old
    want = np.array([oracle_tau(e[i], h[i]) for i in idx])
    np.testing.assert_allclose(got, want, atol=1e-12, equal_nan=True)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 7), st.integers(3, 30))
def test_clusters_property(seed: int, s: int, k: int) -> None:
    h, _ = _data(30, s, seed, ties=seed % 2 == 0)
    masks = np.zeros((1, 30), dtype=bool)
    masks[0, :k] = True
    assert clusters_rows(h, masks)[0] == oracle_clusters(h[:k])


def test_parity_against_the_loop() -> None:
    h, e = _data(120, 5, 4, ties=True)
    order = np.argsort(-e, kind="stable")
    full = h.mean(0)
    # targets off the discrete Spearman values of 5 systems (0.6, 0.9, ...): at exactly 0.9 scipy gives
    # 0.8999999999999998 and ddpcore 0.9, a 1-ulp difference that moves the first prefix reaching it
    for prop, ct, rt in ((0.1, 2.0, 0.65), (0.25, 3.0, 0.93), (0.5, 4.5, 0.985)):
        pc, pr, _ = parity_budget(h, e, np.arange(120), "segment", prop, ct, rt, full, 0.05, 1)
        oc, orr = oracle_parity(h, order, prop, ct, rt)
        assert pc == pytest.approx(oc) and pr == pytest.approx(orr)


def test_evaluate_arrays_selected_row_and_percentiles() -> None:
    h, e = _data(200, 6, 7, ties=True)
    opts = EvaluateOptions(budgets=(0.1, 0.5), n_random=60, seed=2, ties="input")
    res = evaluate_arrays(h, e, options=opts)
    order = np.argsort(-e, kind="stable")
    for t, b in zip(res.tables, (0.1, 0.5)):
        k = int(np.ceil(b * 200))
        sub = order[:k]
        assert t["n_items"] == k
        assert t["mean_human"]["selected"] == pytest.approx(h[sub].mean())
        assert t["share_perfect"]["selected"] == pytest.approx((h[sub] == h.max()).mean())
        assert t["clusters"]["selected"] == oracle_clusters(h[np.sort(sub)])
        assert t["tau_estimator"]["selected"] == pytest.approx(oracle_tau(e[sub], h[sub]), abs=1e-12)
        # percentile of the selection among the random draws, from the same draws
        rnd = random_units(60, 200, k, seed=2)
        vals = np.array([h[r].mean() for r in rnd])
        x = h[sub].mean()
        assert t["mean_human"]["percentile"] == pytest.approx(100 * (np.sum(vals < x) + 0.5 * np.sum(vals == x)) / 60)
    # the harder (high-DDP) subset has lower human scores than random: percentile near 0
    assert res.tables[0]["mean_human"]["percentile"] < 10
    again = evaluate_arrays(h, e, options=opts)
    assert json.dumps(again.to_dict()) == json.dumps(res.to_dict())  # seeded: the same draws


def test_parity_randnorm_against_the_loop() -> None:
    # eval_clucor_randnorm: parity divided by the mean parity of random orderings, here the evaluator's own
    # orderings (Generator(PCG64([seed, 1])).permutation, documented) run through the loop oracle
    h, e = _data(100, 5, 8, ties=True)
    opts = EvaluateOptions(budgets=(0.25,), n_random=40, seed=4, n_parity_random=3, ties="input")
    t = evaluate_arrays(h, e, options=opts).tables[0]
    targets = (t["clusters"]["random_mean"], t["spearman"]["random_mean"])
    rng = np.random.Generator(np.random.PCG64([4, 1]))
    rand = [oracle_parity(h, np.argsort(-rng.permutation(100).astype(float), kind="stable"), 0.25, *targets)
            for _ in range(3)]
    sel = oracle_parity(h, np.argsort(-e, kind="stable"), 0.25, *targets)
    assert t["parity_clusters"] == pytest.approx(sel[0])
    assert t["random_parity_clusters"] == pytest.approx(np.mean([r[0] for r in rand]))
    assert t["parity_spearman_randnorm"] == pytest.approx(sel[1] / np.mean([r[1] for r in rand]))


def test_random_tie_break_is_the_documented_permutation() -> None:
    h, e = _data(150, 4, 5, ties=True)
    e = np.minimum(e, 3)  # large ties at the top
    res = evaluate_arrays(h, e, options=EvaluateOptions(budgets=(0.2,), n_random=10, seed=9))
    perm = np.random.Generator(np.random.PCG64([9, 2])).permutation(150)
    sub = np.lexsort((perm, -e))[:30]
    assert res.tables[0]["mean_human"]["selected"] == pytest.approx(h[sub].mean())
    assert any("cut falls inside a tie" in w and "at random" in w for w in res.warnings)
    stable = evaluate_arrays(h, e, options=EvaluateOptions(budgets=(0.2,), n_random=10, seed=9, ties="input"))
    assert stable.tables[0]["mean_human"]["selected"] == pytest.approx(h[np.argsort(-e, kind="stable")[:30]].mean())


def test_document_level_takes_whole_documents() -> None:
    h, e = _data(90, 4, 9)
    doc = np.repeat(np.arange(30), 3)
    res = evaluate_arrays(h, e, doc, options=EvaluateOptions(budgets=(0.2,), n_random=20, level="document",
                                                             ties="input"))
    t = res.tables[0]
    assert t["n_units"] == 6 and t["n_documents"] == 6 and t["n_items"] == 18
    dmax = np.array([e[doc == d].max() for d in range(30)])
    top = np.argsort(-dmax, kind="stable")[:6]
    sub = np.flatnonzero(np.isin(doc, top))
    assert t["mean_human"]["selected"] == pytest.approx(h[sub].mean())


def test_join_counts_missing_scores_and_strict_join() -> None:
    h, e = _data(40, 3, 2, ties=True)
    rows = []
    for i in range(40):
        for j, s in enumerate("ABC"):
            rows.append({"document_id": f"d{i // 4}", "segment_id": i % 4, "system": s,
                         "mqm": None if (i == 3 and s == "B") else float(h[i, j])})
    scores = pl.DataFrame(rows)
    prof = pl.DataFrame({"document_id": [f"d{i // 4}" for i in range(41)], "segment_id": [i % 4 for i in range(41)],
                         "ddp": [float(x) for x in e] + [0.0]})
    msgs: list[str] = []
    res = evaluate_selection(scores, prof, human_col="mqm", options=EvaluateOptions(budgets=(0.5,), n_random=10),
                             warn=msgs.append)
    assert res.n_items == 39  # the segment with a None score is left out, never scored 0
    assert any("1 of 40 segment(s) lack a human score" in m for m in res.warnings)
    assert any("1 profile row(s) no scores" in m for m in msgs)
    with pytest.raises(DDPDataError, match="D843"):
        evaluate_selection(scores, prof, human_col="mqm", strict_join=True,
                           options=EvaluateOptions(budgets=(0.5,), n_random=10))


def test_bad_options() -> None:
    h, e = _data(20, 3, 0)
    with pytest.raises(DDPUsageError, match="D840"):
        evaluate_arrays(h, e, options=EvaluateOptions(budgets=(0.0,)))
    with pytest.raises(DDPDataError, match="D842"):
        evaluate_arrays(h[:, :1], e)
    with pytest.raises(DDPDataError, match="D844"):
        evaluate_arrays(np.where(h > 0, np.nan, h), e)


def test_cli_evaluate_on_the_mtme_fixture(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys
    from pathlib import Path

    toy = Path(__file__).resolve().parent / "data" / "mtme" / "toy"
    prof = tmp_path / "p.parquet"
    run = lambda *a: subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *map(str, a)],  # noqa: E731
                                    capture_output=True, text=True)
    r = run("profile", toy, "--reader", "mtme", "-o", prof)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "report.json"
    r = run("select", "--evaluate", toy, "--reader", "mtme", "--profile", prof, "--human-col", "mqm",
            "--budgets", "0.5,1", "--n-random", "20", "-o", out)
    assert r.returncode == 0, r.stderr
    rep = json.loads(out.read_text())
    assert [t["budget"] for t in rep["budgets"]] == [0.5, 1.0]
    assert rep["n_items"] == 5 and rep["n_systems"] == 3  # sysA's None leaves segment doc-a/3 out
    assert any("mqm 1" in w for w in rep["warnings"]) and "None" in r.stderr
    assert rep["signature"]["human_col"] == "mqm" and rep["signature"]["n_random"] == 20
    full = rep["budgets"][1]
    assert full["spearman"]["selected"] == pytest.approx(1.0)  # the whole set ranks systems as itself
    pl.read_parquet(prof).head(4).write_parquet(tmp_path / "part.parquet")
    r = run("select", "--evaluate", toy, "--reader", "mtme", "--profile", tmp_path / "part.parquet",
            "--human-col", "mqm", "--n-random", "5", "--strict-join", "-o", "-")
    assert r.returncode == 3 and "D843" in r.stderr


@pytest.mark.shared_data
def test_real_wmt23_ende_against_the_wide_tsv(shared_data, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The WMT23 en-de mt-metrics-eval tree of the ESA archive: the selected subset's mean MQM equals
    the same selection made by hand from the release's wide TSV (its WMT-MQM column, same files)."""
    import subprocess
    import sys
    import tarfile
    from pathlib import Path

    dest = Path("/tmp/ddpcore-mtme-wmt23")
    root = dest / "data" / "mt-metrics-eval-v2" / "wmt23"
    if not root.is_dir():
        with tarfile.open(shared_data / "esa-wmt23-ende" / "errorspanannotation_wmt23_en-de_data.tar.xz") as tf:
            members = [m for m in tf.getmembers() if m.name.startswith("data/mt-metrics-eval-v2/wmt23/")]
            tf.extractall(dest, members=members, filter="data")
    prof = tmp_path / "p.parquet"
    run = lambda *a: subprocess.run([sys.executable, "-m", "ddpcore.cli.main", *map(str, a)],  # noqa: E731
                                    capture_output=True, text=True)
    assert run("profile", root, "--reader", "mtme", "-o", prof).returncode == 0
    out = tmp_path / "r.json"
    r = run("select", "--evaluate", root, "--reader", "mtme", "--profile", prof, "--human-col", "mqm",
            "--budgets", "0.25", "--n-random", "50", "--ties", "input", "-o", out)
    assert r.returncode == 0, r.stderr
    rep = json.loads(out.read_text())
    wide = pl.read_csv(shared_data / "esa-wmt23-ende" / "esa_wmt23_en-de_scores_wide.tsv", separator="\t",
                       null_values=[""], infer_schema_length=100000)
    p = pl.read_parquet(prof).select("line_id", "ddp")
    m = wide.select(pl.col("seg_idx").alias("line_id"), "system", "WMT-MQM").pivot(
        on="system", index="line_id", values="WMT-MQM").drop_nulls().join(p, on="line_id").sort("line_id")
    assert m.height == rep["n_items"] == 460
    order = np.argsort(-m["ddp"].to_numpy(), kind="stable")[: int(np.ceil(0.25 * m.height))]
    vals = m.drop("line_id", "ddp").to_numpy()[order]
    assert rep["budgets"][0]["mean_human"]["selected"] == pytest.approx(vals.mean(), rel=1e-12)


# subset2evaluate's own expected values (zouharvi/subset2evaluate, subset2evaluate/test.py,
# test_wmt_method_diversity): wmt23/en-de ordered by its "diversity" method with BLEU, eval_clucor with the
# human score -> mean cluster count 2.3000 and mean Spearman 0.9328 (its tolerance 0.01) over
# PROPS = numpy.geomspace(0.05, 0.5, 10), k = int(n * prop) (a floor; ddp select's budgets take ceil).
# How the inputs were produced (read from subset2evaluate's utils.load_data_wmt, methods and evaluate, and
# rewritten): human = the first of its protocol list present, here da-sqm; systems = the system outputs minus
# synthetic_ref / refA / chrf_bestmbr with a human score; segments where any system's score is "None" or "0"
# are dropped (549 of 557 remain); the order = segments by minus the mean sacrebleu 2.6.0
# BLEU(effective_order=True).sentence_score(a, [b]) over every ordered pair (a, b) of the 12 systems' outputs,
# highest first (a stable sort). That BLEU loop takes minutes, so its result (positions among the 549 kept
# segments) is written below. Min-max normalisation (its default) is left out: it cannot change a mean's rank
# or a Wilcoxon test. Systems are sorted by name here (subset2evaluate takes glob order; only exact ties of
# system means could differ).
S2E_DIVERSITY_BLEU_ORDER = (
    "49 45 80 71 465 335 26 186 136 66 496 266 174 244 490 97 8 524 90 121 222 234 94 11 264 235 265 300 224 77 520 "
    "172 479 0 283 164 200 177 314 538 125 185 256 43 91 82 166 311 32 530 503 443 233 473 336 70 268 263 536 61 "
    "196 506 471 46 546 466 88 230 192 493 436 346 522 525 38 102 228 480 461 48 405 548 323 151 396 6 50 517 202 "
    "381 376 163 170 44 147 284 1 261 132 7 531 275 528 239 214 469 494 495 519 307 187 510 449 448 347 128 458 142 "
    "195 305 450 324 385 18 365 116 148 521 367 113 460 502 514 53 98 12 107 395 296 131 68 505 243 482 523 9 302 "
    "370 84 220 67 180 237 249 286 339 143 246 516 356 127 122 452 3 313 169 435 280 306 78 223 400 484 119 247 501 "
    "270 492 373 210 140 168 527 108 402 428 472 103 64 455 437 518 383 101 188 27 149 19 408 315 152 421 89 344 "
    "165 442 287 36 184 65 464 87 161 144 227 426 81 100 25 63 545 451 419 5 322 497 137 491 226 141 486 318 219 "
    "171 345 83 425 251 95 258 328 357 282 291 303 382 420 498 515 206 337 434 72 211 272 96 297 422 298 37 310 14 "
    "271 352 112 364 28 317 254 333 123 389 438 354 462 267 75 217 194 355 40 351 362 467 229 312 483 20 183 110 "
    "509 513 259 304 73 412 537 157 13 343 10 529 330 391 85 474 325 31 252 55 114 475 295 156 432 366 62 341 236 "
    "316 369 29 154 532 93 399 359 384 541 203 24 130 404 201 301 30 79 74 478 387 199 547 42 539 133 240 320 129 "
    "99 338 407 447 377 190 109 253 374 58 439 441 349 413 160 120 403 225 17 500 111 360 47 153 361 416 218 124 52 "
    "257 33 278 507 105 393 60 209 138 86 288 309 241 489 106 155 342 504 39 104 401 363 51 463 134 150 115 215 179 "
    "92 260 379 543 76 372 205 332 429 56 216 386 232 508 534 329 326 512 221 35 292 368 453 417 213 327 542 456 22 "
    "535 281 242 424 69 511 411 544 262 459 2 173 415 126 23 212 255 481 470 34 198 526 158 340 59 193 248 54 279 "
    "375 41 454 293 444 135 378 485 380 204 476 182 16 392 394 118 15 117 4 388 176 414 334 433 440 189 371 294 167 "
    "197 398 350 499 231 57 488 191 397 269 181 457 487 178 331 145 348 390 319 427 353 308 162 245 208 175 468 540 "
    "423 146 321 410 238 250 276 277 299 431 207 139 446 430 477 289 285 21 159 406 418 409 290 358 533 273 274 445 "
)


@pytest.mark.shared_data
def test_subset2evaluate_expected_clusters_and_correlation(shared_data, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import tarfile

    from ddpcore.curate.evaluate import clusters_rows, spearman_rows, subset_means

    tar = shared_data / "esa-wmt23-ende" / "errorspanannotation_wmt23_en-de_data.tar.xz"
    if not tar.exists():
        pytest.skip(f"{tar} is absent")
    pre = "data/mt-metrics-eval-v2/wmt23/"
    with tarfile.open(tar) as tf:
        names = tf.getnames()
        member = tf.getmember(pre + "human-scores/en-de.da-sqm.seg.score")
        text = tf.extractfile(member).read().decode()  # type: ignore[union-attr]
    outputs = sorted(n.rsplit("/", 1)[1][:-4] for n in names
                     if n.startswith(pre + "system-outputs/en-de/") and n.endswith(".txt"))
    hum: dict[str, list[str]] = {}
    for line in text.splitlines():
        s, v = line.split()
        hum.setdefault(s, []).append(v)
    models = [m for m in outputs if m not in {"synthetic_ref", "refA", "chrf_bestmbr"} and m in hum
              and not all(x in {"None", "0"} for x in hum[m])]
    n_src = len(hum[models[0]])
    keep = [i for i in range(n_src) if not any(hum[m][i] in {"None", "0"} for m in models)]
    assert (len(models), n_src, len(keep)) == (12, 557, 549)
    human = np.array([[float(hum[m][i]) for m in models] for i in keep])
    order = np.array([int(x) for x in "".join(S2E_DIVERSITY_BLEU_ORDER).split()])
    assert sorted(order.tolist()) == list(range(len(keep)))
    clu, cor = [], []
    for prop in np.geomspace(0.05, 0.5, 10):
        mask = np.zeros((1, len(keep)), dtype=bool)
        mask[0, order[:int(len(keep) * prop)]] = True
        clu.append(int(clusters_rows(human, mask, alpha=0.05)[0]))
        cor.append(float(spearman_rows(subset_means(human, mask.astype(np.float64)), human.mean(axis=0))[0]))
    assert abs(np.average(clu) - 2.3000) < 0.01  # subset2evaluate's expected value and tolerance
    assert abs(np.average(cor) - 0.9328) < 0.01
