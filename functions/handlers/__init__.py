"""The Lambda entry points. The AWS SDK is imported first: every function loads it anyway,
and measured by `make bench`, letting it load before anything else takes 20 to 40 ms off
a function's cold import here (docs/adr/0025-cold-starts-what-a-function-imports.md).

The OpenAI SDK imports its aiohttp transport whenever aiohttp is installed (Twilio's SDK
requires it): about 90 ms of Generate Reply's cold import, for an asynchronous client we
never use. A None in `sys.modules` makes that optional import fail as the SDK expects when
aiohttp is absent (`openai/_base_client.py` catches the ImportError)."""

import sys

import boto3  # noqa: F401

sys.modules.setdefault("openai._vendor.httpx_aiohttp", None)  # type: ignore[arg-type]  # None: blocked
