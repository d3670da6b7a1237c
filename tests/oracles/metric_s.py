"""Test oracle: a faithful transcription of DiscoX's released ``calculate_score``.

Source: repository ``ByteDance-Seed/DiscoX``, file ``eval/eval_res.py``, commit
``5b6fb53494e1cd3303ff3b0935a3f715f28b0929`` (Copyright (c) 2025 Bytedance Ltd. and/or its
affiliates, Apache-2.0). The four mapping tables, the loops, the membership tests
(``key in item and item[key] in MAPPING``: exact string match, no trimming, no case folding,
only the Chinese keys ``问题严重程度`` / ``判断结果``), the defaults for unknown labels
(accuracy -5, checkpoint / fluency / appropriateness 0) and the clamping are copied statement
by statement. The only change: ``logger.warning(...)`` calls are replaced by appending the
message to ``warnings`` so tests can count the unknown labels the released code logs.

This file lives in tests/ only; ddpcore's own implementation (``ddpcore.stats.metric_s``) is written
independently from the tables documented in docs/metric-s.md.
"""
from __future__ import annotations


def calculate_score(acc: list, ckpt: list, flu: list, appropiate: list, warnings: list | None = None):
    """Released ``calculate_score`` (see the module docstring). Returns
    ``(acc_score, flu_score, appropiate_score)``; unknown-label log lines go to ``warnings``."""
    log = warnings if warnings is not None else []

    ACCURACY_MAPPING = {
        "整体无问题": 0,
        '普通': -5, 'Major': -5,
        '严重': -10, 'Critical': -10,
        '非常严重': -50, 'Extremely Critical': -50,
    }
    CORRECTNESS_MAPPING = {
        '错误': -5,
        '正确': 0,
    }
    FLUENCY_MAPPING = {
        '无问题': 0,
        '有问题': -2,
        "整体无问题": 0,
    }
    APPROPIATE_MAPPING = {
        '无问题': 0,
        '有问题': -5,
        "整体无问题": 0,
    }
    # calculating accuracy score
    acc_score = 60
    for item in acc:
        if "问题严重程度" in item and item["问题严重程度"] in ACCURACY_MAPPING:
            acc_score += ACCURACY_MAPPING[item["问题严重程度"]]
        else:
            log.append(f"Unknown severity level: {item}. Defaulting to -5 points.")
            acc_score -= 5
    for item in ckpt:
        if "判断结果" in item and item["判断结果"] in CORRECTNESS_MAPPING:
            acc_score += CORRECTNESS_MAPPING[item["判断结果"]]
        else:
            log.append(f"Unknown correctness level: {item}. Defaulting to consider it right.")
    acc_score = max(acc_score, 0)
    # calculating fluency score
    flu_score = 20
    for item in flu:
        if "问题严重程度" in item and item["问题严重程度"] in FLUENCY_MAPPING:
            flu_score += FLUENCY_MAPPING[item["问题严重程度"]]
        else:
            log.append(f"Unknown severity level: {item}. Defaulting to -0 points.")
            flu_score -= 0
    flu_score = max(flu_score, 0)

    # calculating appropiate score
    appropiate_score = 20
    for item in appropiate:
        if "问题严重程度" in item and item["问题严重程度"] in APPROPIATE_MAPPING:
            appropiate_score += APPROPIATE_MAPPING[item["问题严重程度"]]
        else:
            log.append(f"Unknown severity level: {item}. Defaulting to -0 points.")
            appropiate_score += 0
    appropiate_score = max(appropiate_score, 0)

    return acc_score, flu_score, appropiate_score
