"""The console's HTML, rendered on the server: the start page (conversations) and a
conversation's page (its burst as one SVG timeline, with the details beside it). No
script, no build step; links, a form and buttons, each with a visible focus."""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from urllib.parse import quote, urlencode

from infra.console import transcript
from infra.console.svg import draw
from infra.console.views import STATUSES, ConversationLine, ConversationPage, Pause

REFRESH_SECONDS = 2  # while a burst is in flight
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5rem;color:#0f172a;background:#fff}
a{color:#1d4ed8}
a:focus-visible,button:focus-visible,select:focus-visible,input:focus-visible{
outline:3px solid #f59e0b;outline-offset:2px}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}
th,td{text-align:left;padding:.25rem .75rem;border-bottom:1px solid #e2e8f0}
.failed,.error{color:#dc2626;fill:#dc2626}.muted{color:#64748b}
svg text{font:12px system-ui,sans-serif;fill:#0f172a}svg .heading{font-weight:600;fill:#334155}
svg .note,svg .axis{fill:#475569}svg .preview{fill:#1e3a8a;font-style:italic}
svg .label.failed{fill:#dc2626;font-weight:600}
svg .tick{stroke:#e2e8f0}nav a{margin-right:.75rem}form{display:inline}
"""


def masked(address: str) -> str:
    """A person's address as the console shows it: the channel and the last four digits
    (`whatsapp:+•••••••4567`); the full address is personal data."""
    channel, _, number = address.rpartition(":")
    keep = number[-4:] if len(number) > 6 else ""
    hidden = "+" * number.startswith("+") + "•" * max(3, len(number) - len(keep) - number.startswith("+"))
    return f"{channel + ':' if channel else ''}{hidden}{keep}"


def _moment(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if ms else "-"


def _page(title: str, body: str, refresh: bool) -> str:
    meta = f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">' if refresh else ""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">{meta}'
        f"<title>{escape(title)}</title><style>{STYLE}{transcript.CSS}</style></head><body>"
        f'<nav><a href="/">Conversations</a></nav>{body}</body></html>'
    )


def start_page(lines: list[ConversationLine], tenants: list[str], tenant: str, status: str) -> str:
    rows = "".join(_line(line) for line in lines) or '<tr><td colspan="8">No conversations.</td></tr>'
    body = (
        "<h1>Conversations</h1>"
        f"{_filters(tenants, tenant, status)}"
        "<table><thead><tr><th>Conversation</th><th>Tenant</th><th>Channel</th><th>Person</th>"
        "<th>Last activity</th><th>Open window</th><th>Hand-off</th><th>Failed or set aside</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )
    return _page("Conversations", body, refresh=any(line.open_window for line in lines))


def _line(line: ConversationLine) -> str:
    c = line.conversation
    failed = (
        f"{line.failed_runs} failed run(s), {line.set_aside} set aside" if "failed" in line.statuses else "-"
    )
    return (
        f'<tr><td><a href="/conversations/{quote(c.conversation_id)}">{escape(c.conversation_id)}</a></td>'
        f"<td>{escape(c.tenant_account_sid or '-')}</td><td>{escape(c.channel)}</td>"
        f"<td>{escape(masked(c.user_address))}</td><td>{_moment(line.last_activity_ms)}</td>"
        f"<td>{'yes' if line.open_window else '-'}</td><td>{_paused(line.pause)}</td>"
        f'<td class="{"failed" if line.set_aside or line.failed_runs else ""}">{failed}</td></tr>'
    )


def _paused(pause: Pause | None) -> str:
    """A pause that holds, and until when (the start page's row)."""
    if not pause or not pause.holds:
        return "-"
    return f"paused (until {_moment(pause.until_ms) if pause.until_ms else 'resumed'})"


def _pause_line(pause: Pause | None) -> str:
    """The conversation's hand-off to a person: since when, by whom, until when."""
    if not pause:
        return ""
    by = escape(pause.by) + (f" (message {escape(pause.message_sid)})" if pause.message_sid else "")
    since, until = _moment(pause.since_ms), _moment(pause.until_ms) if pause.until_ms else "resumed"
    if not pause.holds:
        return f'<p class="muted">Was handed off to a person from {since}, by {by}, until {until}.</p>'
    return (
        f"<p><strong>Handed off to a person</strong> since {since}, by {by}, until {until}: "
        "its bursts are recorded but get no AI call and no reply.</p>"
    )


def _filters(tenants: list[str], tenant: str, status: str) -> str:
    def options(values: list[str], chosen: str, everything: str) -> str:
        listed = [("", everything), *((v, v) for v in values)]
        return "".join(
            f'<option value="{escape(v)}"{" selected" * (v == chosen)}>{escape(label)}</option>'
            for v, label in listed
        )

    return (
        '<form method="get" action="/"><label>Tenant <select name="tenant">'
        f"{options(tenants, tenant, 'every tenant')}</select></label> "
        f'<label>Status <select name="status">{options(list(STATUSES), status, "any status")}'
        "</select></label> "
        "<button>Show</button></form>"
    )


def conversation_page(page: ConversationPage, show_text: bool, here: str) -> str:
    view, c = page.view, page.view.conversation
    heading = (
        f"<h1>Conversation {escape(c.conversation_id)}</h1>"
        f"<p>{escape(c.channel)} · {escape(masked(c.user_address))} → {escape(c.our_address)} · "
        f"tenant {escape(c.tenant_account_sid or '-')}"
        f"{' · <strong>opted out</strong>' if c.opted_out else ''}"
        f"{' · <strong>in flight</strong> (this page refreshes itself)' if view.in_flight else ''}</p>"
    )
    body = (
        heading
        + _pause_line(page.pause)
        + _windows_nav(page)
        + _text_toggle(show_text, here)
        + transcript.render(page.transcript, page.left_out, show_text, page.selected)
        + "<h2>The burst, on its timeline</h2>"
        + draw(view, show_text, f"burst-{page.selected}" if page.selected else "")
    )
    body += _runs_table(page) + _tool_calls_table(page) + _parts_table(page)
    return _page(f"Conversation {c.conversation_id}", body, refresh=view.in_flight)


def _windows_nav(page: ConversationPage) -> str:
    links = [
        f'<a href="?{urlencode({"window": w})}"{" aria-current=page" * (w == page.selected)}>'
        f"{_moment(int(w[:13]) if w[:13].isdigit() else 0)} ({escape(status)})</a>"
        for w, status in page.windows[:12]
    ]
    return f"<p>Batch windows, newest first: {' '.join(links) or 'none yet'}</p>"


def _text_toggle(show_text: bool, here: str) -> str:
    """Message texts are personal data: shown only when asked, and never in the URL (a
    POST that sets a cookie)."""
    wanted, label = ("0", "Hide message text") if show_text else ("1", "Show message text")
    return (
        f'<form method="post" action="/message-text"><input type="hidden" name="show" value="{wanted}">'
        f'<input type="hidden" name="back" value="{escape(here)}"><button>{label}</button></form>'
    )


def _runs_table(page: ConversationPage) -> str:
    rows = []
    for run in page.view.runs:
        failure = ""
        if run.run.status == "FAILED":
            failure = f"failed in {run.failed_state}: {run.run.error}: {run.run.cause}"
        link = f' <a href="{escape(run.console_url)}">in the AWS console</a>' if run.console_url else ""
        rows.append(
            f"<tr><td>{escape(run.run.name)}</td><td>{escape(run.run.status)}</td>"
            f'<td class="{"failed" if failure else ""}">{escape(failure) or "-"}{link}</td></tr>'
        )
    if not rows:
        return ""
    return (
        "<h2>Runs</h2><table><tr><th>Run</th><th>Status</th><th>Failure</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _tool_calls_table(page: ConversationPage) -> str:
    """The runs' tool calls: names and outcomes only (never what was asked or answered)."""
    rows = [
        f"<tr><td>{escape(call.name)}</td><td>{escape(run.window_id[-6:])}</td>"
        f'<td class="{"failed" if call.trouble else ""}">{escape(call.outcome)}</td><td>{call.attempts}</td>'
        f"<td>{_moment(call.claimed_ms or 0)}</td><td>{_moment(call.finished_ms or 0)}</td></tr>"
        for run in page.view.runs
        for call in run.tool_calls
    ]
    if not rows:
        return ""
    columns = ("Tool", "Window", "Outcome", "Attempts", "Claimed", "Finished")
    head = "<tr>" + "".join(f"<th>{c}</th>" for c in columns) + "</tr>"
    return "<h2>Tool calls</h2><table>" + head + "".join(rows) + "</table>"


def _parts_table(page: ConversationPage) -> str:
    rows = [
        f"<tr><td>{escape(p.label)}</td><td>{escape(p.message_sid)}</td><td>{escape(p.status)}"
        f"{f' (error {p.error_code})' if p.error_code else ''}</td><td>{_moment(p.at_ms or 0)}</td></tr>"
        for p in page.view.parts
    ]
    if not rows:
        return ""
    head = "<tr><th>Message</th><th>MessageSid</th><th>Status</th><th>Reported</th></tr>"
    return "<h2>Replies sent</h2><table>" + head + "".join(rows) + "</table>"
