"""The Tenants table: the Twilio accounts the service answers for and the numbers each owns.

Two kinds of item, each read with one GetItem:
- `account#<AccountSid>`: a registered tenant, with the set of its numbers (what the
  webhook needs: "is this account a tenant, and is `To` one of its numbers?");
- `number#<address>`: the one tenant that owns a number (so a number is never owned twice),
  and the rate its sender sends at, where it has one of its own (`sender_mps`, messages a
  second; functions/delivery/sender_pace.py): Send Reply reads it through `sender_mps`,
  cached as the webhook caches tenants.
They change together, in transactions, so that a number is never half moved.

The webhook reads tenants through `find`, cached in memory: a known tenant for
TENANT_CACHE_SECONDS, an unknown AccountSid for UNKNOWN_TENANT_CACHE_SECONDS, so that
neither a busy tenant nor a stranger costs a read per request. The other functions take
the table's name, for the operator's CLI (infra/tenants.py), which has no settings."""

from __future__ import annotations

import time
from typing import Any

from botocore.exceptions import ClientError

from functions.delivery.settings import MAX_SENDER_MPS
from functions.personal_data.settings import MAX_RETENTION_DAYS
from functions.storage import dynamo, expressions
from functions.storage.models import Tenant
from functions.storage.settings import TableSettings
from functions.tenancy.settings import TenancySettings

ACCOUNT = "account#"
NUMBER = "number#"

_cache: dict[str, tuple[float, Tenant | None]] = {}
_CACHE_LIMIT = 10_000
_rates: dict[str, tuple[float, float | None]] = {}  # number → (until, its sender's own rate)
_retentions: dict[str, tuple[float, dict[str, int]]] = {}  # "" → (until, retention_overrides())


class TenantChangeRefused(Exception):
    """A change that would break the table's rules (a number owned by another tenant, a
    tenant that does not exist, a number its supposed owner does not own)."""


def _table(name: str | None) -> Any:
    return dynamo.table(name or TableSettings.get().tenants_table)


def find(account_sid: str) -> Tenant | None:
    """The registered tenant with this AccountSid, or None; cached (see above)."""
    now = time.monotonic()
    cached = _cache.get(account_sid)
    if cached and cached[0] > now:
        return cached[1]
    tenant = get(account_sid, consistent=False)
    settings = TenancySettings.get()
    ttl = settings.tenant_cache_seconds if tenant else settings.unknown_tenant_cache_seconds
    if len(_cache) >= _CACHE_LIMIT:  # a flood of invented AccountSids must not grow it forever
        _cache.clear()
    _cache[account_sid] = (now + ttl, tenant)
    return tenant


def forget(*account_sids: str) -> None:
    """Drop cached tenants (all of them when none is named, and the numbers' rates): after a
    change here, and in tests, in place of waiting for the cache to expire."""
    if not account_sids:
        _cache.clear()
        _rates.clear()
        _retentions.clear()
    for account_sid in account_sids:
        _cache.pop(account_sid, None)


def get(account_sid: str, table: str | None = None, consistent: bool = True) -> Tenant | None:
    item = _table(table).get_item(Key={"tenant_key": ACCOUNT + account_sid}, ConsistentRead=consistent)
    return _tenant(item["Item"]) if "Item" in item else None


def owner_of(address: str, table: str | None = None) -> str | None:
    """The AccountSid of the tenant that owns this number, or None."""
    item = _table(table).get_item(Key={"tenant_key": NUMBER + address}, ConsistentRead=True).get("Item")
    return str(item["account_sid"]) if item else None


def sender_mps(address: str) -> float | None:
    """The rate (messages a second) the number's sender sends at, if the number has one of its
    own (`infra.tenants sender-mps`), else None; cached TENANT_CACHE_SECONDS, so that a busy
    number costs no read per reply (a change reaches a warm function within that time)."""
    now = time.monotonic()
    cached = _rates.get(address)
    if cached and cached[0] > now:
        return cached[1]
    rate = own_sender_mps(address, consistent=False)
    if len(_rates) >= _CACHE_LIMIT:
        _rates.clear()
    _rates[address] = (now + TenancySettings.get().tenant_cache_seconds, rate)
    return rate


def own_sender_mps(address: str, table: str | None = None, consistent: bool = True) -> float | None:
    """The number's own sender rate, read now (None: it has none)."""
    key = {"tenant_key": NUMBER + address}
    item = _table(table).get_item(Key=key, ConsistentRead=consistent).get("Item") or {}
    return float(item["sender_mps"]) if item.get("sender_mps") is not None else None


