"""The reader (tether's own cross-encoder, `tether.embeddings.reader`): the shipped weights load
offline and are refused when they do not match their card; numpy and ONNX Runtime read alike;
the claim judge and the health report's contradiction finder use it by default; the trainer
runs from the repository and resumes.

Every test here uses the shipped reader: remove `src/tether/embeddings/reader_model/` and each
fails (the reader cannot load, or the judge falls back to words and says so).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tether.embeddings.reader import MODEL_DIR, Reader, ReaderUnavailable, load_reader
from tether.types import Answer, Chunk, Claim, Context, DocMeta, Passage
from tether.verify.check import check_answer
from tether.verify.learned import AlignmentJudge

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def reader() -> Reader:
    return load_reader()


def test_shipped_reader_loads_with_its_card(reader: Reader) -> None:
    card = json.loads((MODEL_DIR / "card.json").read_text(encoding="utf-8"))
    assert reader.layers == card["layers"] >= 1
    assert set(card["thresholds"]) == {"support", "conflict", "relevance"}
    assert (MODEL_DIR / "reader.npz").stat().st_size <= 40 * 1024 * 1024
    for name in ("W1", "W2", "W3", "W4", "R1", "R2"):
        assert name in card["data"], "the card names every training set and its digest"


@pytest.mark.parametrize("change", ["format", "tensor_hash", "weights"])
def test_a_card_that_does_not_match_is_refused(tmp_path: Path, change: str) -> None:
    folder = tmp_path / "reader"
    shutil.copytree(MODEL_DIR, folder)
    card = json.loads((folder / "card.json").read_text(encoding="utf-8"))
    if change == "format":
        card["format"] += 1
    elif change == "tensor_hash":
        card["tensor_hash"] = "0" * 16
    else:
        with np.load(folder / "reader.npz") as z:
            arrays = {k: z[k] for k in z.files}
        arrays["pool.b"] = arrays["pool.b"] + np.float16(0.5)
        np.savez(folder / "reader.npz", **arrays)
    (folder / "card.json").write_text(json.dumps(card), encoding="utf-8")
    with pytest.raises(ReaderUnavailable):
        Reader(folder)


def test_numpy_and_onnx_read_alike(reader: Reader) -> None:
    plain = Reader(MODEL_DIR, backend="numpy")
    assert plain.backend == "numpy"
    pairs = [
        ("Returns are accepted within 30 days.", "You may return any item within thirty days."),
        ("Les vélos ne sont pas remboursés.", "Bikes can be returned within 40 days for a refund."),
    ]
    for task in ("support", "conflict", "relevance"):
        a = reader.probabilities(task, pairs)
        b = plain.probabilities(task, pairs)
        assert a.shape == (2, 3)
        np.testing.assert_allclose(a.sum(1), 1.0, atol=1e-5)
        np.testing.assert_allclose(a, b, atol=2e-3)


def _chunk(text: str, language: str) -> Chunk:
    meta = DocMeta(
        doc_id="d", version="1", title="Returns policy", access="public", language=language
    )
    return Chunk(chunk_id="c1", meta=meta, text=text, heading_path=("Returns",), start=0,
                 end=len(text), ordinal=0)  # fmt: skip


def _check(claim: str, text: str, language: str, passage_language: str, judge: object):
    c = _chunk(text, passage_language)
    context = Context((Passage(c, "", 10, 1),))
    answer = Answer(True, claim, (Claim(claim, ("c1",)),))
    (result,) = check_answer(answer, None, context, "", audience="public", language=language,
                             judge=judge)  # fmt: skip
    return result


def test_the_default_claim_judge_reads(reader: Reader) -> None:
    from tether.answering.pipeline import make_judge

    default = make_judge("align", None)
    assert isinstance(default, AlignmentJudge) and default.reader is reader and default.across_only
    text = "You can return most items within 45 days of purchase with the receipt."
    _check("Most items can be returned within 45 days.", text, "en", "en", default)
    assert default.last_note == "model"  # same language: the words model decides
    _check("La plupart des articles peuvent être retournés dans les 45 jours.", text, "fr", "en",
           default)  # fmt: skip
    assert default.last_note == "reader"  # across languages: the reader reads it
    words = make_judge("words", None)
    assert isinstance(words, AlignmentJudge) and words.reader is None
    judge = make_judge("reader", None)
    assert isinstance(judge, AlignmentJudge) and judge.reader is reader and not judge.across_only
    assert judge.combine is not None and judge.threshold == judge.combine.threshold
    result = _check("Most items can be returned within 45 days.", text, "en", "en", judge)
    assert judge.last_note == "reader" and result.entailment is not None
    assert set(judge.last_reading) == {"words", "reader_supported", "reader_contradicted",
                                       "reader_nei", "cross"}  # fmt: skip
    assert judge.last_reading["cross"] == 0.0


def test_a_claim_in_another_language_is_read(reader: Reader) -> None:
    """The judge before the reader gave no entailment across languages (word features mean
    nothing there); the reader reads the French claim against the English passage."""
    judge = AlignmentJudge(reader=reader)
    text = "You can return most items within 45 days of purchase with the receipt."
    result = _check("La plupart des articles peuvent être retournés dans les 45 jours.", text,
                    "fr", "en", judge)  # fmt: skip
    assert result.entailment is not None and judge.last_note == "reader"
    assert judge.last_reading["cross"] == 1.0 and judge.last_reading["words"] == 0.0
    words = _check("La plupart des articles peuvent être retournés dans les 45 jours.", text,
                   "fr", "en", AlignmentJudge())  # fmt: skip
    assert words.entailment is None


def test_trainer_runs_from_the_repository_and_resumes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    cmd = [sys.executable, str(REPO / "training" / "reader" / "train.py"), "--sets", "W1",
           "--no-rank", "--variants", "1", "--layers", "1", "--batch", "4", "--save-every", "2",
           "--log-every", "1", "--run", str(run)]  # fmt: skip
    first = subprocess.run([*cmd, "--max-steps", "2"], capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-2000:]
    assert (run / "checkpoint.pt").is_file() and (run / "card.json").is_file()
    card = json.loads((run / "card.json").read_text(encoding="utf-8"))
    assert card["layers"] == 1 and card["training"]["steps"] == 2
    Reader(run)  # what it exported loads
    second = subprocess.run([*cmd, "--max-steps", "3"], capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "resumed at step 2" in second.stderr


def test_trainer_refuses_a_set_that_is_not_for_training(tmp_path: Path) -> None:
    cmd = [sys.executable, str(REPO / "training" / "reader" / "train.py"), "--sets",
           "reader_heldout", "--max-steps", "1", "--run", str(tmp_path / "run")]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "reader_heldout" in done.stderr and "heldout" in done.stderr
