"""Reading an OpenAI Conversation's newest items as exchanges (a user message and what
followed it), to find a batch's turn that an earlier attempt left there.

The service sends each batch as one user message, and a response adds its input and its
output items together when it completes; a second response cannot start while one runs
(`conversation_locked`). So the conversation's tail is a sequence of exchanges, and the
turns that may be strays are those newer than the last reply the user received."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from functions.answer.rules.openai_items import ConversationItem


@dataclass(frozen=True)
class Exchange:
    user: ConversationItem
    replies: tuple[ConversationItem, ...]  # oldest first

    @property
    def item_ids(self) -> list[str]:
        return [self.user.id, *(item.id for item in self.replies)]

    @property
    def reply_text(self) -> str:
        return "\n".join(item.text for item in self.replies if item.role == "assistant" and item.text)

    def holds_any(self, item_ids: Iterable[str]) -> bool:
        return not set(item_ids).isdisjoint(self.item_ids)


def exchanges(newest_first: list[ConversationItem]) -> list[Exchange]:
    """The exchanges of a page of items listed newest first, newest first. Replies at the
    old end of the page whose user message is on the next page are left out."""
    found: list[Exchange] = []
    following: list[ConversationItem] = []
    for item in newest_first:
        if item.role == "user":
            found.append(Exchange(item, tuple(reversed(following))))
            following = []
        else:
            following.append(item)
    return found


def deletion_order(stray: list[Exchange]) -> list[str]:
    """The item ids of `stray`, in the order to delete them one at a time: each exchange's
    replies oldest first, then its user message. Wherever the deletions stop, what is left
    of an exchange is its user message and its newest replies: never a reasoning item
    without the reply that followed it (OpenAI refuses a conversation holding one:
    github.com/openai/openai-agents-js/issues/929), and a user message whose replies are
    gone is still recognised by its text as the batch's copy."""
    return [item.id for exchange in stray for item in (*exchange.replies, exchange.user)]


def exchange_of(
    found: list[Exchange], item_ids: Iterable[str], user_text: str | None, reply_text: str
) -> Exchange | None:
    """The exchange of a response: the one holding its output items, or else the one with
    its input and its reply text."""
    ids = list(item_ids)
    for exchange in found:
        if ids and exchange.holds_any(ids):
            return exchange
    for exchange in found:
        if user_text is not None and exchange.user.text == user_text and exchange.reply_text == reply_text:
            return exchange
    return None


def unanswered_copies(
    found: list[Exchange],
    user_text: str,
    last_reply_ids: list[str] | None,
    last_reply_text: str | None,
    keep: Exchange | None = None,
) -> list[Exchange]:
    """The exchanges with `user_text` newer than the last reply the user received, except
    `keep` (the batch's own). The last reply is recognised by its item ids when they are on
    the page, by its text when its ids were not recorded."""
    ids_on_page = bool(last_reply_ids) and any(e.holds_any(last_reply_ids or []) for e in found)
    copies: list[Exchange] = []
    for exchange in found:
        if ids_on_page and exchange.holds_any(last_reply_ids or []):
            break
        if not last_reply_ids and last_reply_text is not None and exchange.reply_text == last_reply_text:
            break
        if exchange.user.text == user_text and exchange != keep:
            copies.append(exchange)
    return copies
