"""What each page shows, read through infra/console/reading.py: the conversations with
recent activity (the start page), and one burst of a conversation (its page)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from functions.batching.rules.burst import BatchingRules
from functions.batching.windows import execution_name
from functions.handoff.rules.pause import is_paused
from infra.console.fragments import Fragment
from infra.console.reading import ConversationRow, Run, StackReader
from infra.console.timeline import (
    BurstView,
    Mark,
    ReplyPart,
    RunView,
    all_fragments,
    band_of,
    marks_of,
    other_rules,
    reply_parts,
    run_view,
    tool_calls_of,
    window_of_run,
    window_opened_ms,
)
from infra.console.transcript import Entry, transcript_of
from infra.replay.sources import epoch_ms

# Delivery reports later than this after the run are drawn at the timeline's right edge.
LATE_REPORTS_MS = 30_000
STATUSES = ("in flight", "failed", "replied", "handed off", "opted out")
_SOME_WINDOW = "0" * 13 + "-" + "0" * 6  # a window id's shape (functions/batching/windows.py)


def runs_prefix(conversation_id: str) -> str:
    """What the names of the conversation's runs start with (`<conversation>-<window>`)."""
    return execution_name(conversation_id, _SOME_WINDOW)[: -len(_SOME_WINDOW)]


@dataclass(frozen=True)
class Pause:
    """The conversation's hand-off to a person, as its record keeps it."""

    since_ms: int
    by: str  # operator, keyword, helpdesk (functions/handoff/rules/pause.py)
    until_ms: int | None  # None: until resumed
    message_sid: str | None  # the message whose keyword asked for a person
    holds: bool  # False once its `until` has passed


def pause_of(conversation: ConversationRow, now_ms: int) -> Pause | None:
    if not conversation.paused_at:
        return None
    until = conversation.paused_until
    return Pause(
        epoch_ms(conversation.paused_at),
        conversation.paused_by or "?",
        epoch_ms(until) if until else None,
        conversation.paused_by_message,
        is_paused(conversation, datetime.fromtimestamp(now_ms / 1000, UTC)),
    )


@dataclass
class ConversationLine:
    conversation: ConversationRow
    last_activity_ms: int
    open_window: bool = False
    set_aside: int = 0  # batches set aside (failed or dead-lettered)
    failed_runs: int = 0
    statuses: set[str] = field(default_factory=set)
    pause: Pause | None = None


def start_lines(reader: StackReader, now_ms: int) -> list[ConversationLine]:
    """Every conversation, the most recently active first."""
    windows, set_aside = reader.open_windows(), reader.set_aside_batches()
    runs = reader.runs()
    lines = []
    for conversation in reader.all_conversations():
        cid = conversation.conversation_id
        own_runs = [r for r in runs if r.name.startswith(runs_prefix(cid))]
        moments = [conversation.updated_at or "", conversation.created_at]
        activity = [epoch_ms(m) for m in moments if m] + [_ms(r.stopped or r.started) for r in own_runs]
        if cid in windows:
            activity.append(windows[cid].last_message_ms)
        line = ConversationLine(
            conversation,
            max(activity, default=0),
            open_window=cid in windows or any(r.status == "RUNNING" for r in own_runs),
            set_aside=len(set_aside.get(cid, [])),
            failed_runs=sum(r.status == "FAILED" for r in own_runs),
            pause=pause_of(conversation, now_ms),
        )
        line.statuses = statuses_of(line)
        lines.append(line)
    return sorted(lines, key=lambda line: line.last_activity_ms, reverse=True)


def chosen(lines: list[ConversationLine], tenant: str = "", status: str = "") -> list[ConversationLine]:
    """The lines of `tenant`, with `status` (one of STATUSES), when given."""
    return [
        line
        for line in lines
        if (not tenant or line.conversation.tenant_account_sid == tenant)
        and (not status or status in line.statuses)
    ]


def statuses_of(line: ConversationLine) -> set[str]:
    recorded = line.conversation.conversation_status
    found = {
        "in flight": line.open_window,
        "failed": bool(line.set_aside or line.failed_runs),
        "replied": recorded == "reply_sent",
        "handed off": recorded == "awaiting_agent" or bool(line.pause and line.pause.holds),
        "opted out": line.conversation.opted_out,
    }
    return {name for name, holds in found.items() if holds}


@dataclass
class ConversationPage:
    view: BurstView
    windows: list[tuple[str, str]]  # (window id, its run's status), newest first
    selected: str
    pause: Pause | None = None
    transcript: list[Entry] = field(default_factory=list)  # the conversation, turn by turn
    left_out: int = 0  # earlier turns the transcript leaves out


