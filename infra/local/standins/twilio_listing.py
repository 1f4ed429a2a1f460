"""Reading the Messages list as Twilio documents it: filters `To`, `From`, `DateSent`,
`DateSent<`, `DateSent>`; newest first; pages of `PageSize` (default 50, at most 1000)
linked by `next_page_uri` with a `PageToken`
(https://www.twilio.com/docs/messaging/api/message-resource#read-multiple-message-resources).

`DateSent` filters on `date_sent`, which stays null until Twilio has sent the message: a
message just accepted (`queued`, `accepted`) or that `failed` before sending matches no
`DateSent` filter at all. The docs define the values as GMT dates (`YYYY-MM-DD`; `DateSent>`
= on or after that date, `DateSent<` = on or before it), but the twilio SDK sends
`date_sent_after` / `date_sent_before` as `%Y-%m-%dT%H:%M:%SZ` (twilio/base/serialize.py,
iso8601_datetime, which ignores the datetime's time zone: pass UTC). The docs are silent on
such timestamps; the stand-in compares them to the second, both bounds inclusive."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlencode

FILTERS = ("To", "From", "DateSent", "DateSent<", "DateSent>")
DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE = 50, 1000

Message = dict[str, Any]


def sent_at(message: Message) -> datetime | None:
    return parsedate_to_datetime(message["date_sent"]) if message.get("date_sent") else None


def _bound(value: str) -> tuple[datetime, datetime]:
    """A filter value as the first and last instant it names: a whole GMT day for a date,
    one second for a timestamp. ValueError if it is neither."""
    if len(value) == 10:
        day = datetime.combine(date.fromisoformat(value), datetime.min.time(), UTC)
        return day, day + timedelta(days=1) - timedelta(microseconds=1)
    instant = datetime.fromisoformat(value.replace("Z", "+00:00"))
    instant = (instant if instant.tzinfo else instant.replace(tzinfo=UTC)).replace(microsecond=0)
    return instant, instant + timedelta(seconds=1) - timedelta(microseconds=1)


def matcher(args: dict[str, str]) -> Callable[[Message], bool]:
    """The list filters of a request as a predicate (ValueError for a bad DateSent)."""
    on = {name: _bound(args[name]) for name in ("DateSent", "DateSent<", "DateSent>") if args.get(name)}

    def matches(message: Message) -> bool:
        if args.get("To") and message["to"] != args["To"]:
            return False
        if args.get("From") and message["from"] != args["From"]:
            return False
        if not on:
            return True
        sent = sent_at(message)
        if sent is None:  # not sent yet (or never): no DateSent filter matches it
            return False
        if "DateSent" in on and not on["DateSent"][0] <= sent <= on["DateSent"][1]:
            return False
        if "DateSent>" in on and sent < on["DateSent>"][0]:
            return False
        return not ("DateSent<" in on and sent > on["DateSent<"][1])

    return matches


def newest_first(messages: list[Message]) -> list[Message]:
    """Sorted by DateSent, most recent first; messages not sent yet come first, newest
    first, as they are the latest (the docs do not say where they go)."""
    order = {id(m): n for n, m in enumerate(messages)}
    far = datetime.max.replace(tzinfo=UTC)
    return sorted(messages, key=lambda m: (sent_at(m) or far, order[id(m)]), reverse=True)


def page_of(messages: list[Message], args: dict[str, str], path: str) -> dict[str, Any]:
    """One page of the (filtered, sorted) list, with Twilio's paging fields. The PageToken
    is a cursor: `PA<sid>` continues after that message, `PB<sid>` goes back before it."""
    size = min(max(int(args.get("PageSize") or DEFAULT_PAGE_SIZE), 1), MAX_PAGE_SIZE)
    number = int(args.get("Page") or 0)
    token = args.get("PageToken") or ""
    sids = [m["sid"] for m in messages]
    start = 0
    if token[:2] == "PA" and token[2:] in sids:
        start = sids.index(token[2:]) + 1
    elif token[:2] == "PB" and token[2:] in sids:
        start = max(sids.index(token[2:]) - size, 0)
    listed = messages[start : start + size]
    kept = {name: args[name] for name in FILTERS if args.get(name)}

    def uri(page: int, page_token: str | None = None) -> str:
        query = {**kept, "PageSize": size, "Page": page, **({"PageToken": page_token} if page_token else {})}
        return f"{path}?{urlencode(query)}"

    more = start + size < len(messages)
    return {
        "messages": listed,
        "first_page_uri": uri(0),
        "next_page_uri": uri(number + 1, "PA" + listed[-1]["sid"]) if more and listed else None,
        "previous_page_uri": uri(number - 1, "PB" + listed[0]["sid"]) if start > 0 and listed else None,
        "page": number,
        "page_size": size,
        "start": number * size,
        "end": number * size + max(len(listed) - 1, 0),
        "uri": uri(number, token or None),
    }
