"""Engines that run the pipeline over a corpus: local (in-process and -j N), the journaled file run, Ray, shard merge.

Both file-to-file engines implement :class:`ddpcore.engines.base.Engine` (``name``, ``check(options)``,
``run(source, targets, options)``); :func:`get_engine` gives the one ``--engine NAME`` means.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Engine

#: the values of ``--engine``
ENGINES = ("local", "ray")


def get_engine(name: str) -> Engine:
    """The engine called ``name`` (``"local"``: :class:`~ddpcore.engines.run.LocalEngine`, ``"ray"``:
    :class:`~ddpcore.engines.ray_engine.RayEngine`); D192 for any other name. Ray is not imported here."""
    if name == "local":
        from .run import LocalEngine

        return LocalEngine()
    if name == "ray":
        from .ray_engine import RayEngine

        return RayEngine()
    from ..errors import DDPUsageError

    raise DDPUsageError(f"engine must be 'local' or 'ray', not {name!r}", code="D192")
