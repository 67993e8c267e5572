"""The caps that keep the detectors linear in the length of their texts, at work.

Each cap bounds the work per figure or rule word; none is reached by the bundled cases
or SummEdits (``test_detectors_scaling`` checks long inputs against scanning). These
tests pin what happens past a cap: the extreme input is read differently, as documented.
"""

from __future__ import annotations

from itertools import compress

from arbiter.jury.detectors import contradicted_figures, settings_for
from arbiter.jury.detectors.analysis import SEGMENT_REACH, analyse
from arbiter.jury.detectors.arithmetic import MONEY_TERMS
from arbiter.jury.detectors.overlaps import CANDIDATES
from arbiter.jury.detectors.text import WINDOW_SCAN

FACTUAL = settings_for("factual")


def tag(i: int) -> str:
    """A distinct letters-only word for ``i``."""
    out, i = "", i + 26 * 26
    while i:
        i, r = divmod(i, 26)
        out = "abcdefghijklmnopqrstuvwxyz"[r] + out
    return "zq" + out


def test_a_window_looks_at_most_window_scan_tokens_each_side() -> None:
    near = analyse("It took 5 " + "the " * (WINDOW_SCAN - 1) + "engineers.")
    far = analyse("It took 5 " + "the " * WINDOW_SCAN + "engineers.")
    assert near.windows == ({"engineer": 1.0},)
    assert far.windows == ({},)


def test_segment_words_come_from_segment_reach_tokens_each_side() -> None:
    text = "A signature is required " + " ".join(tag(i) for i in range(3 * SEGMENT_REACH)) + "."
    analysis = analyse(text)
    tokens = analysis.tokens
    at = tokens.words.index("required")
    stop = at + SEGMENT_REACH + 1
    assert stop < len(tokens)  # the sentence goes on past the reach
    assert analysis.segment_words(at) == frozenset(
        compress(tokens.stems[:stop], tokens.contents[:stop])
    )
    assert tokens.stems[stop] not in analysis.segment_words(at)


def fees(n: int) -> str:
    """n figures next to "fee", n next to "order", then one next to both."""
    parts = [f"{tag(i)} fee ${i + 10}." for i in range(n)]
    parts += [f"{tag(1000 + i)} order ${i + 500}." for i in range(n)]
    return " ".join([*parts, "zqtarget order fee $77."])


def test_each_word_leads_to_at_most_candidates_windows() -> None:
    output = "The fee is $1000 for the order."
    # The last figure shares both words and is the counterpart...
    few = contradicted_figures("", fees(10), output, FACTUAL)
    assert [(c.kind, c.rival) for c in few] == [("contradicted", "$77")]
    # ...until each word is near more than CANDIDATES other figures, all as close to it:
    # the word then only leads to the first of them, and the counterpart is the first fee.
    many = contradicted_figures("", fees(CANDIDATES + 5), output, FACTUAL)
    assert [(c.kind, c.rival) for c in many] == [("contradicted", "$10")]


def priced(n: int) -> str:
    """n distinct amounts, then a total that is the sum of the next two."""
    amounts = " ".join(f"${1 + i / 100:.2f} for {tag(i)}." for i in range(n))
    return amounts + " Parts cost $500 and labour $300, so $800 in all."


def test_sums_are_looked_for_among_the_first_money_terms_amounts() -> None:
    def quotes(n: int) -> list[str]:
        found = contradicted_figures("", "A repair.", priced(n), FACTUAL)
        return [c.quote for c in found if "$800" in c.quote]

    assert quotes(10) == []  # $500 + $300: derived from the output's own figures
    assert quotes(MONEY_TERMS + 5) == ["so $800 in all"]  # both terms past the first 256
