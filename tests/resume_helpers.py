"""A profile run that crashes after its first batch, then is resumed: shared by the tests that check what a
resumed run records of the batches it does not read again."""
from __future__ import annotations

from pathlib import Path

import pytest

from ddpcore.io.segments import SegmentColumns


def crash_then_resume(src: Path, out: Path, *, batch_chars: int) -> tuple[object, list[str]]:
    """Profile ``src`` to ``out`` with spaCy, the parse failing on its second batch; check the run left its
    work folder; resume it. Returns the resumed run's report and the warnings it said."""
    from ddpcore.anchors.rules import get_rules
    from ddpcore.engines.local import Settings
    from ddpcore.engines.run import profile_to_files, work_dir_for
    from ddpcore.io.outputs import check_outputs

    (t,) = check_outputs([("-o", str(out))], inputs=[src])
    kw = dict(cols=SegmentColumns(), settings=Settings(rules=get_rules(None)), n_process=1, batch_chars=batch_chars)
    calls = {"n": 0}

    def crash_after_one(parser):
        def parse(units, progress=None):
            if calls["n"] >= 1:
                raise RuntimeError("simulated crash")
            calls["n"] += 1
            return parser.parse(units, progress)
        return parse

    with pytest.raises(RuntimeError, match="simulated crash"):
        profile_to_files(src, {"segments": t}, parse_wrapper=crash_after_one, **kw)
    assert work_dir_for(out).exists()
    said: list[str] = []
    rep = profile_to_files(src, {"segments": t}, resume=True, warn=said.append, **kw)
    assert rep.resumed_batches >= 1
    return rep, said
