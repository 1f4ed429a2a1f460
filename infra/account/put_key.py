"""`python -m infra.account --put-openai-key`: the deployment's OpenAI key, read from standard
input (typed at a prompt that does not echo it, on a terminal), put in the secret the
stack names in its output OpenAISecretName. Never from the command line (a shell's
history, `ps`), never printed. The one thing `infra.account` writes, and only when asked.

`aws secretsmanager put-secret-value --secret-id <OpenAISecretName> --secret-string
'{"api_key": "sk-..."}'` does the same and still works, but puts the key on the command
line: discouraged."""

from __future__ import annotations

import getpass
import json
import re
import sys

from botocore.exceptions import BotoCoreError, ClientError

from infra.account.model import Clients, Line, describe_stack, error_code

WHAT = "OpenAI key"
# What an OpenAI API key looks like: "sk-" and no white space (sk-proj-..., sk-svcacct-...).
_KEY = re.compile(r"sk-\S{8,}")


def read_key() -> str:
    if sys.stdin.isatty():
        return getpass.getpass("OpenAI API key (not echoed): ").strip()
    return sys.stdin.readline().strip()


def put_openai_key(clients: Clients, stack: str, key: str) -> Line:
    """Put `key` in `stack`'s OpenAI secret; the line says where, or why not (never the key)."""
    if not _KEY.fullmatch(key):
        return Line("FAIL", WHAT, "standard input holds no OpenAI key (sk-...): nothing put")
    try:
        name = _secret_name(clients, stack)
        if name is None:
            return Line(
                "FAIL", WHAT, f"{stack} is not deployed or has no output OpenAISecretName: deploy it first"
            )
        clients("secretsmanager").put_secret_value(SecretId=name, SecretString=json.dumps({"api_key": key}))
    except ClientError as error:
        return Line("FAIL", WHAT, f"not put ({error_code(error)}): nothing changed")
    except BotoCoreError as error:
        return Line("FAIL", WHAT, f"not put ({type(error).__name__}): nothing changed")
    return Line("ok", WHAT, f"put in {name}")


def _secret_name(clients: Clients, stack: str) -> str | None:
    described = describe_stack(clients, stack)
    outputs = {o["OutputKey"]: o["OutputValue"] for o in (described or {}).get("Outputs", [])}
    return outputs.get("OpenAISecretName")