def set_sender_mps(address: str, mps: float | None, table: str | None = None) -> None:
    """Give a number's sender a rate of its own (messages a second; 0: not paced), or drop it
    (None: the deployment's TWILIO_SENDER_MPS). Refused for a number no tenant owns."""
    request: dict[str, Any] = {"Key": {"tenant_key": NUMBER + address}}
    if mps is None:
        request["UpdateExpression"] = expressions.DROP_SENDER_MPS
    else:
        if not 0 <= mps <= MAX_SENDER_MPS:
            raise TenantChangeRefused(f"a sender's rate is from 0 to {MAX_SENDER_MPS} messages a second")
        request["UpdateExpression"] = expressions.SET_SENDER_MPS
        request["ExpressionAttributeValues"] = {":mps": dynamo.to_dynamo(float(mps))}
    try:
        _table(table).update_item(ConditionExpression=expressions.IS_A_TENANT, **request)
    except ClientError as error:
        if dynamo.condition_failed(error):
            raise TenantChangeRefused(f"{address} belongs to no tenant; add it with `add`") from error
        raise
    _rates.pop(address, None)


def set_turn_text_retention(account_sid: str, days: int | None, table: str | None = None) -> None:
    """Give a tenant its own turn-text retention, in days (0: kept until forgotten), or drop
    it (None: the deployment's TURN_TEXT_RETENTION_DAYS). Refused for an account that is not
    a tenant."""
    request: dict[str, Any] = {"Key": {"tenant_key": ACCOUNT + account_sid}}
    if days is None:
        request["UpdateExpression"] = expressions.DROP_TURN_TEXT_RETENTION
    else:
        if not 0 <= days <= MAX_RETENTION_DAYS:
            raise TenantChangeRefused(f"a retention is from 0 to {MAX_RETENTION_DAYS} days")
        request["UpdateExpression"] = expressions.SET_TURN_TEXT_RETENTION
        request["ExpressionAttributeValues"] = {":days": days}
    try:
        _table(table).update_item(ConditionExpression=expressions.IS_A_TENANT, **request)
    except ClientError as error:
        if dynamo.condition_failed(error):
            raise TenantChangeRefused(f"{account_sid} is not a tenant") from error
        raise
    _retentions.clear()


def retention_overrides() -> dict[str, int]:
    """Each tenant's own turn-text retention (days), by AccountSid, for the tenants that have
    one; read with one Scan of the (small) table, cached TENANT_CACHE_SECONDS, so that the
    reconciler's sweep costs no read a minute (a change reaches a warm function within that
    time)."""
    now = time.monotonic()
    cached = _retentions.get("")
    if cached and cached[0] > now:
        return cached[1]
    own = {t.account_sid: t.turn_text_retention_days for t in all_tenants()}
    overrides = {sid: days for sid, days in own.items() if days is not None}
    _retentions[""] = (now + TenancySettings.get().tenant_cache_seconds, overrides)
    return overrides


def all_tenants(table: str | None = None) -> list[Tenant]:
    items = dynamo.all_items(
        _table(table).scan,
        FilterExpression=expressions.TENANT_ACCOUNTS,
        ExpressionAttributeValues={":account": ACCOUNT},
    )
    return sorted((_tenant(i) for i in items), key=lambda t: t.account_sid)


def register(account_sid: str, numbers: list[str], now: str, table: str | None = None) -> None:
    """Register a tenant, or add numbers to one; refused (nothing changes) if another
    tenant owns one of the numbers."""
    name = table or TableSettings.get().tenants_table
    account: dict[str, Any] = {
        "TableName": name,
        "Key": {"tenant_key": ACCOUNT + account_sid},
        "UpdateExpression": expressions.REGISTER_ACCOUNT + (" " + expressions.ADD_NUMBERS if numbers else ""),
        "ExpressionAttributeValues": {":sid": account_sid, ":now": now}
        | ({":numbers": set(numbers)} if numbers else {}),
    }
    owned = [  # an Update, not a Put: a number added again keeps its sender's rate
        {
            "Update": {
                "TableName": name,
                "Key": {"tenant_key": NUMBER + number},
                "UpdateExpression": expressions.OWN_NUMBER,
                "ConditionExpression": expressions.NUMBER_IS_FREE_OR_OURS,
                "ExpressionAttributeValues": {":sid": account_sid, ":address": number},
            }
        }
        for number in numbers
    ]
    _transact([{"Update": account}, *owned], f"a number is owned by another tenant: {numbers}")
    forget(account_sid)


def set_token_version(account_sid: str, version: str, table: str | None = None) -> None:
    """Name the version of the tenant's credentials that its secret now holds (written after
    the secret): a webhook that holds another reads the secret again (secrets.py)."""
    try:
        _table(table).update_item(
            Key={"tenant_key": ACCOUNT + account_sid},
            UpdateExpression=expressions.SET_TOKEN_VERSION,
            ConditionExpression=expressions.IS_A_TENANT,
            ExpressionAttributeValues={":version": version},
        )
    except ClientError as error:
        if dynamo.condition_failed(error):
            raise TenantChangeRefused(f"{account_sid} is not a tenant") from error
        raise
    forget(account_sid)


