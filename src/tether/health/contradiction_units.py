"""The sentences the contradiction finder compares, each read once (`read_units(chunk)`):
its words and stems, its numbers as slots (a value, a unit and the words bound to it), its
polarity (a negation in its main clause), the model names it uses and the groups of people
it speaks of. Used by `tether.health.contradictions` and its two checks
(`contradiction_checks`: sentences sharing most words; `contradiction_reworded`: the same
subject in other words).

A slot's unit is canonical so that one value said two ways reads the same: money ("$75",
"£15", "20p" is £0.20), durations in minutes ("two weeks" and "14 days", "48 hours" and
"2 days"), working days apart from days, months (a year is 12), data sizes in MB (1 TB is
1024 GB), percentages, counts of a noun ("10 failed sign-in attempts": unit
"#attempt"; "twelve or more characters": "#charact"), and times of day in minutes after
midnight (unit "clock": "09:30", "half past nine in the morning", "9.30am" are one value).
Numbers written as words ("twelve", "sixty", "twenty-one") are read when a unit or counted
noun follows them. A table row's numbers are bound to the row's label and the column's
heading (the label without its aside: "Fitness class (up to 60 minutes)" is named by
"fitness class"). Each number also names what it is said of, read from the number itself rather than
the whole sentence (`slots_differ`): the groups of people among its bound words ("£60 for an
adult", a cell under "Adult"), the capitalised words near it ("A replacement Valley Card
costs £5"), and a duration's role in a retention period ("held for two weeks": hold;
"unclaimed after 10 days ... is disposed of": end). A one-letter prefix, and "non-", is
joined to its word ("e-books" is "ebooks", "non-folding" is "nonfolding": an e-book is not a
book). A sentence's or step's own number ("2. Creating indexes") is no value. Also read: each main clause's
rule (`Unit.rules`: a modal's polarity and verb, or a plain statement's possible verbs),
the words of the clause a negation is said of (`Unit.denied`), the words that qualify each
noun (`modifiers`: "computer bookings", "holds on e-books") and the title's and headings'
words (`Unit.topic`).

What it cannot do: a unit said with another word ("1,000 Pine Points" against "1,000
points") or a count whose noun comes before the number ("attempts: 5") reads as no unit;
number words are read in English only; a group of people is recognised by a short list of
words (students, staff, members, adults, teens, card holders, customers on the
accessibility register, ...; a visitor card is the visitors') and by a condition on the reader's state ("If you have a
concession on your card", "if you are over 65"), so a group named otherwise ("people who
joined before 2020") is not seen, and a condition in other words ("for those on means-tested
benefits") neither; ranges and dates are left out; a time without am/pm or "in the
morning/evening" is read as written ("6 o'clock" is 06:00); a retention is recognised by a
short list of English verbs (kept, held, stored ...; deleted, disposed, cleared, donated ...),
so "goes to the charity shop" is no end of one. A negation said of a noun phrase after a
comma ("..., not the day you buy them") is a contrast, not a negated main clause; "cannot do
this" and a clause ending in a colon (a list follows) state no rule of their own; "No dogs
are allowed ..." is a negated rule. A group word that opens a name ("Junior Climbing Club",
"Student Union") names no group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tether.health.contradiction_lexicon import (
    CODE,
    GROUP_STEMS,
    GROUP_WORDS,
    NOISE,
    PERMISSION_OPPOSITES,
    PLAIN,
    POLAR_WORDS,
    YEAR,
    joined,
)
from tether.health.contradiction_rules import (
    main_rules,
    negated_clause,
    negative_main,
    rule_modal,
)
from tether.health.contradiction_slots import (
    Slot,
    read_slots,
    same_unit,
    same_value,
    slots_differ,
)
from tether.language.negation import negation_scope
from tether.language.quantities import UNIT_AFTER
from tether.language.stems import WORD_RE, content_stem, stem_set
from tether.text import fold_fast, sentence_spans
from tether.types import Chunk

__all__ = [
    "GROUP_STEMS",
    "NOISE",
    "PERMISSION_OPPOSITES",
    "PLAIN",
    "POLAR_WORDS",
    "Slot",
    "Unit",
    "groups_differ",
    "modifiers",
    "read_units",
    "said_of_others",
    "same_unit",
    "same_value",
    "slots_differ",
]

_NEARBY = 300  # characters either side of a sentence that count as its passage
_MODEL = re.compile(r"\b([A-Z][A-Za-z]+)[\s-]+((?:[A-Z]{1,4}-?)?\d[\w-]*)")
_WITHOUT = re.compile(r"\b(?:without|sans)\b")
_BOUND_NOT = re.compile(r"\b(?:no|not)\s+(?:later|earlier|sooner|more|less|fewer|longer)\s+than\b")
_FIRST_PERSON = re.compile(r"(?:I|I'm|I’m|I've|I’ve|My)\b")  # the reader's voice: a FAQ's problem
# A condition on the reader's own state names a group too: "If you have a concession on your
# card, ...", "if you are over 65" (not what the reader does: "if you cancel ...", "if you
# have lost your card").
_READER_STATE = re.compile(
    r"\b(?:if|unless)\s+you(?:\s+are|\s+have|\s+hold|'re|’re|'ve got|’ve got)\s+"
    r"(?!(?:\w+ed|been|lost|paid|made|found|sent|left|given|taken|done|seen|forgotten|got)\b)"
    r"([^,;:.]+)",
    re.I,
)
_NAME_END = r"(?:Club|Team|Society|Union|Centre|Center|Scheme|Programme|Program)\b"
_IN_NAME = re.compile(rf"\s+[A-Z][a-z]+\s+{_NAME_END}|\s+{_NAME_END}")
# ... and so does a named benefit or scheme the reader's household gets ("If someone in your
# household gets Council Tax Reduction", "if you receive Pension Credit")
_READER_GETS = re.compile(
    r"\b(?i:if|unless)\s+(?i:you|someone in your household|anyone in your household)\s+"
    r"(?i:get|gets|receive|receives|claim|claims)\s+((?:[A-Z][\w'’-]*\s?)+)"
)
_GROUP_NOT_BEFORE = re.compile(r"\s+(?:days?|hours?|weeks?|account|accounts)\b")


_POSTMODIFIER = frozenset({"on", "for", "with"})
_DETERMINERS = frozenset(
    "the a an your our their his her its this that these those any all some each every".split()
)


@dataclass
class Unit:
    """A sentence worth comparing: where it is, what it says, read once."""

    chunk: Chunk
    start: int  # offsets in the chunk's text
    end: int
    text: str  # as written (the quote)
    read: str  # what the checks read (a table row with its header row)
    stems: frozenset[str]
    words: str  # folded word string
    slots: tuple[Slot, ...]
    polar: bool
    scope: tuple[frozenset[str], frozenset[str]]
    names: dict[str, str] = field(default_factory=dict)  # model word → code (text and title)
    content: frozenset[str] = frozenset()  # stems that name the subject (`NOISE` left out)
    negative: bool = False  # its main clause (its condition left out) holds a negation
    context: frozenset[str] = frozenset()  # the stems around it (`_NEARBY`), title, sections
    section: frozenset[str] = frozenset()  # the content stems of its section heading
    codes: frozenset[str] = frozenset()  # sizes or grades it names ("A4")
    groups: frozenset[str] = frozenset()  # the groups of people its first clause names
    title_groups: frozenset[str] = frozenset()  # ... its title and sections name
    # a rule's polarity (1 may/must, -1 may not), its verb and its clause's content stems
    modal: tuple[int, str, frozenset[str]] = (0, "", frozenset())
    # ... each main clause's rule, in order (0: a plain statement): `main_rules`
    rules: tuple[tuple[int, str, frozenset[str]], ...] = ()
    # the content stems of the clause holding its negation (`negated_clause`)
    denied: frozenset[str] = frozenset()
    topic: frozenset[str] = frozenset()  # the content stems of its title and sections

    @property
    def doc(self) -> str:
        return self.chunk.meta.doc_id


def modifiers(u: Unit) -> dict[str, frozenset[str]]:
    """{content stem: the content stems that qualify it in the sentence}: the word just
    before it ("computer bookings") and the one after "on", "for" or "with" and a
    determiner ("holds on e-books"); words of `NOISE` neither qualify nor are qualified.
    A table row has none (its cells are read with their row label: `Slot.label`)."""
    if u.read != u.text:
        return {}
    tokens = u.words.split()
    stems = [content_stem(t) for t in tokens]
    out: dict[str, set[str]] = {}
    for k, head in enumerate(stems):
        if not head or head in NOISE:
            continue
        if k > 0 and stems[k - 1] and stems[k - 1] not in NOISE:
            out.setdefault(head, set()).add(stems[k - 1])
        m = k + 1
        if m < len(tokens) and tokens[m] in _POSTMODIFIER:
            m += 1
            while m < len(tokens) and tokens[m] in _DETERMINERS:
                m += 1
            if m < len(tokens) and stems[m] and stems[m] not in NOISE:
                out.setdefault(head, set()).add(stems[m])
    return {h: frozenset(w) for h, w in out.items()}


def groups_differ(a: Unit, b: Unit) -> bool:
    """True when the sentences name different groups of people ("Undergraduate students"
    against "Postgraduate research students"; "Pine Club members" against no one), or their
    documents are written for different groups (a student guide and a staff guide)."""
    if a.groups != b.groups:
        return True
    if not a.groups and a.title_groups and b.title_groups:
        return not (a.title_groups & b.title_groups)
    return False


def said_of_others(a: Unit, b: Unit, x: Slot, y: Slot) -> bool:
    """Whether the numbers `x` of `a` and `y` of `b` are said of different groups or things:
    as the numbers say (`slots_differ`), else as the sentences do (`groups_differ`)."""
    differ = slots_differ(x, y)
    return groups_differ(a, b) if differ is None else differ


def read_units(chunk: Chunk) -> list[Unit]:
    """The sentences of a chunk (questions left out), read once."""
    text = chunk.text
    language = chunk.meta.language
    headers = _table_headers(chunk)
    title_names = _names(" ".join((chunk.meta.title, *chunk.heading_path)))
    head = " ".join((chunk.meta.title, *chunk.heading_path, chunk.lead))
    title_groups = _groups(" ".join((chunk.meta.title, *chunk.heading_path)))
    topic = stem_set(joined(" ".join((chunk.meta.title, *chunk.heading_path)))) - NOISE
    out: list[Unit] = []
    for start, end in sentence_spans(text):
        sentence = text[start:end]
        if sentence.rstrip().endswith("?") or _FIRST_PERSON.match(sentence):
            continue  # a question states nothing, nor a reader's "My phone will not connect"
        header = headers.get(start)
        read = f"{header}\n{sentence}" if header else sentence
        folded = fold_fast(joined(read))
        tokens = WORD_RE.findall(folded)
        words = " ".join(tokens)
        # "without X" names a case and "no later than" a bound, not a rule
        plain = _BOUND_NOT.sub("within", _WITHOUT.sub("with", fold_fast(joined(sentence))))
        scope = negation_scope(plain)
        polar = bool(scope[0]) or not POLAR_WORDS.isdisjoint(tokens)
        slots = read_slots(sentence, header, language)
        rules = main_rules(plain)
        stems = stem_set(read, folded, tokens)
        out.append(
            Unit(
                chunk=chunk,
                start=start,
                end=end,
                text=sentence,
                read=read,
                stems=stems,
                words=words,
                slots=tuple(slots),
                polar=polar,
                scope=scope,
                names={**title_names, **_names(sentence)},
                content=stems - NOISE,
                negative=negative_main(plain),
                modal=rule_modal(rules),
                rules=rules,
                denied=negated_clause(plain) if scope[0] else frozenset(),
                context=stem_set(joined(f"{head} {text[max(0, start - _NEARBY) : end + _NEARBY]}")),
                section=stem_set(joined(chunk.heading_path[-1])) - NOISE
                if chunk.heading_path
                else frozenset(),
                codes=frozenset(CODE.findall(folded)),
                groups=_groups(re.split(r"[;:]\s", sentence)[0]),
                title_groups=title_groups,
                topic=topic,
            )
        )
    return out


def _groups(text: str) -> frozenset[str]:
    """The groups of people a text names (stems; "member of staff" is staff; the capitalised
    words before "members" or "holders" name which: "Pine Club members", "Access card
    holders"), and the content stems of a condition on the reader's state ("if you have a
    concession": `_READER_STATE`)."""
    out: set[str] = set()
    for m in re.finditer(r"[A-Za-z]+", text):
        word = m.group(0).lower()
        if word not in GROUP_WORDS or _GROUP_NOT_BEFORE.match(text, m.end()):
            continue
        if _IN_NAME.match(text, m.end()) and m.group(0)[0].isupper():
            continue  # "Junior Climbing Club", "Student Union": a name, not its members
        non = text[max(0, m.start() - 4) : m.start()].lower() == "non-"
        out.add(("non-" if non else "") + content_stem(word))  # non-members are not members
        if word in ("members", "member", "holders", "holder") and not non:
            before = re.findall(r"\b([A-Z][a-z]+)\s+", text[max(0, m.start() - 30) : m.start()])
            out.update(content_stem(fold_fast(w)) for w in before[-2:])
    staff = content_stem("staff")
    if staff in out:
        out.discard(content_stem("member"))
    for m in _READER_STATE.finditer(text):
        out.update(stem_set(m.group(1)) - NOISE)
    for m in _READER_GETS.finditer(text):
        out.update(stem_set(m.group(1)) - NOISE)
    return frozenset(s for s in out if s)


def _table_headers(chunk: Chunk) -> dict[int, str]:
    """{start of a table row's line: its table's header row} for the chunk's table rows (the
    header is the first row after prose, or the chunk's repeated `lead`)."""
    out: dict[int, str] = {}
    header = chunk.lead if " | " in chunk.lead else None
    pos = 0
    for line in chunk.text.split("\n"):
        begin, pos = pos, pos + len(line) + 1
        stripped = line.strip()
        if not stripped:
            continue
        if " | " not in stripped and not stripped.startswith("|"):
            header = None
            continue
        if re.fullmatch(r"[\s|:-]+", stripped):
            continue
        if header is None:
            header = stripped
            continue
        out[begin + len(line) - len(line.lstrip())] = header
    return out


def _names(text: str) -> dict[str, str]:
    """Model names of a text: {word folded: code} ("Ridgeline 2" → {"ridgeline": "2"})."""
    out: dict[str, str] = {}
    for m in _MODEL.finditer(text):
        code = m.group(2)
        if YEAR.fullmatch(code):
            continue
        after = UNIT_AFTER.match(fold_fast(text[m.end() : m.end() + 20]))
        if after and after.group(3) in ("days", "day", "weeks", "months", "years", "hours"):
            continue  # "Allow 5 days": a quantity
        out.setdefault(fold_fast(m.group(1)), fold_fast(code))
    return out
