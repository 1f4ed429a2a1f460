"""Two things moto's Step Functions interpreter redoes on every run, done once in the moto
process (infra/local/moto_process.py). Neither changes what the interpreter does; under
load they were a third of that process's time (docs/decisions.md):

- It builds a new boto3 client for every task it runs (`boto_client_for`): the same client,
  for a region and a service, serves them all (boto3 clients are thread-safe).
- It parses the definition with ANTLR at every execution's start: the parse tree of a
  definition is kept, and each execution still gets program components of its own."""

from __future__ import annotations

import sys
import threading
from functools import cache
from typing import Any


def install() -> None:
    _share_boto_clients()
    _keep_parse_trees()


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
