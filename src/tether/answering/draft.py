"""`Draft`: the answer's text as the model writes it, from the pieces of its raw reply, so a
face can show it before the reply is complete and checked.

The model's reply is JSON in the json and select modes: the draft reads it as it grows with
pydantic-core's partial JSON parser (`from_json(..., allow_partial="trailing-strings")`):
- json: the `answer` field's text so far;
- select: each chosen sentence's text once its number is complete (something other than a
  digit follows it; 0, "no sentence answers", adds nothing);
- inline: the reply's text as it is (its `[c1]` citation marks included).

What it cannot do: a draft is unchecked. The claims, their citations and their checks come
later, and the checked answer can differ from the draft (a public reader's answer drops
withheld claims; --strict drops flagged ones), so a face shows the draft as a draft and
replaces it with the checked answer. Re-parsing the whole reply at each piece costs time
that grows with the square of its length (a few milliseconds for an answer's 300 tokens).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic_core import from_json


class Draft:
    """Turns pieces of a reply in answer `mode` (json, select, inline) into pieces of the
    answer's text, each handed to `on_text`; `sentences` are the numbered sentences a select
    reply chooses from (number n is `sentences[n - 1]`)."""

    def __init__(
        self, mode: str, on_text: Callable[[str], None], sentences: Sequence[str] = ()
    ) -> None:
        self.mode = mode
        self.on_text = on_text
        self.sentences = tuple(sentences)
        self.raw = ""
        self.text = ""  # what has been handed over so far
        self._chosen = 0  # select: how many complete numbers were read

    def feed(self, piece: str) -> None:
        """Read one more piece of the raw reply."""
        self.raw += piece
        if self.mode == "inline":
            self._say(piece)
        elif self.mode == "select":
            self._select()
        else:
            self._json()

    def _say(self, text: str) -> None:
        if text:
            self.text += text
            self.on_text(text)

    def _parsed(self) -> dict | None:
        try:
            value = from_json(self.raw, allow_partial="trailing-strings")
        except ValueError:  # not JSON yet (or never): nothing to show
            return None
        return value if isinstance(value, dict) else None

    def _json(self) -> None:
        value = self._parsed()
        answer = value.get("answer") if value else None
        if isinstance(answer, str) and answer.startswith(self.text):
            self._say(answer[len(self.text) :])

    def _select(self) -> None:
        value = self._parsed()
        numbers = value.get("sentences") if value else None
        if not isinstance(numbers, list):
            return
        # the last number may still grow ("1" of "12") while the reply ends with a digit
        complete = numbers[:-1] if self.raw.rstrip()[-1:].isdigit() else numbers
        for number in complete[self._chosen :]:
            if isinstance(number, int) and 0 < number <= len(self.sentences):
                self._say((" " if self.text else "") + self.sentences[number - 1])
        self._chosen = max(self._chosen, len(complete))
