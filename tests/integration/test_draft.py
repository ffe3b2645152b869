"""`tether.answering.draft.Draft`: the answer's text out of a reply read piece by piece, in
each answer mode, and the pipeline handing it over (staff only) as the model writes it."""

from __future__ import annotations

import json

from tether.answering.draft import Draft


def pieces(text: str, size: int = 3) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def drafted(mode: str, reply: str, sentences: tuple[str, ...] = (), size: int = 3) -> list[str]:
    out: list[str] = []
    draft = Draft(mode, out.append, sentences)
    for piece in pieces(reply, size):
        draft.feed(piece)
    return out


def test_a_json_reply_gives_its_answer_field_as_it_grows() -> None:
    reply = json.dumps({
        "answerable": True,
        "answer": 'Returns are accepted within 30 days; a "final sale" item is not.',
        "claims": [{"text": "Returns are accepted within 30 days.", "chunk_ids": ["c1"]}],
    })  # fmt: skip
    out = drafted("json", reply)
    assert "".join(out) == 'Returns are accepted within 30 days; a "final sale" item is not.'
    assert len(out) > 5  # piece by piece, not at the end
    # nothing from the claims (they come after the answer) and no JSON syntax
    assert not any("chunk_ids" in piece or "{" in piece for piece in out)


def test_an_escape_split_between_pieces_is_not_shown_half_read() -> None:
    reply = json.dumps({"answerable": True, "answer": "Line one.\nLine \u00e9 two \\ end"})
    for size in (1, 2, 5):
        assert "".join(drafted("json", reply, size=size)) == "Line one.\nLine \u00e9 two \\ end"


def test_a_select_reply_gives_each_sentence_once_its_number_is_complete() -> None:
    sentences = tuple(f"Sentence {n}." for n in range(1, 13))
    reply = '{"sentences": [12, 3, 0]}'
    out: list[str] = []
    draft = Draft("select", out.append, sentences)
    draft.feed('{"sentences": [1')
    assert out == []  # "1" may still become 12
    draft.feed("2")
    assert out == []
    draft.feed(", 3")
    assert out == ["Sentence 12."]
    draft.feed(reply[len('{"sentences": [12, 3') :])
    assert out == ["Sentence 12.", " Sentence 3."]  # 0 (no sentence answers) adds nothing


def test_an_inline_reply_is_its_own_text_and_nonsense_gives_nothing() -> None:
    assert "".join(drafted("inline", "Within 30 days [c1].")) == "Within 30 days [c1]."
    assert drafted("json", "I cannot answer that.") == []
    assert drafted("json", '["not", "an", "object"]') == []
    assert drafted("select", '{"sentences": [99, 1]}', ("Only one.",)) == ["Only one."]
    # the bracket and brace in one piece (the local model writes "]}" as one token)
    out: list[str] = []
    draft = Draft("select", out.append, ("First.", "Second."))
    for piece in ('{"', "sentences", '":', " [", "2", "]}"):
        draft.feed(piece)
    assert out == ["Second."]


class StreamingFake:
    """A provider that can stream: its reply's text in pieces of 4 characters."""

    name = "streaming-fake"

    def __init__(self, text: str) -> None:
        self.text = text
        self.streamed = 0

    def complete(self, request):
        from tether.types import Completion

        return Completion(text=self.text, provider=self.name, model="fake")

    def stream(self, request, on_text):
        self.streamed += 1
        for piece in pieces(self.text, 4):
            on_text(piece)
        return self.complete(request)


def test_ask_hands_the_draft_to_staff_as_it_is_written_and_never_to_the_public(
    demo_store,
) -> None:
    from tether.answering.context import ESTIMATE
    from tether.answering.pipeline import AskOptions, ask
    from tether.app import retriever_for

    public = next(c for c in demo_store.chunks("delivery-policy") if "3 to 7" in c.text)
    reply = json.dumps({
        "answerable": True, "answer": "Standard delivery takes 3 to 7 business days.",
        "claims": [{"text": "Standard delivery takes 3 to 7 business days.",
                    "chunk_ids": [public.chunk_id]}],
    })  # fmt: skip
    retriever = retriever_for(demo_store)
    runs: dict[str, tuple[list[str], list[tuple[str, object]]]] = {}
    for audience in ("staff", "public"):
        provider = StreamingFake(reply)
        text: list[str] = []
        events: list[tuple[str, object]] = []
        result = ask(
            "How long does standard delivery take?", demo_store, provider,
            AskOptions(audience=audience, mode="json", method="bm25", floor=0.0),
            retriever=retriever, judge=None, tokens=ESTIMATE,
            events=lambda stage, partial, seen=events: seen.append((stage, partial)),
            on_text=text.append,
        )  # fmt: skip
        assert result.answer is not None and result.answer.claims
        runs[audience] = (text, events)
    staff_text, staff_events = runs["staff"]
    assert "".join(staff_text) == "Standard delivery takes 3 to 7 business days."
    assert len(staff_text) > 3
    answered = dict(staff_events)["answer"]
    assert answered.answer is not None and answered.completion is not None
    public_text, public_events = runs["public"]
    assert public_text == []  # unchecked: it may hold what the checks withhold
    answered = dict(public_events)["answer"]
    assert answered.answer is None and answered.completion is None
    assert answered.context is not None  # the passages (public ones) still come


def test_a_provider_that_cannot_stream_gives_the_whole_draft_at_once(demo_store) -> None:
    from tether.answering.context import ESTIMATE
    from tether.answering.pipeline import AskOptions, ask
    from tether.app import retriever_for
    from tether.providers.extractive import ExtractiveProvider

    text: list[str] = []
    result = ask(
        "How long does standard delivery take?", demo_store, ExtractiveProvider(),
        AskOptions(audience="staff", method="bm25", floor=0.0),
        retriever=retriever_for(demo_store), judge=None, tokens=ESTIMATE, on_text=text.append,
    )  # fmt: skip
    assert result.answer is not None and text == [result.answer.answer]


def test_the_terminal_shows_the_draft_as_it_comes_and_closes_its_line(monkeypatch) -> None:
    """`tether ask` on a terminal: the spinner is cleared at the first piece, the pieces
    follow one another on one line after "draft, not yet checked:", closed before the checked
    answer; piped, nothing is shown."""
    import importlib
    import io

    from rich.console import Console

    cli = importlib.import_module("tether.cli.app")  # the module, not the Typer app

    class Bar:
        stopped = 0

        def stop(self) -> None:
            self.stopped += 1

    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, color_system=None, width=200)
    monkeypatch.setattr(cli.err, "_console", terminal)
    monkeypatch.delenv("TETHER_QUIET", raising=False)
    bar = Bar()
    draft = cli.DraftPrinter(bar)
    for piece in ("Standard ", "delivery takes ", "3 to 7 days."):
        draft(piece)
    draft.end()
    assert bar.stopped == 1
    assert screen.getvalue() == "draft, not yet checked: Standard delivery takes 3 to 7 days.\n"
    monkeypatch.setattr(cli.err, "_console", Console(file=io.StringIO(), force_terminal=False))
    piped = cli.DraftPrinter(Bar())
    piped("nothing shown")
    piped.end()
    assert not piped.started
