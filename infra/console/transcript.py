"""A conversation as a chat, from its Turns table: each batch's user turn (the person's
fragments, merged), the assistant's reply (with what the model was given), a person's reply
from a helpdesk, the WhatsApp template sent outside the 24-hour window, an opt-out's
confirmation and a hand-off's notice, newest last; each linked to its burst's timeline.

What the turns say is personal data: `said` is rendered only when the operator asks;
otherwise the kinds and lengths, never the texts. Built from what infra/console/reading.py
read; no I/O here."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import escape
from urllib.parse import urlencode

from functions.handoff.rules.pause import PERSON
from functions.storage.models import Turn
from infra.console.fragments import Fragment, said_of
from infra.console.timeline import ReplyPart, window_opened_ms
from infra.replay.sources import epoch_ms

MAX_TURNS = 40  # the most recent turns shown
NOTICES = {"opted_out": "opt-out confirmation", "handed_off": "hand-off notice"}
# A user turn's status as the transcript says it (else its own, e.g. answered, handed off).
USER_STATUSES = {
    "pending": "being answered",
    "failed": "set aside",
    "dead_lettered": "set aside (dead-lettered)",
}
CONSENT = {"opt_out": " · an opt-out keyword", "opt_in": " · an opt-in keyword"}
TEMPLATE = "template, outside the 24-hour window"
HINT = '<p class="muted">Kinds and lengths only: "Show message text" shows the texts.</p>'
CSS = (
    ".transcript{list-style:none;padding:0;max-width:60rem}.transcript li{margin:.4rem 0;"
    "padding:.4rem .7rem;border-radius:.5rem;background:#f1f5f9}.transcript li.reply{margin-left:6rem;"
    "background:#ecfdf5}.transcript li.current{outline:2px solid #94a3b8}"
    ".transcript .said{white-space:pre-wrap;margin:.2rem 0}.transcript .said b{font-weight:600}"
)


@dataclass
class Entry:
    """One turn as the transcript shows it."""

    who: str  # the person, the assistant, a person (helpdesk), template, opt-out confirmation...
    at_ms: int | None
    burst: str  # the batch window of its burst on the timeline ("": none known)
    reply: bool  # said to the person (drawn on the right)
    status: str = ""
    said: list[tuple[str, str]] = field(default_factory=list)  # (kind, text): personal data
    summary: str = ""  # kinds and lengths: what is shown without the texts
    given: str = ""  # what the model was given (an AI reply)
    parts: list[str] = field(default_factory=list)  # each message sent and its status


def transcript_of(
    turns: list[Turn], pending: list[Fragment], windows: list[str], parts: list[ReplyPart]
) -> tuple[list[Entry], int]:
    """The last MAX_TURNS turns' entries in order (then the fragments still pending), and
    how many earlier turns are left out. `windows`: the conversation's batch windows."""
    ordered = sorted(turns, key=lambda t: t.turn_id)
    shown = ordered[-MAX_TURNS:]
    entries = [e for t in shown for e in _entries_of(t, windows, parts)]
    merged = {sid for t in turns for sid in t.message_sids if t.role == "user"}
    pending = [f for f in pending if f.message_sid not in merged]  # not in a batch yet
    if pending:
        kinds = [f.kind for f in pending]
        said = [(f.kind, f.preview) for f in pending]
        summary = f"{_count(len(pending), 'fragment')}: {', '.join(kinds)}"
        burst = pending[0].window_id
        entries.append(Entry("the person", pending[0].at_ms, burst, False, "pending", said, summary))
    return entries, len(ordered) - len(shown)


def _entries_of(turn: Turn, windows: list[str], parts: list[ReplyPart]) -> list[Entry]:
    if turn.role == "user":
        return [_user_entry(turn), *_fallback(turn, parts)]
    mine = [p for p in parts if p.window_id == turn.window_id and p.by_person == (turn.written_by == PERSON)]
    entry = _reply_entry(turn, windows, mine)
    if not turn.template_sid:
        return [entry] if entry else []
    template = Entry(TEMPLATE, entry.at_ms if entry else None, turn.window_id, True)
    template.summary = "sent instead of the reply above, which the person did not receive"
    template.parts = [f"{p.label}: {_status(p)}" for p in mine if p.message_sid == turn.template_sid]
    if entry:
        entry.status = "not sent: the 24-hour window was closed"
    return [e for e in (entry, template) if e]


def _user_entry(turn: Turn) -> Entry:
    said = said_of(turn)
    count = len(turn.message_sids) or turn.message_count or len(said)
    kinds = [kind for kind, _ in said] if len(said) == count else ["message"] * count
    status = USER_STATUSES.get(turn.status, turn.status.replace("_", " "))
    at = turn.first_received_at or turn.created_at
    summary = f"{_count(count, 'fragment')}: {', '.join(kinds)} · {_count(len(turn.body), 'character')}"
    consent = CONSENT.get(turn.consent or "", "")
    return Entry("the person", _ms(at), turn.window_id, False, status, said, summary + consent)


