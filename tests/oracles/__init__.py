"""Slow, obviously-correct reference implementations (test oracles), one module per thing checked.

Plain loops over the written rules, never imports of the code they check:

* :mod:`oracles.ddp_kernels` — the DDP kernels of ``ddpcore._native.ddp_kernels`` (distances, entity
  ids, key hashes, sentence starts, item extraction);
* :mod:`oracles.antecedent` — the antecedent kernels of ``ddpcore._native.antecedent`` (item
  attributes, candidate features, links, learned distances);
* :mod:`oracles.curation` — ``ddpcore.curate`` (``ddp select`` / ``ddp sample``);
* :mod:`oracles.metric_s` — ``ddpcore.stats.metric_s``: a transcription of DiscoX's released
  ``calculate_score``;
* :mod:`oracles.gold` — ``ddpcore.gold.validate.compute_gold_distances`` (gold scope and distances).

``tests/conftest.py`` puts ``tests/`` on ``sys.path``, so tests import ``from oracles.<module> import ...``.
The statistics oracles live in ``tests/stats/stats_oracles.py``.
"""
