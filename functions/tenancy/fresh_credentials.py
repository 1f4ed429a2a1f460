"""A vendor call made once more with credentials read again when the vendor refused those
we hold (401: rotated or revoked since they were cached). Refused again, or the same ones
read: the refusal is counted (alarmed) and raised, and the batch is kept
(functions/batching/rules/failures.py). A vendor's 401 cannot be forged, so the read is not
rate-bounded; a refused run is not retried by the state machine, so it costs one read per run."""

from __future__ import annotations

from collections.abc import Callable

from functions.observability import count, logger


def with_fresh_credentials[C, T](
    read: Callable[[bool], C], use: Callable[[C], T], refused: type[Exception], vendor: str
) -> T:
    """`use(read(False))`; if the vendor refuses (`refused`, whose name is also the metric),
    `use(read(True))` once, unless that reads the same credentials."""
    held = read(False)
    try:
        return use(held)
    except refused:
        fresh = read(True)
        if fresh == held:
            count(refused.__name__)
            logger.error(f"{vendor} refused the credentials, and their secret holds no others")
            raise
    try:
        return use(fresh)
    except refused:
        count(refused.__name__)
        logger.error(f"{vendor} refused the credentials, also as their secret holds them now")
        raise
