"""What moto redoes on every run, task or request, done once in the moto process
(infra/local/moto_process.py). None of it changes what moto answers; under load it was a
third of that process's time (docs/CHANGELOG.md, "The local stack stops redoing work per run
and per call", and the two local DynamoDB entries after it):

- The Step Functions interpreter builds a new boto3 client for every task it runs
  (`boto_client_for`): one client, for a region and a service, serves them all (boto3
  clients are thread-safe).
- It parses the definition with ANTLR at every execution's start: the parse tree of a
  definition is kept, and each execution still gets program components of its own.
- It compiles each JSONPath (a new PLY parser each time) whenever a state reads one: each
  path is compiled once (a compiled path is not changed by `find`).
- The server lists moto's package folders on disk for every request, holding the lock
  every request takes: once.
- DynamoDB's TransactWriteItems deep-copies every table it writes to, to put it back if
  the transaction is cancelled: a cost that grows with the table (the usage counters gain
  items every hour, for every sender). The items the transaction names are copied instead,
  and put back. moto's DynamoDB requests are serialized (infra/local/moto_process.py), so
  nothing else runs while one transaction does.
- A Query on a table (not an index) reads, and sorts, every item of the table to keep those
  of one partition: it is given that partition's items alone (in the same order), so that
  its cost no longer grows with the table.
- It serializes every DynamoDB answer by walking the operation's output shape, attribute by
  attribute. An item operation's answer is DynamoDB JSON already, built of dicts, lists and
  strings: it is written with json.dumps (anything else still takes moto's way).
- It parses an UpdateItem's expression on every request (a fifth of its DynamoDB time under
  load): each expression is parsed once, since the validators deep-copy the tree before they
  fill in the request's names and values; one that does not parse raises every time.
- It lists a response class's methods (inspect.getmembers) on every request to find the
  action: once per class."""

from __future__ import annotations

import copy
import json
import sys
import threading
import types
from functools import cache, lru_cache
from typing import Any


def install() -> None:
    _share_boto_clients()
    _keep_parse_trees()
    _compile_json_paths_once()
    _list_moto_modules_once()
    _back_up_transactions_by_item()
    _write_item_answers_as_json()
    _query_one_partition()
    _parse_update_expressions_once()
    _list_actions_once()


def _share_boto_clients() -> None:
    from moto.stepfunctions.parser.asl.utils import boto_client

    original = boto_client.boto_client_for

    @cache  # moto's builds its client from the region and the service alone (not the credentials)
    def client(region: str, service: str) -> Any:
        return original(region, service)

    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        return client(region, service)

    boto_client.boto_client_for = boto_client_for
    # Modules imported from now on take this one; those already imported hold the original.
    for module in list(sys.modules.values()):
        if getattr(module, "boto_client_for", None) is original:
            module.boto_client_for = boto_client_for  # type: ignore[attr-defined]


def _keep_parse_trees() -> None:
    from moto.stepfunctions.parser.asl.parse import asl_parser
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    original = asl_parser.AmazonStateLanguageParser.parse
    trees: dict[str, Any] = {}
    lock = threading.Lock()

    def parse(definition: str) -> tuple[Any, Any]:
        with lock:
            tree = trees.get(definition)
        if tree is None:
            program, tree = original(definition)  # raises on a definition that does not parse
            with lock:
                trees[definition] = tree
            return program, tree
        return Preprocessor().visit(tree), tree

    asl_parser.AmazonStateLanguageParser.parse = staticmethod(parse)  # type: ignore[method-assign]


def _compile_json_paths_once() -> None:
    from moto.stepfunctions.parser.asl.component.common.path import result_path
    from moto.stepfunctions.parser.asl.utils import json_path

    json_path.parse = cache(json_path.parse)  # type: ignore[attr-defined]
    result_path.parse = cache(result_path.parse)  # type: ignore[attr-defined]


def _list_moto_modules_once() -> None:
    from moto import backends

    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules


