"""Issue 23 §2: install hints say what works. ddpcore is installed from a clone (it is on no index), so no
message or help text may tell a user to `pip install 'ddpcore[...]'`; the extras' hints name the package
itself (no kernel rebuild) and the clone's `pip install '.[extra]'`."""
from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "ddpcore"


def test_no_hint_points_at_an_index_package() -> None:
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"pip install (-e )?['\"]?ddpcore\[", line):
                bad.append(f"{path.relative_to(SRC)}:{no}: {line.strip()}")
    assert not bad, "hints naming the unpublished ddpcore[...] package:\n" + "\n".join(bad)


def test_extra_hints_name_the_package_and_the_clone_form() -> None:
    from ddpcore.engines.ray_engine import INSTALL_HINT as ray_hint
    from ddpcore.report.plots import INSTALL_HINT as plot_hint

    assert "pip install 'matplotlib>=3.7'" in plot_hint and "pip install '.[plot]'" in plot_hint
    assert "pip install 'ray[data]==2.60.0'" in ray_hint and "pip install '.[ray]'" in ray_hint
    rules = (SRC / "anchors" / "rules.py").read_text(encoding="utf-8")
    assert "pip install names==0.3.0 (the [names] extra; from a ddpcore clone pip install '.[names]')" in rules
    # the versions the hints name are the extras' own (pyproject.toml)
    import tomllib

    extras = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]
    assert extras["plot"] == ["matplotlib>=3.7"] and extras["ray"] == ["ray[data]==2.60.0"]
    assert extras["names"] == ["names==0.3.0"]
