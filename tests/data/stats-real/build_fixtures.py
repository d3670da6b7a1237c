"""Rebuild the small real-data fixtures in this folder from ../shared/data (see SOURCE.md).

Run from the repository root:  python tests/data/stats-real/build_fixtures.py
Deterministic: the documents are chosen by sorted id; nothing random.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[2].parent / "shared" / "data"

ESA_DOCS = (  # 8 WMT23 en-de documents with ESA-1/ESA-2 items (incl. the rc5 split-document bug)
    "aj-english.33941", "cnn.151755", "elitr_minuting-19", "jewelry-3-en_0325147-134",
    "Precis.110349818375052000", "camera-3-en_0656505-56", "YakyuNightOwl.110351000720991008",
    "apparel-5-en_0929230-74",
)
WMT24_LP = "en-cs"
WMT24_DOCS = (
    "test-en-news_beverly_press.3585", "test-en-news_euronews-en.43091", "test-en-social_112110250600185424",
    "test-en-social_111976217731399216", "test-en-speech_RfoVF8wcZRI_000", "test-en-speech_PKgwplBTr7s_002",
)


def _tar_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        for name, data in sorted(members.items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def build_esa() -> None:
    src = SHARED / "esa-wmt23-ende"
    out = HERE / "esa-wmt23-ende-mini"
    out.mkdir(exist_ok=True)
    camp = "data/campaign-ruction-rc5/"
    wanted = {
        camp + "240315rc5ESA.scores.csv", camp + "240520rc6ESA.scores.csv", camp + "Annotators_mapping.csv",
        camp + "data/batches_wmt23_en-de_esa.json", "data/mt-metrics-eval-v2/wmt23/documents/en-de.docs",
    }
    got: dict[str, bytes] = {}
    with tarfile.open(src / "errorspanannotation_wmt23_en-de_data.tar.xz", "r:xz") as tar:
        for m in tar:
            if m.name in wanted:
                got[m.name] = tar.extractfile(m).read()  # type: ignore[union-attr]
    docs = set(ESA_DOCS)
    members: dict[str, bytes] = {}
    for name in (camp + "240315rc5ESA.scores.csv", camp + "240520rc6ESA.scores.csv"):
        rows = list(csv.reader(io.StringIO(got[name].decode())))
        keep = [r for r in rows if r[7].split("#")[0] in docs]
        keep += [r for r in rows if "tutorial" in r[7]][:5]  # exercised by the filter
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(keep)
        members[name] = buf.getvalue().encode()
    batches = json.loads(got[camp + "data/batches_wmt23_en-de_esa.json"])
    small = []
    for b in batches:
        items = [it for it in b["items"] if it["documentID"].split("#")[0] in docs]
        if items:
            small.append({"items": items, "task": b["task"]})
    members[camp + "data/batches_wmt23_en-de_esa.json"] = json.dumps(small, ensure_ascii=False).encode()
    members[camp + "Annotators_mapping.csv"] = got[camp + "Annotators_mapping.csv"]
    members["data/mt-metrics-eval-v2/wmt23/documents/en-de.docs"] = got["data/mt-metrics-eval-v2/wmt23/documents/en-de.docs"]
    (out / "errorspanannotation_wmt23_en-de_data.tar.xz").write_bytes(_tar_bytes(members))
    lines = (src / "esa_wmt23_en-de_scores_wide.tsv").read_text().splitlines()
    keep = [lines[0]] + [ln for ln in lines[1:] if ln.split("\t")[2] in docs]
    (out / "esa_wmt23_en-de_scores_wide.tsv").write_text("\n".join(keep) + "\n")


def build_wmt24() -> None:
    src = SHARED / "wmt24-genmt"
    out = HERE / "wmt24-genmt-mini"
    out.mkdir(exist_ok=True)
    docs = set(WMT24_DOCS)
    rows = list(csv.reader(io.StringIO(gzip.decompress((src / "esa_generalMT2024_wave2.csv.gz").read_bytes()).decode())))
    keep = [r for r in rows if r[5] == "ces" and r[7].split("#")[0] in docs]
    keep += [r for r in rows if r[5] == "ces" and "tutorial" in r[1]][:4]
    keep += [r for r in rows if r[5] == "ces" and r[7].endswith("#incomplete")][:4]
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(keep)
    (out / "esa_generalMT2024_wave2.csv.gz").write_bytes(gzip.compress(buf.getvalue().encode(), mtime=0))
    logins = {r[0] for r in keep}
    mapping = json.loads((src / "annotator_mapping.json").read_text())
    small_map = {p: [x for x in ls if x in logins] for p, ls in mapping.items()}
    (out / "annotator_mapping.json").write_text(json.dumps({p: ls for p, ls in small_map.items() if ls}, indent=1))
    doc_lines = (src / "wmt24_en.docs").read_text().split("\n")
    (out / "wmt24_en.docs").write_text("\n".join(doc_lines))
    used = {i for i, ln in enumerate(doc_lines) if ln.split("\t")[-1] in docs}
    source = (src / "wmt24_en_source.txt").read_text().split("\n")
    (out / "wmt24_en_source.txt").write_text("\n".join(s if (i in used or i == 0) else "" for i, s in enumerate(source)))
    systems = {r[1] for r in keep if "tutorial" not in r[1]}
    members = {}
    with tarfile.open(src / "wmt24_system_outputs_en-cs_en-hi_en-ja_en-zh.tar.xz", "r:xz") as tar:
        for m in tar:
            if not m.isfile() or not m.name.startswith(WMT24_LP + "/"):
                continue
            fname = m.name.split("/")[-1]
            system = "refA" if fname == f"{WMT24_LP}.refA.txt" else fname[:-4]
            if system not in systems:
                continue
            lines = tar.extractfile(m).read().decode().split("\n")  # type: ignore[union-attr]
            members[m.name] = "\n".join(s if i in used else "" for i, s in enumerate(lines)).encode()
    (out / "wmt24_system_outputs_en-cs_en-hi_en-ja_en-zh.tar.xz").write_bytes(_tar_bytes(members))


if __name__ == "__main__":
    build_esa()
    build_wmt24()
