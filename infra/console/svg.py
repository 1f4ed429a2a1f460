"""The burst drawn as one SVG timeline, a row per thing that happened: each fragment, the
batch window, each state of each run (each tool call under Call Tools), each reply part,
the marks (opt-out, typing…), and the same arrival times under other batching rules. Time
runs left to right, in seconds from the first thing shown. Message texts appear only when
`show_text` is set; a tool call's arguments and output never."""

from __future__ import annotations

from html import escape

from infra.console.fragments import PREVIEW_CHARS
from infra.console.timeline import CALL_TOOLS_STATE, GENERATE_STATE, BurstView, RunView

WIDTH, LABELS, ROW = 1080, 300, 24
PLOT = WIDTH - LABELS - 130  # room on the right for a duration or a status
_STEPS_S = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600)
COLOURS = {
    "fragment": "#1d4ed8",
    "window": "#f59e0b",
    "state": "#2563eb",
    "wait": "#94a3b8",
    "failed": "#dc2626",
    "part": "#059669",
    "mark": "#7c3aed",
    "rules": "#a855f7",
    "tool": "#0891b2",
}
BAD_STATUSES = ("failed", "undelivered")


class Canvas:
    def __init__(self, start_ms: int, end_ms: int) -> None:
        self.start_ms, self.span_ms = start_ms, max(1, end_ms - start_ms)
        self.parts: list[str] = []
        self.y = 40  # below the axis

    def x(self, at_ms: int) -> float:
        share = min(1.0, max(0.0, (at_ms - self.start_ms) / self.span_ms))
        return round(LABELS + share * PLOT, 1)

    def text(self, x: float, y: float, words: str, css: str = "", anchor: str = "start") -> None:
        self.parts.append(
            f'<text x="{x}" y="{y}" class="{css}" text-anchor="{anchor}">{escape(words)}</text>'
        )

    def row(self, label: str, css: str = "") -> float:
        """A new row, its label on the left; the y of its middle."""
        middle = self.y + ROW / 2
        self.text(8, middle + 4, label, f"label {css}".strip())
        self.y += ROW
        return middle

    def heading(self, words: str) -> None:
        self.y += 6
        self.text(8, self.y + ROW / 2 + 4, words, "heading")
        self.y += ROW

    def bar(
        self, start_ms: int, end_ms: int, middle: float, colour: str, tip: str, dashed: bool = False
    ) -> None:
        left, right = self.x(start_ms), self.x(end_ms)
        dash = ' stroke-dasharray="4 3" fill-opacity="0.35"' if dashed else ""
        self.parts.append(
            f'<rect x="{left}" y="{middle - 7}" width="{max(2.0, right - left)}" height="14" rx="3" '
            f'fill="{colour}" stroke="{colour}"{dash}><title>{escape(tip)}</title></rect>'
        )

    def dot(self, at_ms: int, middle: float, colour: str, tip: str) -> float:
        x = self.x(at_ms)
        self.parts.append(
            f'<circle cx="{x}" cy="{middle}" r="6" fill="{colour}"><title>{escape(tip)}</title></circle>'
        )
        return x


def clipped(text: str) -> str:
    """A text on one line, PREVIEW_CHARS at most."""
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def draw(view: BurstView, show_text: bool, anchor: str = "") -> str:
    """The timeline; `anchor`: its id (the transcript's turns link to it)."""
    canvas = Canvas(view.start_ms, view.end_ms)
    _axis(canvas)
    _fragments(canvas, view, show_text)
    _windows(canvas, view)
    for run in view.runs:
        _run(canvas, run)
    _replies(canvas, view, show_text)
    _other_rules(canvas, view)
    height = canvas.y + 12
    ident = f' id="{escape(anchor)}"' if anchor else ""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg"{ident} width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-labelledby="timeline-title">'
        '<title id="timeline-title">The burst, fragment by fragment, state by state</title>'
        + "".join(canvas.parts)
        + "</svg>"
    )


def _axis(canvas: Canvas) -> None:
    span_s = canvas.span_ms / 1000
    step = next((s for s in _STEPS_S if span_s / s <= 10), _STEPS_S[-1])
    ticks = int(span_s / step) + 1
    for n in range(ticks):
        x = canvas.x(canvas.start_ms + int(n * step * 1000))
        canvas.parts.append(f'<line x1="{x}" y1="24" x2="{x}" y2="100%" class="tick"/>')
        canvas.text(x, 18, f"+{n * step:g}s", "axis", "middle")


def _fragments(canvas: Canvas, view: BurstView, show_text: bool) -> None:
    canvas.heading(f"Fragments ({len(view.fragments)})")
    for n, fragment in enumerate(view.fragments, start=1):
        offset = (fragment.at_ms - canvas.start_ms) / 1000
        middle = canvas.row(f"{n}. {fragment.kind} at +{offset:.2f}s ({fragment.state})")
        x = canvas.dot(fragment.at_ms, middle, COLOURS["fragment"], fragment.message_sid)
        if show_text and fragment.preview:
            canvas.text(x + 10, middle + 4, f"“{fragment.preview}”", "preview")
    if show_text:
        for window_id, text in view.merged_previews.items():
            if any(f.window_id == window_id for f in view.fragments):
                middle = canvas.row("the batch's text, merged")
                canvas.text(LABELS, middle + 4, f"“{text}”", "preview")


