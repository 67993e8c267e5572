"""The offline (mock) jury on SummEdits: detection figures against real human labels.

Run: ``python bench/summedits_eval.py [--data DIR] [--out FILE]``.

Reads every ``*.jsonl`` of ``../shared/benchmarks/summedits`` (resolved from this file:
``Path(__file__).parents[2] / "shared/benchmarks/summedits"``; ``--data`` overrides),
judges each row with the default jury (three critics on the deterministic mock
provider, i.e. the string detectors; no network) through ``Jury().judge_async``, and
reports SEPARATELY for ``metadata.split`` "evaluation" (dev) and "test" (report only):

- detection: the jury flags a row unless it ACCEPTs; precision and recall with Wilson
  95% intervals, specificity, balanced accuracy (SummEdits' metric: the mean of the
  recall on inconsistent rows and the recall on consistent rows), escalate rate;
- the same per domain (``metadata.domain``);
- per edit type (``metadata.edit_types``): RECALL on the defective rows only, a row with
  several edit types counted under each (an edit type says how an inconsistent summary
  was made; rows with edits that annotators still judged consistent are counted apart);
- the calibration figures and gates of ``arbiter.jury.evaluation.evaluate_jury``.

Markdown tables go to stdout (ready for the README); the same figures go to
``bench/results/summedits_mock.json`` (``--out``). Nothing is tuned here: the jury runs
with its shipped settings on both splits.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import platform
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from arbiter.contract import Case, Verdict
from arbiter.jury.critics import DEFAULT_ROSTER
from arbiter.jury.evaluation import detection_figures, evaluate_jury
from arbiter.jury.jury import Jury
from arbiter.stats import wilson_interval

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/benchmarks/summedits"
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "summedits_mock.json"
SPLITS = {"evaluation": "dev", "test": "test, report only"}
DOMAINS = ("podcast", "sales_call", "samsum", "scitldr", "qmsumm")
EDIT_TYPES = (
    "entity_modification",
    "antonym_swap",
    "hallucinated_fact_insertion",
    "negation_insertion_removal",
)
REFERENCE = {
    "gpt-4 (SummEdits paper)": 0.824,
    "human (SummEdits paper)": 0.909,
}
"""Balanced accuracy reported by Laban et al. (2023), for context only."""


# --------------------------------------------------------------------------- loading


def _load_file(path: Path) -> list[Case]:
    try:
        from arbiter.jury.cases import load_cases
    except ImportError:  # older trees: validate line by line
        lines = path.read_text(encoding="utf-8").splitlines()
        return [Case.model_validate_json(line) for line in lines if line.strip()]
    return load_cases(path)


def load_rows(data: Path) -> list[Case]:
    """Every row of every ``*.jsonl`` in ``data``, files in name order."""
    files = sorted(data.glob("*.jsonl"))
    if not files:
        raise SystemExit(f"no *.jsonl in {data} (pass --data DIR)")
    return [case for file in files for case in _load_file(file)]


def split_of(case: Case) -> str:
    return str(case.metadata.get("split"))


async def judge_all(jury: Jury, cases: Sequence[Case]) -> list[Verdict]:
    return [await jury.judge_async(case) for case in cases]


# --------------------------------------------------------------------------- figures


@dataclass(frozen=True)
class Rate:
    """A proportion with its Wilson 95% interval."""

    k: int
    n: int
    estimate: float | None
    low: float
    high: float

    @classmethod
    def of(cls, k: int, n: int) -> Rate:
        low, high = wilson_interval(k, n)
        return cls(k, n, k / n if n else None, low, high)

    def cell(self) -> str:
        if self.estimate is None:
            return "— (n=0)"
        return f"{self.estimate:.1%} [{self.low:.1%}, {self.high:.1%}] ({self.k}/{self.n})"


@dataclass(frozen=True)
class Detection:
    """Detection figures of one group of rows."""

    n: int
    inconsistent: int
    consistent: int
    tp: int
    fp: int
    fn: int
    tn: int
    precision: Rate
    recall: Rate
    specificity: Rate
    balanced_accuracy: float | None
    """Mean of recall and specificity; None without both classes."""
    escalate_rate: float
    flag_rate: float
    decisions: dict[str, int]


def flagged(verdict: Verdict) -> bool:
    return verdict.decision != "ACCEPT"


def detection(pairs: Sequence[tuple[Case, Verdict]]) -> Detection:
    tp = sum(1 for c, v in pairs if c.defective and flagged(v))
    fp = sum(1 for c, v in pairs if not c.defective and flagged(v))
    fn = sum(1 for c, v in pairs if c.defective and not flagged(v))
    tn = len(pairs) - tp - fp - fn
    recall, specificity = Rate.of(tp, tp + fn), Rate.of(tn, tn + fp)
    balanced = (
        (recall.estimate + specificity.estimate) / 2
        if recall.estimate is not None and specificity.estimate is not None
        else None
    )
    n = len(pairs)
    counts = Counter(v.decision for _, v in pairs)
    return Detection(
        n=n,
        inconsistent=tp + fn,
        consistent=tn + fp,
        tp=tp,
        fp=fp,
        fn=fn,
        tn=tn,
        precision=Rate.of(tp, tp + fp),
        recall=recall,
        specificity=specificity,
        balanced_accuracy=balanced,
        escalate_rate=sum(v.escalate for _, v in pairs) / n if n else 0.0,
        flag_rate=(tp + fp) / n if n else 0.0,
        decisions={d: counts.get(d, 0) for d in ("ACCEPT", "REVISE", "REJECT")},
    )


@dataclass(frozen=True)
class EditRecall:
    """Recall on the defective rows of one edit type."""

    defective_rows: int
    recall: Rate
    escalate_rate: float


def edit_type_recall(pairs: Sequence[tuple[Case, Verdict]]) -> dict[str, EditRecall]:
    result = {}
    for edit in (*EDIT_TYPES, "(none listed)"):
        rows = [(c, v) for c, v in pairs if c.defective and edit in edit_types(c)]
        result[edit] = EditRecall(
            defective_rows=len(rows),
            recall=Rate.of(sum(flagged(v) for _, v in rows), len(rows)),
            escalate_rate=sum(v.escalate for _, v in rows) / len(rows) if rows else 0.0,
        )
    return result


def edit_types(case: Case) -> list[str]:
    types = [str(t) for t in case.metadata.get("edit_types") or []]
    return types or ["(none listed)"]


def finding_kinds(pairs: Sequence[tuple[Case, Verdict]], defective: bool) -> dict[str, int]:
    """Rows with at least one finding of each dimension/kind, among flagged rows."""
    counts: Counter[str] = Counter()
    for case, verdict in pairs:
        if bool(case.defective) == defective and flagged(verdict):
            counts.update({f"{f.dimension}/{f.kind}" for f in verdict.findings} or {"(no finding)"})
    return dict(counts.most_common())


def split_report(cases: Sequence[Case], verdicts: Sequence[Verdict]) -> dict[str, Any]:
    pairs = list(zip(cases, verdicts, strict=True))
    overall = detection(pairs)
    check = detection_figures(cases, verdicts)
    agrees = check is not None and (check.tp, check.fp, check.fn, check.tn) == (
        overall.tp,
        overall.fp,
        overall.fn,
        overall.tn,
    )
    evaluation = evaluate_jury(cases, [v.critiques for v in verdicts])
    edited_consistent = [
        (c, v) for c, v in pairs if not c.defective and c.metadata.get("edit_types")
    ]
    return {
        "overall": asdict(overall),
        "by_domain": {
            d: asdict(detection([(c, v) for c, v in pairs if c.metadata.get("domain") == d]))
            for d in DOMAINS
            if any(c.metadata.get("domain") == d for c in cases)
        },
        "by_edit_type_recall_on_defective_rows": {
            k: asdict(e) for k, e in edit_type_recall(pairs).items()
        },
        "consistent_rows_with_edit_types": {
            "rows": len(edited_consistent),
            "flagged": sum(flagged(v) for _, v in edited_consistent),
        },
        "flagged_rows_by_finding": {
            "inconsistent": finding_kinds(pairs, True),
            "consistent": finding_kinds(pairs, False),
        },
        "calibration": {
            "accuracy": evaluation.accuracy,
            "mean_confidence": evaluation.mean_confidence,
            "ece": evaluation.ece,
            "ece_interval": list(evaluation.ece_interval),
            "coverage": evaluation.coverage,
            "accuracy_at_coverage": evaluation.accuracy_at_coverage,
            "gate_failures": evaluation.gate_failures,
        },
        "agrees_with_detection_figures": agrees,
    }


# --------------------------------------------------------------------------- markdown


def pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1%}"


def detection_table(rows: Sequence[tuple[str, dict[str, Any]]]) -> list[str]:
    out = [
        "| group | rows | incons. / cons. | precision [95% CI] | recall [95% CI] "
        "| specificity | balanced acc. | escalate |",
        "|---|---:|---:|---|---|---:|---:|---:|",
    ]
    for name, d in rows:
        out.append(
            f"| {name} | {d['n']} | {d['inconsistent']} / {d['consistent']} "
            f"| {Rate(**d['precision']).cell()} | {Rate(**d['recall']).cell()} "
            f"| {pct(d['specificity']['estimate'])} | {pct(d['balanced_accuracy'])} "
            f"| {pct(d['escalate_rate'])} |"
        )
    return out


def edit_table(edits: dict[str, dict[str, Any]]) -> list[str]:
    out = [
        "| edit type | defective rows | recall [95% CI] | escalate |",
        "|---|---:|---|---:|",
    ]
    for name, e in edits.items():
        if e["defective_rows"]:
            out.append(
                f"| {name} | {e['defective_rows']} | {Rate(**e['recall']).cell()} "
                f"| {pct(e['escalate_rate'])} |"
            )
    return out


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


def markdown(split: str, label: str, report: dict[str, Any]) -> str:
    overall = report["overall"]
    cal = report["calibration"]
    lines = [
        f"### SummEdits, split `{split}` ({label}): mock jury",
        "",
        *detection_table(
            [("**all**", overall), *((f"{d}", v) for d, v in report["by_domain"].items())]
        ),
        "",
        "Per edit type, recall on the inconsistent (defective) rows only; a row with several "
        "edit types counts under each:",
        "",
        *edit_table(report["by_edit_type_recall_on_defective_rows"]),
        "",
    ]
    edited = report["consistent_rows_with_edit_types"]
    if edited["rows"]:
        lines.append(
            f"{edited['rows']} consistent rows carry edit types (edited, yet judged "
            f"consistent by the annotators); the jury flagged {edited['flagged']} of them."
        )
    kinds = report["flagged_rows_by_finding"]
    lines.append(
        "Flagged rows with a finding of each dimension/kind: inconsistent "
        + _counts(kinds["inconsistent"])
        + "; consistent (false alarms) "
        + _counts(kinds["consistent"])
        + "."
    )
    decisions = ", ".join(f"{k} {v}" for k, v in overall["decisions"].items())
    reference = ", ".join(f"{k} {v:.1%}" for k, v in REFERENCE.items())
    lines += [
        f"Decisions: {decisions}. Reference balanced accuracy: {reference}; chance 50%.",
        f"Calibration: accuracy {cal['accuracy']:.3f}, mean confidence "
        f"{cal['mean_confidence']:.3f}, ECE {cal['ece']:.3f} "
        f"[{cal['ece_interval'][0]:.3f}, {cal['ece_interval'][1]:.3f}]; gates: "
        + ("; ".join(cal["gate_failures"]) or "all pass")
        + ".",
        "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="SummEdits JSONL dir")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON figures file")
    args = parser.parse_args(argv)

    rows = load_rows(args.data)
    verdicts = asyncio.run(judge_all(Jury(), rows))
    payload: dict[str, Any] = {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "data": str(args.data),
        "rows": len(rows),
        "jury": [
            spec.model_dump(include={"name", "lens", "provider", "model"})
            for spec in DEFAULT_ROSTER
        ],
        "flagged_means": "decision != ACCEPT",
        "reference_balanced_accuracy": REFERENCE,
        "splits": {},
    }
    print(f"<!-- {payload['date']}; {len(rows)} rows from {args.data}; mock jury -->\n")
    for split, label in SPLITS.items():
        chosen = [i for i, c in enumerate(rows) if split_of(c) == split]
        if not chosen:
            print(f"(no rows with metadata.split == {split!r})\n")
            continue
        report = split_report([rows[i] for i in chosen], [verdicts[i] for i in chosen])
        payload["splits"][split] = {"label": label, **report}
        print(markdown(split, label, report))
    others = Counter(split_of(c) for c in rows if split_of(c) not in SPLITS)
    if others:
        print(f"rows in other splits, not reported: {dict(others)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"figures written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
