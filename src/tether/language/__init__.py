"""The floor for reading language, EN and FR: the readers of numbers, units, dates, clock times
and numbers written as words, the clause, scope and negation cues, and the word lists they
read (`number_words` is the one list of number words).

- `number_words`: numbers written as words, one table, each reader's view of it;
- `stems`: content words and their stems;
- `quantities`: numbers, codes, dates, times, units, ranges and periods;
- `clock`: times of day as minutes after midnight;
- `cues`: scope, condition, period and opposite words, polarity;
- `negation`: negation by scope.

`tether.verify`, `tether.health`, `tether.asks` and the judge's training read through these
modules; they import only `tether.text` and the layers below it.

What it cannot do: English and French only, by hand-written lists and patterns: nothing here
parses a sentence or is learned.
"""
