"""The local Ray that ddpcore starts runs its workers at the driver's priority.

Ray starts its worker processes at niceness 15 unless ``RAY_worker_niceness`` says otherwise; on a
machine shared with other work the actors then got a fraction of the CPU the local engine gets
(measured: 2-3x its per-batch time at load 20, benchmarks/ray_cluster_table.py). ddpcore's
:func:`~ddpcore.engines.ray_engine.ray_session` starts a local Ray with ``RAY_worker_niceness=0``
unless the user set it. A file of its own: a Ray already initialised (another module's fixture)
would be used as it is.
"""
from __future__ import annotations

import os

import pytest

from ddpcore.engines import ray_engine as RE


@pytest.mark.slow
@pytest.mark.parametrize("user", [None, "7"], ids=["default", "user-setting"])
def test_a_local_ray_runs_its_workers_at_the_drivers_priority_unless_the_user_says(monkeypatch, user):
    ray = pytest.importorskip("ray", reason="Ray is not installed here (pip install 'ddpcore[ray]')")
    if ray.is_initialized():
        pytest.skip("a Ray is already initialised in this process; ray_session would use it as it is")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    if user is None:
        monkeypatch.delenv("RAY_worker_niceness", raising=False)
    else:
        monkeypatch.setenv("RAY_worker_niceness", user)
    with RE.ray_session(num_cpus=1, quiet=True) as r:
        # (a lambda: pickled by value; the workers cannot import this test module)
        worker = r.get(r.remote(num_cpus=1)(lambda: __import__("os").nice(0)).remote())
    assert worker == (os.nice(0) if user is None else int(user))
    assert os.environ.get("RAY_worker_niceness") == user  # the driver's environment is left as it was
