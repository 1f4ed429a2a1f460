"""Open a conversation, hand it off to a person and back, give a person their data or forget
them: locally or on AWS (same code; only the endpoint differs).

    python -m infra.conversations pause ADDRESS [--tenant SID] [--for 2h]
    python -m infra.conversations resume ADDRESS [--tenant SID]
    python -m infra.conversations show ADDRESS [--tenant SID] [--bodies]
    python -m infra.conversations create ADDRESS [--tenant SID] [--number OURS]
    python -m infra.conversations export ADDRESS [--tenant SID]
    python -m infra.conversations forget ADDRESS [--tenant SID]

ADDRESS is the person's address as Twilio sends it (`whatsapp:+15551234567`, or
`+15551234567` on SMS) or a conversation id; `--tenant` (an AccountSid) limits the search to
that tenant's conversations (needed when the address writes to more than one). While paused,
bursts are staged, batched and recorded, but get no AI call and no reply; each is announced
as `batch.handed_off` (docs/how-it-works.md). `--for` resumes by itself after that long;
without it the pause holds until `resume`. `show` prints the conversation's state and its
person-written turns (their texts only with `--bodies`: personal data). A helpdesk does the
same with events on the bus (conversation.pause, conversation.resume, conversation.reply).

`create` opens the tenant's conversation with ADDRESS (an address, not an id), exactly as
the webhook's auto-create would (functions/tenancy/opening.py), so that a deployment
with AUTO_CREATE_CONVERSATIONS off answers that person from their next message on. OURS is
the tenant's number the person writes to; `--tenant` and `--number` may be left out when
only one tenant, or one of the tenant's numbers, is on the address's channel. A number the
tenant does not own is refused; a conversation that exists is left as it is. To answer every
unknown sender of one tenant instead: `python -m infra.tenants auto-create SID on`.

`export` prints, as JSON on standard output, every conversation of the person's address with
the tenant's numbers (done ones too) and their turns: what they wrote, what they were
answered, when, and what Twilio reported of each message sent, from our tables alone.
`forget` erases the person: their texts and media in our tables, at OpenAI (their OpenAI
conversation's items, the conversation, the stored responses) and at Twilio (every message
they sent or were sent, with its media), with the tenant's key and credentials; their next
message opens a new conversation, without history. It refuses a conversation a run holds
(processing lock, open batch window). A forget cut short (a vendor's error, a message Twilio
is not done with) says what is left and exits 1: the same command finishes it. What it cannot
reach: docs/personal-data.md. Both search every tenant's numbers for the address (or take a
conversation id); `--tenant` is needed when the address writes to more than one tenant.
Against the local stack, set TWILIO_API_BASE_URL and OPENAI_BASE_URL to the stand-ins'
addresses (`make local` prints them) or forget reaches the real vendors.

Names: as `python -m infra.runs` finds them (`--stack NAME`, STACK_NAME, AWS_ENDPOINT_URL
for the local stack: infra/stack_lookup.py)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from infra.stack_lookup import FUNCTION_SETTINGS, add_stack_option, chosen_stack, one_line_errors, use_stack

if TYPE_CHECKING:
    from functions.storage.models import Conversation

# The names of the secrets `forget` reads: the tenant's Twilio credentials, the OpenAI keys.
VENDOR_SECRETS = ("TWILIO_TENANT_SECRET_PREFIX", "OPENAI_TENANT_SECRET_PREFIX", "OPENAI_SECRET_NAME")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.conversations", description=__doc__.split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    subcommands = []
    for name, help_text in (
        ("pause", "hand the conversation off to a person: no AI call, no reply"),
        ("resume", "the assistant answers the conversation again"),
        ("show", "the conversation's state and its person-written turns"),
    ):
        command = commands.add_parser(name, help=help_text)
        command.add_argument("address", help="the person's address (whatsapp:+1555...) or a conversation id")
        command.add_argument("--tenant", help="the tenant's AccountSid (AC...)")
        subcommands.append(command)
    subcommands[0].add_argument("--for", dest="span", help="resume by itself after this long: 30m, 2h, 1d")
    subcommands[2].add_argument("--bodies", action="store_true", help="also print the texts (personal data)")
    create = commands.add_parser("create", help="open the conversation, as the webhook's auto-create would")
    create.add_argument(
        "address", help="the person's address as Twilio sends it: whatsapp:+1555..., +1555..."
    )
    create.add_argument("--tenant", help="the tenant's AccountSid (AC...)")
    create.add_argument("--number", help="the tenant's number the person writes to (ours)")
    subcommands.append(create)
    for name, help_text in (
        ("export", "the person's turns, as JSON on standard output (personal data)"),
        ("forget", "erase the person here, at OpenAI and at Twilio; their next message starts anew"),
    ):
        command = commands.add_parser(name, help=help_text)
        command.add_argument("address", help="the person's address (whatsapp:+1555...) or a conversation id")
        command.add_argument("--tenant", help="the tenant's AccountSid (AC...)")
        subcommands.append(command)
    add_stack_option(parser, *subcommands)
    args = parser.parse_args(argv)
    return one_line_errors("infra.conversations", lambda: _command(args))


def _command(args: argparse.Namespace) -> int:
    from functions.handoff.rules import pause as handoff_rules

    try:
        seconds = handoff_rules.span(args.span).total_seconds() if getattr(args, "span", None) else None
    except ValueError as error:
        print(f"infra.conversations: {error}", file=sys.stderr)
        return 2
    if args.command == "create":  # the key of conversation ids too
        use_stack(chosen_stack(args.stack), (*FUNCTION_SETTINGS, "CONVERSATION_ID_KEY_SECRET_NAME"))
        return _create(args.address, args.tenant, args.number)
    if args.command in ("export", "forget"):  # forget: the secrets' names too
        use_stack(
            chosen_stack(args.stack),
            (*FUNCTION_SETTINGS, *(VENDOR_SECRETS if args.command == "forget" else ())),
        )
        return _personal_data(args.command, args.address, args.tenant)
    use_stack(chosen_stack(args.stack), FUNCTION_SETTINGS)
    from functions.handoff import pausing  # reads the functions' settings

    found = pausing.find_conversations(args.address, args.tenant)
    if len(found) != 1:
        which = ", ".join(f"{c.conversation_id} (tenant {c.tenant_account_sid})" for c in found)
        problem = (
            f"several conversations: {which}; name one, or --tenant" if found else "no open conversation"
        )
        print(f"infra.conversations: {args.address}: {problem}", file=sys.stderr)
        return 1
    conversation_id = found[0].conversation_id
    if args.command == "pause":
        until = pausing.pause(conversation_id, handoff_rules.BY_OPERATOR, seconds)
        print(f"Paused {conversation_id} until {until or 'resumed'}: its bursts wait for a person.")
    elif args.command == "resume":
        pausing.resume(conversation_id, handoff_rules.BY_OPERATOR)
        print(f"Resumed {conversation_id}: the assistant answers it again.")
    else:
        print("\n".join(shown(conversation_id, args.bodies)))
    return 0


def _personal_data(command: str, address: str, tenant: str | None) -> int:
    from functions.personal_data.export import conversations_of, export  # reads the functions' settings

    found = conversations_of(address, tenant)
    tenants = sorted({c.tenant_account_sid or "?" for c in found})
    if len(tenants) > 1:
        which = ", ".join(tenants)
        print(
            f"infra.conversations: {address}: conversations of several tenants ({which}): "
            "name one with --tenant",
            file=sys.stderr,
        )
        return 1
    if command == "export":
        if not found:
            print(f"infra.conversations: {address}: no conversation holds it", file=sys.stderr)
        print(json.dumps(export(address, found), indent=2, ensure_ascii=False))
        return 0
    if not found:
        print(f"Nothing holds {address}: nothing to forget (forgotten already, or never written to).")
        return 0
    return 0 if all([_forgotten(c) for c in found]) else 1


def _forgotten(conversation: Conversation) -> bool:
    """Forget one conversation, saying what was done and what is left; whether it is done."""
    from functions.personal_data import forgetting

    outcome = forgetting.forget(conversation)
    cid = outcome.conversation_id
    if outcome.busy is not None:
        print(
            f"infra.conversations: {cid}: not forgotten: {outcome.busy}; run forget again once it has ended",
            file=sys.stderr,
        )
        return False
    if done := ", ".join(f"{n} {what}" for what, n in outcome.done.items() if n):
        print(f"{cid}: deleted or erased {done}.")
    if outcome.finished:
        print(f"{cid}: forgotten.")
        return True
    left = ", ".join(f"{n} {what}" for what, n in outcome.left.items() if n)
    why = "; ".join(outcome.problems)
    print(
        f"infra.conversations: {cid}: left: {left} ({why}); run the same command again to finish",
        file=sys.stderr,
    )
    return False


def _create(address: str, tenant: str | None, number: str | None) -> int:
    from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

    from functions.tenancy import opening  # reads the functions' settings

    try:
        opened = opening.open_conversation(address, tenant, number)
    except (opening.NotOpened, GetParameterError) as error:  # the latter: the key of ids, unread
        print(f"infra.conversations: {error}", file=sys.stderr)
        return 1
    c = opened.conversation
    which = f"{c.conversation_id}: {c.user_address} with {c.our_address} (tenant {c.tenant_account_sid})"
    print(f"Created {which}." if opened.created else f"Exists {which}; nothing changed.")
    return 0


def shown(conversation_id: str, bodies: bool) -> list[str]:
    """The conversation's state, and its person-written turns, oldest first."""
    from functions import clock
    from functions.answer import turns
    from functions.handoff.rules import pause as handoff_rules
    from functions.tenancy import conversations

    conversation = conversations.require(conversation_id)
    paused = handoff_rules.is_paused(conversation, clock.now())
    state = (
        f"handed off to a person since {conversation.paused_at} by {conversation.paused_by}, "
        f"until {conversation.paused_until or 'resumed'}"
        if paused
        else "answered by the assistant"
    )
    lines = [
        f"Conversation {conversation.conversation_id} (tenant {conversation.tenant_account_sid})",
        f"  {conversation.channel.value}: {conversation.user_address} with {conversation.our_address}",
        f"  {state}",
        "",
        "Person-written turns:",
    ]
    written = [t for t in turns.list_of(conversation_id) if t.written_by == handoff_rules.PERSON]
    for turn in written:
        lines.append(
            f"  {turn.sent_at or turn.created_at}  {turn.status:<9} {len(turn.body):>5} chars  {turn.turn_id}"
        )
        lines += [f"      | {line}" for line in turn.body.splitlines()] if bodies else []
    return lines if written else [*lines, "  (none)"]


if __name__ == "__main__":
    sys.exit(main())