def _reply_entry(turn: Turn, windows: list[str], parts: list[ReplyPart]) -> Entry | None:
    """The assistant's reply, a person's, or the notice sent in their place."""
    limited = turn.status == "limited"
    if limited and not turn.body:
        return None  # no message: the user turn's row says the batch was limited
    who = "a person (helpdesk)" if turn.written_by == PERSON else "the assistant"
    who = NOTICES.get(turn.limited or "", f"notice ({turn.limited})") if limited else who
    at = _ms(turn.first_part_at or turn.sent_at or turn.created_at)
    burst = _burst_at(windows, at) if turn.written_by == PERSON else turn.window_id
    sent = [p for p in parts if p.message_sid != turn.template_sid]
    entry = Entry(who, at, burst, True, "" if turn.status in ("sent", "limited") else turn.status)
    entry.said = [("", turn.body)]
    in_parts = f" in {_count(len(sent), 'part')}" if sent else ", not sent"
    cut = f" · cut by a limit ({turn.limited})" if turn.limited and not limited else ""
    entry.summary = f"{_count(len(turn.body), 'character')}{in_parts}{cut}"
    entry.parts = [f"{p.label}: {_status(p)}" for p in sent]
    if turn.model:
        profile = (
            f"assistant profile {turn.profile_key} version {turn.profile_version}"
            if turn.profile_key
            else "no assistant profile: the deployment's instructions"
        )
        tools = f"; tools called: {', '.join(turn.tools_called)}" if turn.tools_called else ""
        entry.given = (
            f"given: model {turn.model}, {turn.prompt_tokens} input tokens (instructions, context and "
            f"this batch; {profile}); {turn.completion_tokens} output tokens{tools}"
        )
    return entry


def _fallback(turn: Turn, parts: list[ReplyPart]) -> list[Entry]:
    """The fallback reply sent for a batch set aside (its text is not recorded)."""
    if not turn.fallback_message_sid:
        return []
    mine = [p for p in parts if p.message_sid == turn.fallback_message_sid]
    entry = Entry("fallback reply", mine[0].at_ms if mine else None, turn.window_id, True)
    entry.summary = "the batch was set aside; its text is the deployment's FALLBACK_REPLY"
    entry.parts = [f"fallback: {_status(p)}" for p in mine]
    return [entry]


def _burst_at(windows: list[str], at_ms: int | None) -> str:
    """The burst a person's reply was written in: the last window opened before it."""
    opened = [(ms, w) for w in windows if (ms := window_opened_ms(w)) and ms <= (at_ms or 0)]
    return max(opened)[1] if opened else ""


def render(entries: list[Entry], left_out: int, show_text: bool, selected: str) -> str:
    """The transcript's HTML: texts only with `show_text`, else kinds and lengths."""
    if not entries:
        return ""
    earlier = f'<p class="muted">{left_out} earlier turn(s) not shown.</p>' if left_out else ""
    items = "".join(_item(e, show_text, selected) for e in entries)
    hint = "" if show_text else HINT
    return f'<h2>Transcript</h2>{hint}{earlier}<ol class="transcript">{items}</ol>'


def _item(entry: Entry, show_text: bool, selected: str) -> str:
    css = " ".join(
        c
        for c, holds in (("reply", entry.reply), ("current", bool(entry.burst) and entry.burst == selected))
        if holds
    )
    when = (
        datetime.fromtimestamp(entry.at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        if entry.at_ms
        else "-"
    )
    link = f'<a href="?{urlencode({"window": entry.burst})}#burst-{escape(entry.burst)}">{when}</a>'
    head = f"<strong>{escape(entry.who)}</strong> · {link if entry.burst else when}"
    head += f" · {escape(entry.status)}" if entry.status else ""
    if show_text and any(text for _, text in entry.said):
        body = "".join(_said(kind, text) for kind, text in entry.said)
    else:
        body = f'<p class="said muted">{escape(entry.summary)}</p>'
    details = [escape(d) for d in [" · ".join(entry.parts), entry.given] if d]
    extra = "".join(f'<p class="said muted">{d}</p>' for d in details)
    return f'<li class="{css}">{head}{body}{extra}</li>'


def _said(kind: str, text: str) -> str:
    label = f"<b>{escape(kind)}</b>: " if kind else ""
    return f'<p class="said">{label}{escape(text)}</p>'


def _status(part: ReplyPart) -> str:
    return part.status + (f" (error {part.error_code})" if part.error_code else "")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def _ms(at: str | None) -> int | None:
    return epoch_ms(at) if at else None
