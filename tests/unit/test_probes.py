"""Probes a public user could run to learn staff content, each closed: a question set whose
`evidence` guesses staff text, and an inventory.csv that would relabel a staff file."""

from __future__ import annotations

from pathlib import Path

from tether.evaluation.retrieval_eval import run_retrieval_eval
from tether.ingest.sync import sync
from tether.retrieval.retriever import Retriever
from tether.stores.sqlite import SqliteStore
from tether.types import Question, Relevant


def _store(tmp_path: Path, inventory: str | None = None) -> SqliteStore:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "codes.md").write_text("---\naccess: staff\n---\n# Codes\n\nThe door code is ZX-9931.\n")
    (docs / "hours.md").write_text("---\naccess: public\n---\n# Hours\n\nWe open at nine.\n")
    if inventory is not None:
        (docs / "inventory.csv").write_text(inventory)
    store = SqliteStore(tmp_path / "i.sqlite")
    store.report = sync(store, docs)  # type: ignore[attr-defined]
    return store


def test_eval_never_tells_a_public_run_whether_guessed_staff_text_exists(tmp_path: Path) -> None:
    store = _store(tmp_path)

    def reason(guess: str) -> str:
        rel = Relevant(doc_id="codes", evidence=guess)
        q = Question(id="P1", question="door code?", relevant=(rel,))
        result = run_retrieval_eval(store, Retriever(store), [q], ["bm25"], 5)
        ((_, why),) = result.skipped
        return why.replace(guess, "GUESS")

    right, wrong = reason("code is ZX-9"), reason("code is ZX-1")
    assert right == wrong  # the same words whether the guess is in the staff document or not
    staff = Question(id="P2", question="door code?", audience="staff",
                     relevant=(Relevant(doc_id="codes", evidence="code is ZX-9"),))  # fmt: skip
    assert run_retrieval_eval(store, Retriever(store), [staff], ["bm25"], 5).n_scored == 1


def test_an_inventory_row_never_relabels_a_file_that_carries_its_own_label(tmp_path: Path):
    store = _store(tmp_path, "path,access\ncodes.md,public\n")
    (codes,) = [d.meta for d in store.documents() if d.meta.doc_id == "codes"]
    assert codes.access == "staff"
    warnings = store.report.warnings  # type: ignore[attr-defined]
    assert any("codes.md" in w and "inventory.csv" in w for w in warnings), warnings


def test_a_citation_of_a_staff_chunk_reads_as_an_unknown_id_to_the_public(tmp_path: Path):
    from tether.types import Answer, Claim, Context, Passage
    from tether.verify.check import check_answer

    store = _store(tmp_path)
    staff = store.chunks("codes")[0]
    public = store.chunks("hours")[0]
    context = Context((Passage(public, "Hours", 10, 1),))
    answer = Answer(True, "a", (Claim("The code is ZX-9931.", (staff.chunk_id,)),
                                Claim("The code is ZX-9931.", ("0123456789ab",))))  # fmt: skip
    guessed, made_up = check_answer(
        answer, store, context, "door code?", audience="public", language="en"
    )
    assert [f.kind for f in guessed.flags] == [f.kind for f in made_up.flags] == ["missing_id"]
    assert guessed.evidence == made_up.evidence == ()
