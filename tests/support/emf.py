"""The metrics the functions print, read back: Embedded Metric Format records."""

from __future__ import annotations

import json
from typing import Any


def emf_records(printed: str) -> list[dict[str, Any]]:
    """Every EMF record printed. The functions run on several threads of this process, so
    two records may share a line (one printed while the other's newline was pending)."""
    decoder, records = json.JSONDecoder(), []
    for line in printed.splitlines():
        at = line.find('{"_aws"')
        while at != -1:
            record, end = decoder.raw_decode(line, at)
            records.append(record)
            at = line.find('{"_aws"', end)
    return records
