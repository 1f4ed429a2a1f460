"""The Lambda entry points. The AWS SDK is imported first: every function loads it anyway,
and measured by `make bench`, letting it load before anything else takes 20 to 40 ms off
a function's cold import here (docs/decisions.md, "Cold starts")."""

import boto3  # noqa: F401