def conversation_page(
    reader: StackReader, conversation_id: str, selected: str, now_ms: int, local: bool
) -> ConversationPage | None:
    """The conversation's burst in window `selected` (the latest when empty or unknown)."""
    conversation = reader.conversation(conversation_id)
    if conversation is None:
        return None
    turns, staged = reader.turns_of(conversation_id), reader.staged_of(conversation_id)
    window = reader.window_of(conversation_id)
    runs = reader.runs(runs_prefix(conversation_id))
    windows = [(window_of_run(r), r.status) for r in reversed(runs)]
    if window and window.window_id not in dict(windows):
        windows.insert(0, (window.window_id, "window open"))
    known = dict(windows)
    selected = selected if selected in known else (windows[0][0] if windows else "")
    fragments, merged = all_fragments(turns, staged)
    if window:  # the fragments still pending wait for the open window
        fragments = [replace(f, window_id=window.window_id) if f.state == "pending" else f for f in fragments]
    start, end = _span(selected, fragments, runs, now_ms)
    shown = [reader.described(r) for r in runs if _ms(r.started) <= end and _ms(r.stopped, now_ms) >= start]
    views = [run_view(r, turns, None if local else reader.region) for r in shown]
    calls, proposals = reader.tool_calls_of(conversation_id) if views else ([], [])
    for run in views:
        run.tool_calls = tool_calls_of(run.window_id, calls, proposals, turns, now_ms)
    view = BurstView(conversation, start, end, merged_previews=merged)
    view.fragments = [f for f in fragments if start <= f.at_ms <= end]
    view.runs = views
    view.bands = [b for b in (band_of(v, turns, window) for v in views) if b]
    view.parts = _parts_shown(reply_parts(turns), views, windows, selected)
    pause = pause_of(conversation, now_ms)
    paused = [Mark(pause.since_ms, f"paused by {pause.by}")] if pause else []
    view.marks = [m for m in [*marks_of(turns), *paused] if start <= m.at_ms <= end]
    chosen = next((v for v in views if v.window_id == selected), None)
    rules = BatchingRules.parse((chosen.run.run_input.get("rules") if chosen else None) or {})
    view.other_rules = other_rules([f.at_ms for f in view.fragments], rules)
    pending = any(f.state == "pending" for f in view.fragments)
    view.in_flight = pending or window is not None or any(v.run.status == "RUNNING" for v in views)
    reported = [p.at_ms for p in view.parts if p.at_ms]
    closed = [b.closed_ms for batches in view.other_rules.values() for b in batches]
    view.end_ms = max(end, min(max(reported, default=end), end + LATE_REPORTS_MS), *closed)
    page = ConversationPage(view, windows, selected, pause)
    waiting = [f for f in fragments if f.state == "pending"]
    page.transcript, page.left_out = transcript_of(
        turns, waiting, [w for w, _ in windows], reply_parts(turns)
    )
    return page


def _parts_shown(
    parts: list[ReplyPart], views: list[RunView], windows: list[tuple[str, str]], selected: str
) -> list[ReplyPart]:
    """The parts of the runs shown, and the person's replies written after the selected
    window opened and before the next one did (every one, with no window)."""
    opened = (window_opened_ms(selected) or 0) if selected else 0
    later = [ms for w, _ in windows if (ms := window_opened_ms(w)) and ms > opened]
    before = min(later, default=None)
    shown = {v.window_id for v in views}

    def persons_in_burst(part: ReplyPart) -> bool:
        sent = part.sent_ms or 0
        return part.by_person and opened <= sent and (before is None or sent < before)

    return [p for p in parts if p.window_id in shown or persons_in_burst(p)]


def _span(selected: str, fragments: list[Fragment], runs: list[Run], now_ms: int) -> tuple[int, int]:
    """From the selected window's opening (or its first fragment) to the end of its run
    (now, while it runs); with no window, the fragments still waiting."""
    if selected:
        mine = [f.at_ms for f in fragments if f.window_id == selected]
    else:
        mine = [f.at_ms for f in fragments if f.state == "pending"]
    run = next((r for r in runs if window_of_run(r) == selected), None) if selected else None
    opened = window_opened_ms(selected)
    start = min([*mine, *([opened] if opened else [])] or [now_ms])
    end = max([*mine, _ms(run.stopped, now_ms) if run else now_ms])
    return start, max(end, start + 1000)


def _ms(moment: object, default: int = 0) -> int:
    timestamp = getattr(moment, "timestamp", None)
    return int(timestamp() * 1000) if timestamp else default