def _windows(canvas: Canvas, view: BurstView) -> None:
    if not view.bands:
        return
    canvas.heading("Batch windows")
    for band in view.bands:
        middle = canvas.row(f"window {band.window_id[-6:]}")
        ended = band.ended_ms or canvas.start_ms + canvas.span_ms
        why = f"ended: {band.ended_by}" if band.ended_by else ("waiting" if not band.ended_ms else "ended")
        canvas.bar(band.opened_ms, ended, middle, COLOURS["window"], why, dashed=not band.ended_ms)
        canvas.text(canvas.x(ended) + 6, middle + 4, f"{(ended - band.opened_ms) / 1000:.1f}s, {why}", "note")


def _run(canvas: Canvas, run: RunView) -> None:
    took = ""
    if run.run.stopped:
        took = f" in {(run.run.stopped - run.run.started).total_seconds():.1f}s"
    failure = f": in {run.failed_state}, {run.run.error}" if run.failed_state else ""
    canvas.heading(f"Run {run.run.name[-20:]}: {run.run.status}{took}{failure}")
    rows: dict[str, float] = {}
    ai_rows: set[str] = set()
    drawn = False  # the tool calls
    for span in run.states:
        failed = span.name == run.failed_state
        if span.name not in rows:
            rows[span.name] = canvas.row(span.name, "failed" if failed else "")
        middle = rows[span.name]
        entered = int(span.entered.timestamp() * 1000)
        exited = int(span.exited.timestamp() * 1000) if span.exited else canvas.start_ms + canvas.span_ms
        colour = COLOURS["failed" if failed else "wait" if span.name.startswith("Wait") else "state"]
        canvas.bar(entered, exited, middle, colour, span.name, dashed=span.exited is None)
        duration = "running" if span.duration_ms is None else f"{span.duration_ms:,} ms"
        canvas.text(canvas.x(exited) + 6, middle + 4, duration, "note")
        if span.name == GENERATE_STATE and run.ai_model and span.name not in ai_rows:
            ai_rows.add(span.name)
            words = f"AI call: {run.ai_model}, {run.prompt_tokens} in / {run.completion_tokens} out tokens"
            canvas.text(canvas.x(entered), canvas.y + ROW / 2 + 4, words, "note")
            canvas.y += ROW
        for error, cause in span.failed_attempts:
            canvas.text(canvas.x(exited) + 6, canvas.y + ROW / 2 + 4, f"✕ {error}: {cause}"[:90], "error")
            canvas.y += ROW
        if span.name == CALL_TOOLS_STATE and not drawn:
            drawn = _tool_calls(canvas, run)
    if not drawn:  # calls with no Call Tools state in the history read
        _tool_calls(canvas, run)


def _tool_calls(canvas: Canvas, run: RunView) -> bool:
    """A row per call: its tool, a bar from its claim to its outcome, the outcome in words."""
    for call in run.tool_calls:
        middle = canvas.row(f"tool {call.name}", "failed" if call.trouble else "")
        if call.claimed_ms is None:
            continue
        finished = call.finished_ms or canvas.start_ms + canvas.span_ms
        colour = COLOURS["failed" if call.trouble else "tool"]
        canvas.bar(call.claimed_ms, finished, middle, colour, call.name, dashed=call.finished_ms is None)
        words = [call.outcome, f"{call.attempts} attempt{'s' * (call.attempts != 1)}"]
        if call.finished_ms is not None:
            words.append(f"{call.finished_ms - call.claimed_ms:,} ms")
        canvas.text(
            canvas.x(finished) + 6, middle + 4, " · ".join(words), "error" if call.trouble else "note"
        )
    return True


def _replies(canvas: Canvas, view: BurstView, show_text: bool) -> None:
    if not view.parts and not view.marks:
        return
    canvas.heading("Replies, as Twilio reported them, and what else happened")
    for part in view.parts:
        late = part.by_person and part.sent_ms  # a person writes minutes later: say when
        when = f" at +{((part.sent_ms or 0) - canvas.start_ms) / 1000:.1f}s" if late else ""
        middle = canvas.row(f"{part.label}{when} ({part.message_sid[-6:]})")
        if part.at_ms is None:
            continue
        bad = part.status in BAD_STATUSES
        x = canvas.dot(part.at_ms, middle, COLOURS["failed" if bad else "part"], part.message_sid)
        code = f" (error {part.error_code})" if part.error_code else ""
        canvas.text(x + 10, middle + 4, f"{part.status}{code}", "error" if bad else "note")
        if show_text and part.text:
            canvas.text(LABELS, canvas.row("its text") + 4, f"“{clipped(part.text)}”", "preview")
        elif part.untold:
            canvas.text(LABELS, canvas.row("its text") + 4, part.untold, "note")
    for mark in view.marks:
        middle = canvas.row(mark.label)
        canvas.dot(mark.at_ms, middle, COLOURS["mark"], mark.label)


def _other_rules(canvas: Canvas, view: BurstView) -> None:
    if not view.other_rules or not view.fragments:
        return
    canvas.heading("The same arrival times under other rules")
    for policy, batches in view.other_rules.items():
        middle = canvas.row(policy)
        for batch in batches:
            answered = (batch.closed_ms - canvas.start_ms) / 1000
            tip = f"{batch.fragments} fragment(s), answered at +{answered:.1f}s"
            canvas.bar(batch.opened_ms, batch.closed_ms, middle, COLOURS["rules"], tip)
        last = max((b.closed_ms for b in batches), default=canvas.start_ms)
        calls = len(batches)
        canvas.text(canvas.x(last) + 6, middle + 4, f"{calls} AI call{'s' * (calls != 1)}", "note")
