"""The inline style sheet of the HTML report (no external font, image or script)."""

from __future__ import annotations

__all__ = ["STYLE"]

STYLE = """
:root {
  --ink: #1f2328; --muted: #656d76; --line: #d8dee4; --soft: #f6f8fa; --accent: #0969da;
  --pass: #1a7f37; --pass-bg: #dafbe1; --fail: #cf222e; --fail-bg: #ffebe9;
  --abstain: #9a6700; --abstain-bg: #fff8c5; --error: #8250df; --error-bg: #fbefff;
}
* { box-sizing: border-box; }
body {
  margin: 0; color: var(--ink); background: #fff; line-height: 1.45;
  font: 14px/1.45 -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica,
    Arial, sans-serif;
}
main { max-width: 1280px; margin: 0 auto; padding: 28px 32px 48px; }
header { border-bottom: 1px solid var(--line); padding-bottom: 14px; margin-bottom: 20px; }
h1 { font-size: 24px; margin: 0 0 6px; font-weight: 600; }
h1 .dataset { color: var(--accent); }
h2 { font-size: 18px; margin: 32px 0 10px; font-weight: 600; }
h2 .muted { font-size: 13px; font-weight: 400; margin-left: 8px; }
h3 { font-size: 14px; margin: 18px 0 8px; font-weight: 600; }
.meta, .muted { color: var(--muted); }
code { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.badge { font-size: 12px; padding: 2px 8px; border-radius: 999px; vertical-align: middle; }
.badge-warn { background: var(--abstain-bg); color: var(--abstain); }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(180px, 1fr)); gap: 12px; }
.card {
  border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; background: var(--soft);
}
.card-lead {
  background: #fff; border-color: var(--accent); box-shadow: 0 1px 3px rgba(9,105,218,.15);
}
.card-name {
  color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em;
}
.card-figure { font-size: 22px; font-weight: 600; margin-top: 2px; }
.card-lead .card-figure { font-size: 28px; color: var(--accent); }
.card-long .card-figure { font-size: 15px; padding-top: 6px; }
.nowrap { white-space: nowrap; }
.card-rest { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; margin: 4px 0 8px; font-size: 13px; }
th, td {
  border-bottom: 1px solid var(--line); padding: 6px 10px; text-align: left; vertical-align: top;
}
th { background: var(--soft); font-weight: 600; white-space: nowrap; position: sticky; top: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.pair { display: flex; gap: 24px; flex-wrap: wrap; align-items: flex-start; }
.scroll { overflow-x: auto; }
table.pairs { width: 100%; }
table.pairs td.output { max-width: 420px; }
table.pairs td.expected { max-width: 220px; min-width: 100px; }
.text, .why, .expected, .error-text { white-space: pre-wrap; overflow-wrap: anywhere; }
.label { font-weight: 600; }
.why { color: var(--muted); font-size: 12px; margin-top: 2px; max-width: 320px; }
.value { font-variant-numeric: tabular-nums; color: var(--muted); }
.error-text { color: var(--error); }
.v, .o {
  display: inline-block; font-size: 12px; font-weight: 600; padding: 0 7px; border-radius: 999px;
}
.v-pass, .o-passed { background: var(--pass-bg); color: var(--pass); }
.v-fail, .o-failed { background: var(--fail-bg); color: var(--fail); }
.v-abstain, .o-unknown { background: var(--abstain-bg); color: var(--abstain); }
.v-error, .o-error { background: var(--error-bg); color: var(--error); }
tr.outcome-failed td:first-child { box-shadow: inset 4px 0 var(--fail); }
tr.outcome-failed { background: #fff5f5; }
tr.outcome-error td:first-child { box-shadow: inset 4px 0 var(--error); }
tr.outcome-error { background: #fcf7ff; }
tr.outcome-unknown td:first-child { box-shadow: inset 4px 0 var(--abstain); }
tr.outcome-unknown { background: #fffdf0; }
tr.outcome-passed:not(.clean) td:first-child { box-shadow: inset 4px 0 var(--abstain); }
details { margin-top: 4px; font-size: 12px; }
summary { cursor: pointer; color: var(--accent); }
details ul { margin: 4px 0 0; padding-left: 18px; }
q { font-style: italic; overflow-wrap: anywhere; }
.q-verified { color: var(--pass); }
.q-not-found { color: var(--fail); }
.q-unchecked { color: var(--muted); }
.ci {
  position: relative; display: inline-block; width: 110px; height: 10px; margin-left: 8px;
  background: var(--soft); border: 1px solid var(--line); border-radius: 3px;
  vertical-align: -1px;
}
.ci-range { position: absolute; top: 1px; bottom: 1px; background: #a5c8f5; border-radius: 2px; }
.ci-point {
  position: absolute; top: -3px; bottom: -3px; width: 2px; margin-left: -1px;
  background: var(--accent);
}
details.more .text { font-size: 13px; }
.left-out { color: var(--muted); font-size: 13px; }
.toggle { margin: 0 6px 10px 0; vertical-align: middle; }
.toggle-label { color: var(--muted); cursor: pointer; }
body:has(#only-issues:checked) tr.clean { display: none; }
footer {
  margin-top: 36px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--line);
  padding-top: 12px;
}
"""