def _back_up_transactions_by_item() -> None:
    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    original = models.DynamoDBBackend.transact_write_items

    def not_tables(value: Any, memo: Any = None) -> Any:  # moto's rollback copy: the table itself
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    def transact_write_items(backend: Any, transact_items: list[dict[str, Any]]) -> None:
        try:
            before = [_item_before(backend, item) for item in transact_items]
        except Exception:  # a malformed transaction: moto's own answer, as moto would do it
            return original(backend, transact_items)
        models.copy = types.SimpleNamespace(deepcopy=not_tables)  # type: ignore[assignment]
        try:
            return original(backend, transact_items)
        except Exception:
            for table, hash_value, range_value, item in reversed([b for b in before if b]):
                _put_back(table, hash_value, range_value, item)
            raise
        finally:
            models.copy = copy

    setattr(models.DynamoDBBackend, "transact_write_items", transact_write_items)  # noqa: B010


def _item_before(backend: Any, transact_item: dict[str, Any]) -> tuple[Any, Any, Any, Any] | None:
    """(table, hash key, range key, a copy of the item or None) for one item of a transaction."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    _, operation = next(iter(transact_item.items()))
    table = backend.tables.get(operation.get("TableName"))
    if table is None:
        return None  # moto's own error for it
    key = operation.get("Key") or operation["Item"]
    hash_value = DynamoType(key[table.hash_key_attr])
    range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
    return table, hash_value, range_value, copy.deepcopy(table.get_item(hash_value, range_value))


def _put_back(table: Any, hash_value: Any, range_value: Any, item: Any) -> None:
    """An item as it was before a cancelled transaction (None: there was none)."""
    if item is None:
        if table.get_item(hash_value, range_value) is not None:
            table.delete_item(hash_value, range_value)
    elif range_value is None:
        table.items[hash_value] = item
    else:
        table.items[hash_value][range_value] = item


class _NotPlain(Exception):
    """A value json.dumps would not write as moto's serializer does."""


def _plain(value: Any) -> Any:
    """`value` as JSON would carry it, members with no value left out (as moto's serializer
    leaves them out); _NotPlain for anything but dicts, lists, strings, numbers and booleans."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool):
        return value
    raise _NotPlain(type(value).__name__)


def _write_item_answers_as_json() -> None:
    from moto.dynamodb.responses import DynamoResult

    original = DynamoResult.execute_result

    def execute_result(result: Any, context: Any) -> Any:
        return item_answer_as_json(result.result, context) or original(result, context)

    setattr(DynamoResult, "execute_result", execute_result)  # noqa: B010


def item_answer_as_json(result: Any, context: Any) -> tuple[int, dict[str, str], str] | None:
    """(status, headers, body) of a DynamoDB item operation's answer, written with
    json.dumps as moto's serializer would write it; None if it holds anything but plain
    JSON values."""
    try:
        body = json.dumps(_plain(result))
    except _NotPlain:
        return None
    version = context.service_model.metadata.get("jsonVersion", "1.0")
    status = context.operation_model.http.get("responseCode", 200)
    return status, {"Content-Type": f"application/x-amz-json-{version}"}, body


def _query_one_partition() -> None:
    from moto.dynamodb.models.table import Table

    original = Table.query

    def query(table: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if index_name or hash_key is None or "all_items" in vars(table):
            return original(table, hash_key, *args, **kwargs)
        partition = table.items.get(hash_key)
        if partition is None:
            items = []
        elif table.range_key_attr:
            items = list(partition.values())
        else:
            items = [partition]
        in_order = sorted(items, key=lambda x: (x.hash_key, x.range_key) if x.range_key else x.hash_key)
        table.all_items = lambda: in_order  # what moto's Query reads; requests are serialized
        try:
            return original(table, hash_key, *args, **kwargs)
        finally:
            del table.all_items

    setattr(Table, "query", query)  # noqa: B010


def _parse_update_expressions_once() -> None:
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser

    # Bound to the class (no subclass calls it); the expressions are the code's, a few dozen.
    parse = lru_cache(maxsize=1024)(UpdateExpressionParser.make)
    UpdateExpressionParser.make = staticmethod(parse)  # type: ignore[method-assign,assignment]


def _list_actions_once() -> None:
    from moto.core import responses

    responses.method_names_from_class = cache(responses.method_names_from_class)