def set_auto_create(account_sid: str, on: bool, table: str | None = None) -> None:
    """Whether the webhook creates a conversation for an unknown sender of the tenant's
    numbers, whatever the deployment's AUTO_CREATE_CONVERSATIONS (on the tenant's item,
    which the webhook reads anyway: no read more per message)."""
    try:
        _table(table).update_item(
            Key={"tenant_key": ACCOUNT + account_sid},
            UpdateExpression=expressions.SET_AUTO_CREATE,
            ConditionExpression=expressions.IS_A_TENANT,
            ExpressionAttributeValues={":on": on},
        )
    except ClientError as error:
        if dynamo.condition_failed(error):
            raise TenantChangeRefused(f"{account_sid} is not a tenant") from error
        raise
    forget(account_sid)


def add_vector_store(account_sid: str, store_id: str, table: str | None = None) -> None:
    """Record a vector store made for the tenant (its profiles may name it, and no other's)."""
    tenant = get(account_sid, table)
    if tenant is None:
        raise TenantChangeRefused(f"{account_sid} is not a tenant")
    if store_id in tenant.vector_store_ids:
        return
    _table(table).update_item(
        Key={"tenant_key": ACCOUNT + account_sid},
        UpdateExpression=expressions.ADD_VECTOR_STORE,
        ConditionExpression=expressions.IS_A_TENANT,
        ExpressionAttributeValues={":none": [], ":store": [store_id]},
    )
    forget(account_sid)


def remove(account_sid: str, numbers: list[str] | None = None, table: str | None = None) -> list[str]:
    """Remove some of a tenant's numbers, or (no numbers named) the tenant and all its
    numbers. The numbers removed."""
    name = table or TableSettings.get().tenants_table
    tenant = get(account_sid, name)
    if tenant is None:
        raise TenantChangeRefused(f"{account_sid} is not a tenant")
    dropped = tenant.numbers if numbers is None else [n for n in numbers if n in tenant.numbers]
    items: list[dict[str, Any]] = [
        {
            "Delete": {
                "TableName": name,
                "Key": {"tenant_key": NUMBER + number},
                "ConditionExpression": expressions.NUMBER_IS_OURS,
                "ExpressionAttributeValues": {":sid": account_sid},
            }
        }
        for number in dropped
    ]
    key = {"tenant_key": ACCOUNT + account_sid}
    if numbers is None:
        items.append({"Delete": {"TableName": name, "Key": key}})
    elif dropped:
        items.append(
            {
                "Update": {
                    "TableName": name,
                    "Key": key,
                    "UpdateExpression": expressions.DROP_NUMBERS,
                    "ExpressionAttributeValues": {":numbers": set(dropped)},
                }
            }
        )
    if items:
        _transact(items, f"{account_sid} changed meanwhile; try again")
    forget(account_sid)
    return dropped


def move_number(address: str, to_account_sid: str, table: str | None = None) -> str:
    """Move a number to another tenant in one transaction: its owner item, the old
    tenant's set and the new tenant's set change together or not at all. The old owner."""
    name = table or TableSettings.get().tenants_table
    from_account_sid = owner_of(address, name)
    if from_account_sid is None:
        raise TenantChangeRefused(f"{address} belongs to no tenant; add it with `add`")
    if from_account_sid == to_account_sid:
        return from_account_sid
    one = {":numbers": {address}}
    _transact(
        [
            {
                "Update": {
                    "TableName": name,
                    "Key": {"tenant_key": NUMBER + address},
                    "UpdateExpression": expressions.GIVE_NUMBER,
                    "ConditionExpression": expressions.NUMBER_IS_THEIRS,
                    "ExpressionAttributeValues": {":to": to_account_sid, ":from": from_account_sid},
                }
            },
            {
                "Update": {
                    "TableName": name,
                    "Key": {"tenant_key": ACCOUNT + from_account_sid},
                    "UpdateExpression": expressions.DROP_NUMBERS,
                    "ExpressionAttributeValues": one,
                }
            },
            {
                "Update": {
                    "TableName": name,
                    "Key": {"tenant_key": ACCOUNT + to_account_sid},
                    "UpdateExpression": expressions.ADD_NUMBERS,
                    "ConditionExpression": expressions.IS_A_TENANT,
                    "ExpressionAttributeValues": one,
                }
            },
        ],
        f"{to_account_sid} is not a tenant, or {address} moved meanwhile",
    )
    forget(from_account_sid, to_account_sid)
    return from_account_sid


def _transact(items: list[dict[str, Any]], refusal: str) -> None:
    try:
        dynamo.client().transact_write_items(TransactItems=items)
    except ClientError as error:
        if error.response["Error"]["Code"] == "TransactionCanceledException":
            raise TenantChangeRefused(refusal) from error
        raise


def _days(value: Any) -> int | None:
    return None if value is None else int(value)


def _tenant(item: dict[str, Any]) -> Tenant:
    return Tenant(
        account_sid=str(item["account_sid"]),
        numbers=sorted(item.get("numbers") or ()),
        created_at=str(item.get("created_at", "")),
        token_version=str(item.get("token_version", "")),
        auto_create_conversations=bool(item.get("auto_create_conversations", False)),
        vector_store_ids=[str(store) for store in item.get("vector_store_ids") or ()],
        turn_text_retention_days=_days(item.get("turn_text_retention_days")),
    )
