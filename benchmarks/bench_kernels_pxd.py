"""Before/after timing of the kernels that now share code through .pxd files (issue 20).

Not a test. Times every entry point whose module cimports ``kinds``/``hashsets``/``pcg64``/
``threads`` on fixed synthetic inputs (numpy ``default_rng(20)``), median of ``--repeat`` runs
after one warm-up, one thread unless ``-j``. Run it once per build and compare the JSON files::

    PYTHONPATH=<old tree>/src python benchmarks/bench_kernels_pxd.py -o before.json
    PYTHONPATH=<new tree>/src python benchmarks/bench_kernels_pxd.py -o after.json
    python benchmarks/bench_kernels_pxd.py --compare before.json after.json

Results of the issue-20 change: ``benchmarks/kernels_pxd.md``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from types import SimpleNamespace
from typing import Callable

import numpy as np


def _cases(n_threads: int) -> dict[str, Callable[[], object]]:
    import ddpcore
    from ddpcore._native import load

    dk, ak = load("ddp_kernels"), load("antecedent")
    sk, sc, cl = load("stats_kernels"), load("stats_compare"), load("stats_cluster")
    rng = np.random.default_rng(20)
    u64 = lambda a: np.asarray(a, dtype=np.uint64)  # noqa: E731

    # ---- tokens for extract_items: 400k tokens in units of 25, hashes from a small vocabulary
    n_tok = 400_000
    unit = np.zeros(n_tok, np.uint8)
    unit[::25] = 1
    head = np.arange(n_tok, dtype=np.int64) - (np.arange(n_tok) % 25) + rng.integers(0, 25, n_tok)
    tokens = SimpleNamespace(
        lower=u64(rng.integers(1, 60, n_tok)), pos=rng.integers(0, 8, n_tok).astype(np.int32),
        tag=u64(rng.integers(100, 106, n_tok)), dep=u64(rng.integers(200, 208, n_tok)), head=head,
        iob=rng.choice(np.array([0, 1, 2, 2, 2, 3], np.int8), n_tok), enttype=u64(rng.integers(300, 304, n_tok)),
        unit_start=unit)
    e64 = np.zeros(0, np.int64)
    tables = SimpleNamespace(
        pronoun_hashes=u64([1, 2, 3, 4]), pronoun_group_bits=np.array([1, 2, 4, 8], np.int64),
        label_hashes=u64([300, 301, 302]), label_compat=np.array([3, 4, 8], np.int64),
        np_dep_hashes=u64([200, 201, 202]), person_noun_hashes=u64([10, 11, 12]), drop_leading_hashes=u64([13]),
        drop_trailing_hashes=u64([14]), dep_expl=207, dep_conj=206, tag_plural=101, tag_plural_proper=103,
        pos_pron=1, pos_noun=2, pos_space=7, plural_noun_compat=8, person_noun_compat=3, noun_compat=4,
        noun_key_salt=99, title_hashes=u64([20, 21]), title_bits=np.array([1, 2], np.int64),
        name_hashes=u64([22, 23]), name_bits=np.array([1, 2], np.int64), label_skip_adj=np.array([0, 1, 0], np.int64),
        pos_adj=3, person_label=0, key_with_label=True, key_with_title=True, heads_from_tags=False, pos_propn=4,
        chain_nouns=1, tag_hyph=104, tag_possessive=105, tag_prp_poss=102, pos_punct=5, pos_det=6, pos_num=0,
        address_hashes=u64([15, 16]))

    # ---- items for the distance, entity-id and antecedent kernels: 2000 documents of 100 items
    n_docs, per = 2000, 100
    n = n_docs * per
    offsets = np.arange(0, n + 1, per, dtype=np.int64)
    kind = rng.choice(np.array([0, 0, 1, 2], np.int8), n)
    sent_doc = np.sort(rng.integers(0, 40, size=(n_docs, per)), axis=1).astype(np.int32).ravel()
    gsent = (sent_doc + np.repeat(np.arange(n_docs, dtype=np.int32) * 40, per)).astype(np.int32)
    seg = (gsent // 4).astype(np.int32)
    label = np.where(kind == 1, rng.choice(np.array([1, 2, 4, 8]), n), rng.integers(0, 11, n)).astype(np.int16)
    compat = np.where(kind == 1, label, rng.integers(1, 16, n)).astype(np.uint8)
    key = u64(np.where(kind == 1, 0, rng.integers(1, 30, n)))
    last = u64(rng.integers(1, 30, n))
    nkey = rng.integers(1, 3, n).astype(np.int16)
    eid, n_ent = dk.assign_entity_ids(offsets, kind, label, key, last, nkey, 0, True)
    tok = (np.arange(n, dtype=np.int64) * 3)
    cols = SimpleNamespace(
        kind=kind, label=label, compat=compat, key=key, last_token_key=last, entity=eid, sentence=sent_doc,
        token=tok, end_token=tok + 1, offsets__doc=offsets, lower=u64(rng.integers(1, 40, 3 * n)),
        dep=u64(rng.integers(200, 208, 3 * n)), head=np.arange(3 * n, dtype=np.int64),
        offsets__doc_tok=offsets * 3)
    atab = SimpleNamespace(subject_deps=u64([200]), object_deps=u64([201]), possessive_deps=u64([202]),
                           prep_object_deps=u64([203]), open_quotes=u64([1]), close_quotes=u64([2]),
                           toggle_quotes=u64([3]), titles=u64([4, 5]), reflexives=u64([6]))
    role, quote, title, refl = ak.item_attributes(cols, atab)
    w = rng.integers(-8, 9, size=(2, len(ak.FEATURES))) / 4.0
    b, thr = np.array([0.25, -0.5]), np.array([0.5, 0.4])
    fb, ab = np.array([1, 0], np.uint8), np.array([0.1, 0.0])
    link, _ = ak.link_antecedents(cols, role, quote, title, refl, n_ent, 3, 3, w, b, thr, fb, ab, 1)

    # ---- statistics: PCG64 state of seed 12345, per-unit values
    st = np.random.PCG64(12345).state["state"]
    pcg = (st["state"] >> 64, st["state"] & (2**64 - 1), st["inc"] >> 64, st["inc"] & (2**64 - 1))
    v = rng.normal(size=(2000, 8))
    out_boot = np.empty((2000, 8))
    raw = np.empty(4_000_000, np.uint64)
    d = rng.normal(size=(2000, 16))
    dc = np.ascontiguousarray(np.stack([d[:, :8], d[:, 8:]]))
    obs = np.empty(16)
    sc.observed_abs_chunked(dc, obs)
    cnt = np.empty(16, np.int64)
    out_chunk = np.empty((1000, 16))
    obs_plain = np.empty(16)
    sc.observed_abs(d, obs_plain)
    dr = np.round(rng.normal(size=(2000, 500)), 1)
    r_out = [np.empty(2000), np.empty(2000), np.empty(2000, np.int64), np.empty(2000, np.int64), np.empty(2000, np.uint8)]
    flip = rng.integers(0, 2, size=(2000, 1000)).astype(np.uint8)
    dk_pair = rng.normal(size=(1000, 10))
    out_flip = np.empty((2000, 10))
    ta, tb = rng.normal(size=(200_000, 8)), rng.normal(size=(200_000, 8))
    out_tau = np.empty(200_000)
    nt = n_threads
    print(f"ddpcore from {ddpcore.__file__}", file=sys.stderr)
    return {
        "ddp_kernels.extract_items (400k tokens)": lambda: dk.extract_items(tokens, tables),
        "ddp_kernels.assign_entity_ids (200k items)": lambda: dk.assign_entity_ids(
            offsets, kind, label, key, last, nkey, 0, True),
        "ddp_kernels.compute_distances (200k items)": lambda: dk.compute_distances(
            offsets, kind, sent_doc, eid, compat, seg, gsent, n_ent, int(seg.max()) + 1, int(gsent.max()) + 1, False, nt),
        "antecedent.item_attributes (200k items)": lambda: ak.item_attributes(cols, atab),
        "antecedent.link_antecedents (200k items, 3 sentences)": lambda: ak.link_antecedents(
            cols, role, quote, title, refl, n_ent, 3, 3, w, b, thr, fb, ab, nt),
        "antecedent.learned_distances (200k items)": lambda: ak.learned_distances(
            offsets, kind, sent_doc, link, seg, gsent, int(seg.max()) + 1, int(gsent.max()) + 1, False),
        "stats_kernels.pcg64_raw (4M words)": lambda: sk.pcg64_raw(*pcg, 0, raw),
        "stats_kernels.resample_sums_pcg64 (2000 reps x 2000 units x 8)": lambda: sk.resample_sums_pcg64(
            *pcg, v, out_boot, 2000, nt),
        "stats_compare.pcg64_words (4M words)": lambda: sc.pcg64_words(*pcg, 0, raw),
        "stats_compare.ar_exceed_chunked (5000 trials x 2000 units x 16)": lambda: sc.ar_exceed_chunked(
            *pcg, 5000, dc, obs, cnt, None, nt),
        "stats_compare.ar_exceed_pcg64 (1000 trials x 2000 units x 16)": lambda: sc.ar_exceed_pcg64(
            *pcg, 1000, d, obs_plain, cnt, nt),
        "stats_compare.bootstrap_sums_chunked (1000 reps x 2000 units x 16)": lambda: sc.bootstrap_sums_chunked(
            *pcg, dc, out_chunk, None, nt),
        "stats_cluster.signed_rank_rows (2000 tests x 500)": lambda: cl.signed_rank_rows(dr, *r_out, nt),
        "stats_cluster.sign_flip_sums (2000 perms x 1000 keys x 10)": lambda: cl.sign_flip_sums(
            flip, dk_pair, out_flip, nt),
        "stats_kernels.tau_b_rows (200k rows of 8)": lambda: sk.tau_b_rows(ta, tb, out_tau, nt),
    }


def run(repeat: int, n_threads: int) -> dict[str, dict[str, float]]:
    """Median and minimum wall time (ms) of each case over ``repeat`` runs (one warm-up first)."""
    out = {}
    for name, fn in _cases(n_threads).items():
        fn()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        out[name] = {"median_ms": statistics.median(times), "min_ms": min(times)}
        print(f"{name:70s} {out[name]['median_ms']:9.2f} ms (min {out[name]['min_ms']:.2f})", file=sys.stderr)
    return out


def compare(before: dict, after: dict) -> str:
    """A Markdown table: median before / after (ms) and the after/before ratio of medians."""
    lines = ["| kernel (input) | before median ms | after median ms | after / before |", "|---|---:|---:|---:|"]
    for name in before:
        b, a = before[name]["median_ms"], after[name]["median_ms"]
        lines.append(f"| {name} | {b:.2f} | {a:.2f} | {a / b:.3f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", help="write the timings as JSON here")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("-j", "--threads", type=int, default=1)
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="print the table of two JSON files")
    args = ap.parse_args()
    if args.compare:
        with open(args.compare[0]) as f1, open(args.compare[1]) as f2:
            print(compare(json.load(f1), json.load(f2)))
        return
    res = run(args.repeat, args.threads)
    if args.output:
        with open(args.output, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
