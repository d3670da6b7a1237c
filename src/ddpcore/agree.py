"""Deprecated module path, kept for one release: use :mod:`ddpcore.ddp.agree`."""
from __future__ import annotations

import warnings

from .ddp.agree import agree, format_agreement_text  # noqa: F401

warnings.warn("ddpcore.agree is deprecated and will be removed in the next release; use ddpcore.ddp.agree",
              DeprecationWarning, stacklevel=2)
