"""What moto redoes on every run, task or request, done once in the moto process
(infra/local/moto_process.py). None of it changes what moto answers; under load it was a
third of that process's time (docs/decisions.md):

- The Step Functions interpreter builds a new boto3 client for every task it runs
  (`boto_client_for`): one client, for a region and a service, serves them all (boto3
  clients are thread-safe).
- It parses the definition with ANTLR at every execution's start: the parse tree of a
  definition is kept, and each execution still gets program components of its own.
- It compiles each JSONPath (a new PLY parser each time) whenever a state reads one: each
  path is compiled once (a compiled path is not changed by `find`).
- The server lists moto's package folders on disk for every request, holding the lock
  every request takes: once."""

from __future__ import annotations

import sys
import threading
from functools import cache
from typing import Any


def install() -> None:
    _share_boto_clients()
    _keep_parse_trees()
    _compile_json_paths_once()
    _list_moto_modules_once()


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
