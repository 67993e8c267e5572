"""Layer 1b of online scoring: are the regulatory claims of free text grounded?

A system may declare the policies it relied on (``raw_output.policy_refs``) while its
free-text narrative asserts more: "per policy AML-2024-07", "under Section 5.3",
"OFAC sanctions". This layer finds such claims and checks them against the declared
references (ADR-0003 of the reference system):

1. citation-shaped claims found by regex (section / article / § / regulation numbers,
   CFR and U.S.C. cites, "per policy X");
2. regulatory keywords from a configurable list;
3. optionally, with an embedder, the text is re-queried against a vector-store
   namespace of real policies and flagged when the best match is under a threshold.

Stages 1-2 are pure and cheap; both normalise claims and references before comparing
them (Unicode hyphens folded to ``-``, case and whitespace folded, a trailing
" Section N" stripped), the two mismatches that made verbatim comparison useless.
The scanned text is capped (``max_scan_chars``) so a 5 MB narrative costs no more
than the cap; the cut is reported through ``notes``. ``GroundingLayer`` runs the stages
in the pipeline, on every item.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arbiter.contract import GroundingResult
from arbiter.online.layer import LayerContext
from arbiter.online.reading import Item, describe_error
from arbiter.online.rules import MISSING, Condition, compile_path
from arbiter.vectors.base import Embedder, VectorStore

__all__ = [
    "DEFAULT_CITATION_PATTERNS",
    "DEFAULT_KEYWORDS",
    "GroundingConfig",
    "GroundingLayer",
    "PolicyCheck",
    "check_grounding",
    "check_grounding_stage3",
    "grounding_text",
    "normalise_reference",
]

_HYPHEN_CHARS = "‐‑‒–—―−⁃﹘﹣－"
_ANY_HYPHEN = f"[-{_HYPHEN_CHARS}]"

# Each pattern starts with a literal so the regex engine can skip ahead quickly; the
# word boundary before a match is checked in code instead of with a leading \b.
DEFAULT_CITATION_PATTERNS: tuple[str, ...] = (
    r"per\s+(?:policy|procedure|guideline|rule|standard)\s+(?P<claim>[a-z0-9]"
    rf"[\w./{_HYPHEN_CHARS}-]*\w(?:,?\s+sec(?:tion|\.)\s*\d+(?:\.\d+)*)?)",
    r"sec(?:tion|\.)\s*\d+(?:\.\d+)*[a-z]?(?:\(\w{1,4}\))*",
    r"§{1,2}\s*\d+(?:[.\-]\d+)*[a-z]?(?:\(\w{1,4}\))*",
    r"art(?:icle|\.)\s*\d+[a-z]?(?:\(\w{1,4}\))*",
    r"(?:regulation|directive)\s+(?:\((?:eu|ec)\)\s*)?(?:no\.?\s*)?\d+(?:/\d+)+",
    r"\d+\s+(?:cfr|u\.s\.c\.)\s+(?:§\s*)?\d+(?:\.\d+)*",
)
"""Stage 1 regexes, matched against the case-folded text (a pattern with capitals is
matched case-insensitively); a named group ``claim`` selects the claim in the match."""

DEFAULT_KEYWORDS: tuple[str, ...] = (
    "AML",
    "anti-money laundering",
    "KYC",
    "know your customer",
    "CDD",
    "EDD",
    "OFAC",
    "sanctions",
    "FATF",
    "FinCEN",
    "Bank Secrecy Act",
    "BSA",
    "PEP",
    "politically exposed",
    "SAR",
    "suspicious activity report",
    "CTR",
    "GDPR",
    "PSD2",
    "MiFID",
    "travel rule",
)
"""Stage 2 regulatory keywords (matched case-insensitively as whole words)."""

_HYPHENS = dict.fromkeys(map(ord, _HYPHEN_CHARS), "-")
_SECTION_SUFFIX = re.compile(r",?\s+sec(?:tion|\.)\s*[\w.()]+$")
_PARAGRAPH_SIGN = re.compile(r"§\s*")
_REGEX_SYNTAX = re.compile(r"\(\?P[<=>]|\\[A-Za-z]")
_MIN_CONTAINED_REFERENCE = 3
_MAX_REFERENCES = 1000


def normalise_reference(text: str) -> str:
    """Fold Unicode hyphens, case and whitespace, and strip a trailing " Section N".

    Examples:
        >>> normalise_reference("AML‑2024‑03  Section 4")
        'aml-2024-03'
    """
    folded = _fold(text)
    return _SECTION_SUFFIX.sub("", folded) or folded


def _fold(text: str) -> str:
    folded = " ".join(text.translate(_HYPHENS).casefold().split()).strip(" .,;:")
    return _PARAGRAPH_SIGN.sub("§ ", folded) if "§" in folded else folded


class GroundingConfig(BaseModel):
    """Where the free text and the declared references are, and what counts as a claim."""

    model_config = ConfigDict(extra="forbid")

    text_fields: list[str] = Field(default_factory=lambda: ["raw_output.narrative"])
    """Dotted paths of free-text fields to scan; a list of strings is joined."""
    references_field: str | None = "raw_output.policy_refs"
    """Dotted path of the declared references (a string or a list); None: no references."""
    keywords: list[str] = Field(default_factory=lambda: list(DEFAULT_KEYWORDS))
    """Stage 2 regulatory keywords; empty disables stage 2."""
    citation_patterns: list[str] = Field(default_factory=lambda: list(DEFAULT_CITATION_PATTERNS))
    """Stage 1 regexes; a named group ``claim`` selects the claim inside the match. A
    match must start at a word boundary."""
    skip_when: Condition | None = None
    """Skip items matching this condition (e.g. ``raw_output.source == "fallback"``)."""
    max_scan_chars: int = Field(default=100_000, ge=1)
    """Each text field is scanned up to this many characters; the rest is not read."""

    @cached_property
    def compiled(self) -> _Compiled:
        """The compiled regexes and paths, built once per config object."""
        return _Compiled(self)


class _Compiled:
    def __init__(self, config: GroundingConfig) -> None:
        self.text_getters = [(path, compile_path(path)) for path in config.text_fields]
        self.references = compile_path(config.references_field) if config.references_field else None
        self.patterns = [re.compile(p, _case_flag(p)) for p in config.citation_patterns]
        self.claim_group = ["claim" in p.groupindex for p in self.patterns]
        keywords = sorted({k.strip() for k in config.keywords if k.strip()}, key=len, reverse=True)
        self.keyword_spelling = {_fold(k): k for k in keywords}
        alternatives = "|".join(_keyword_pattern(_fold(k)) for k in keywords)
        self.keywords = re.compile(rf"(?:{alternatives})(?!\w)") if keywords else None
        self.skip = config.skip_when.compile() if config.skip_when else None
        self.cap = config.max_scan_chars


def _case_flag(pattern: str) -> int:
    """IGNORECASE only for a pattern with capital letters (it slows the engine down)."""
    letters = _REGEX_SYNTAX.sub("", pattern)
    return re.IGNORECASE if letters != letters.lower() else 0


def _keyword_pattern(keyword: str) -> str:
    words = (re.escape(word).replace(r"\-", _ANY_HYPHEN) for word in keyword.split())
    return r"\s+".join(words)


def grounding_text(
    prediction: Mapping[str, Any], config: GroundingConfig, *, notes: list[str] | None = None
) -> str:
    """The configured free text of a prediction, each field capped, joined by blank lines.

    Args:
        prediction: The prediction as a plain dict.
        config: Where the text is and the cap.
        notes: When given, a line is appended for each field that was cut.
    """
    compiled = config.compiled
    parts: list[str] = []
    for path, get in compiled.text_getters:
        value = get(prediction)
        if isinstance(value, list):
            value = "\n".join(item for item in value[: compiled.cap] if isinstance(item, str))
        if not isinstance(value, str) or not value:
            continue
        if len(value) > compiled.cap:
            if notes is not None:
                notes.append(f"{path} truncated: scanned {compiled.cap:,} of {len(value):,} chars")
            value = value[: compiled.cap]
        parts.append(value)
    return "\n\n".join(parts)


def check_grounding(
    prediction: Mapping[str, Any], config: GroundingConfig, *, notes: list[str] | None = None
) -> GroundingResult:
    """Stages 1-2: find citation claims and regulatory keywords; check them against refs.

    A claim is grounded when, after normalisation, it equals a declared reference, or
    one contains the other on word boundaries ("Section 4" inside "AML-2024-03
    Section 4"). A keyword is grounded when some reference contains it. Anything else
    is ``ungrounded`` and flags the item. With no text to scan (or ``skip_when``
    matching) nothing runs and ``stages`` is empty.

    Args:
        prediction: The prediction as a plain dict; any field may be missing.
        config: Fields, keywords and patterns.
        notes: When given, receives one line per truncated field.

    Returns:
        The claims and keywords found (normalised), the ungrounded ones, ``flagged``.

    Examples:
        >>> check_grounding({"raw_output": {
        ...     "narrative": "Escalated per policy AML‑2024‑03 Section 4.",
        ...     "policy_refs": ["AML-2024-03"]}}, GroundingConfig()).ungrounded
        []
    """
    compiled = config.compiled
    if compiled.skip is not None and compiled.skip(prediction):
        return GroundingResult(flagged=False, stages=[])
    text = grounding_text(prediction, config, notes=notes)
    if not text:
        return GroundingResult(flagged=False, stages=[])
    folded = text.casefold()
    claims = _claims(folded, compiled)
    keywords = _keywords(folded, compiled)
    ungrounded: list[str] = []
    if claims or keywords:
        references = _references(prediction, compiled)
        ungrounded = [c for c in claims if not _claim_grounded(c, references)]
        ungrounded += [k for k in keywords if not _keyword_grounded(_fold(k), references)]
    return GroundingResult(
        flagged=bool(ungrounded),
        claims=claims,
        keywords=keywords,
        ungrounded=ungrounded,
        best_policy_similarity=None,
        stages=[1, 2],
    )


async def check_grounding_stage3(
    result: GroundingResult,
    text: str,
    *,
    embedder: Embedder,
    store: VectorStore,
    namespace: str,
    threshold: float,
) -> GroundingResult:
    """Stage 3: re-query a namespace of real policies with the text.

    The text is embedded and its nearest policy looked up; a best similarity under
    ``threshold`` (or an empty namespace) flags the item, since its regulatory content
    matches no known policy. Callers run it only when stages 1-2 found claims or
    keywords. Errors of the embedder or store propagate; the pipeline records them.

    Args:
        result: The stage 1-2 result.
        text: The scanned text (see :func:`grounding_text`).
        embedder: Embeds the text.
        store: Holds the policies.
        namespace: The policies' namespace.
        threshold: Similarity under which the best match does not ground the text.

    Returns:
        A copy of ``result`` with ``best_policy_similarity``, stage 3 and the flag.
    """
    vectors = await embedder.embed([text])
    matches = await store.query(namespace, vectors[0], top_k=1)
    best = max((match.score for match in matches), default=None)
    below = best is None or best < threshold
    return result.model_copy(
        update={
            "best_policy_similarity": best,
            "stages": [*result.stages, 3],
            "flagged": result.flagged or below,
        }
    )


def _starts_word(text: str, start: int) -> bool:
    return start == 0 or not (text[start - 1].isalnum() and text[start].isalnum())


def _claims(text: str, compiled: _Compiled) -> list[str]:
    """Stage 1 claims, folded, in order of appearance; a match inside another is dropped."""
    spans: list[tuple[int, int, str]] = []
    for pattern, has_group in zip(compiled.patterns, compiled.claim_group, strict=True):
        for match in pattern.finditer(text):
            start = match.start()
            if not _starts_word(text, start):
                continue
            raw = match.group("claim") if has_group else match.group(0)
            if raw:
                spans.append((start, match.end(), raw))
    if len(spans) > 1:
        spans.sort(key=lambda span: (span[0], -span[1]))
    claims: dict[str, None] = {}
    covered = -1
    for _, end, raw in spans:
        if end <= covered:
            continue
        covered = end
        claims[_fold(raw)] = None
    return list(claims)


def _keywords(text: str, compiled: _Compiled) -> list[str]:
    """Stage 2 keywords found, in the configured spelling, in order of appearance."""
    if compiled.keywords is None:
        return []
    found: dict[str, None] = {}
    for match in compiled.keywords.finditer(text):
        if _starts_word(text, match.start()):
            key = _fold(match.group(0))
            found[compiled.keyword_spelling.get(key, key)] = None
    return list(found)


def _references(prediction: Mapping[str, Any], compiled: _Compiled) -> list[tuple[str, str]]:
    """Each declared reference as (folded, normalised)."""
    if compiled.references is None:
        return []
    value = compiled.references(prediction)
    if value is MISSING or value is None:
        return []
    items = [value] if isinstance(value, str | Mapping) else value
    if not isinstance(items, list):
        return []
    found: list[tuple[str, str]] = []
    for item in items[:_MAX_REFERENCES]:
        if isinstance(item, str):
            texts = [item]
        elif isinstance(item, Mapping):
            texts = [v for v in item.values() if isinstance(v, str)]
        else:
            continue
        for text in texts:
            folded = _fold(text[:_MAX_REFERENCES])
            if folded:
                found.append((folded, _SECTION_SUFFIX.sub("", folded) or folded))
    return found


def _contains(outer: str, inner: str) -> bool:
    """Whether ``inner`` occurs in ``outer`` with no letter or digit on either side."""
    start = outer.find(inner)
    while start != -1:
        end = start + len(inner)
        before_ok = start == 0 or not outer[start - 1].isalnum()
        after_ok = end == len(outer) or not outer[end].isalnum()
        if before_ok and after_ok:
            return True
        start = outer.find(inner, start + 1)
    return False


def _claim_grounded(claim: str, references: list[tuple[str, str]]) -> bool:
    normalised = _SECTION_SUFFIX.sub("", claim) or claim
    for folded, ref in references:
        if normalised == ref or _contains(folded, claim):
            return True
        if len(ref) >= _MIN_CONTAINED_REFERENCE and _contains(claim, ref):
            return True
    return False


def _keyword_grounded(keyword: str, references: list[tuple[str, str]]) -> bool:
    return any(_contains(folded, keyword) for folded, _ in references)


@dataclass(frozen=True)
class PolicyCheck:
    """Grounding stage 3 as the pipeline takes it: built objects, not descriptions."""

    embedder: Embedder
    """Embeds the text (the same model as the policies' vectors)."""
    store: VectorStore
    """Holds the policies."""
    namespace: str = "policies"
    """The policies' namespace."""
    threshold: float = 0.70
    """Best similarity under which the text is flagged."""
    timeout_s: float = 5.0
    """Seconds stage 3 may take before it is given up."""


class GroundingLayer:
    """Grounding as a free layer: stages 1-2 on every item, stage 3 when it has claims.

    Stage 3 is bounded by its own timeout; when it fails, stages 1-2 stand, the failure
    is an error line (``grounding stage 3: ...``) and the layer still ran.

    Args:
        config: Stages 1-2.
        policy: Stage 3; None: stages 1-2 only.
    """

    name = "grounding"
    expensive = False
    budget_floor = None

    def __init__(self, config: GroundingConfig, policy: PolicyCheck | None = None) -> None:
        self.config = config
        self.policy = policy

    async def run(self, item: Item, context: LayerContext) -> GroundingResult:
        """The claims found and which are ungrounded; flags the item when some are."""
        result = check_grounding(item.doc, self.config, notes=context.notes)
        if self.policy is not None and (result.claims or result.keywords):
            result = await self._stage3(result, grounding_text(item.doc, self.config), context)
        if result.flagged:
            context.flag(_why_flagged(result))
        return result

    async def _stage3(
        self, result: GroundingResult, text: str, context: LayerContext
    ) -> GroundingResult:
        policy = self.policy
        assert policy is not None
        try:
            async with asyncio.timeout(policy.timeout_s):
                return await check_grounding_stage3(
                    result,
                    text,
                    embedder=policy.embedder,
                    store=policy.store,
                    namespace=policy.namespace,
                    threshold=policy.threshold,
                )
        except TimeoutError:
            failure = f"no answer within {policy.timeout_s:g}s"
        except Exception as exc:
            failure = describe_error(exc)
        context.error(failure, part="stage 3")
        context.note(f"stage 3: {failure}")
        return result


def _why_flagged(result: GroundingResult) -> str:
    if result.ungrounded:
        shown = ", ".join(result.ungrounded[:5])
        more = len(result.ungrounded) - 5
        return f"ungrounded {shown}" + (f" (+{more})" if more > 0 else "")
    best = result.best_policy_similarity
    return f"best policy similarity {'none' if best is None else f'{best:.2f}'} under threshold"
