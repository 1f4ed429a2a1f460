"""A batch's media share a byte budget (MEDIA_MAX_BATCH_BYTES) that each fetch reserves from
before it reads: the whole file when its length is announced, else as the download's
running total grows; a failed read gives its bytes back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from functions.answer import twilio_media
from functions.answer.twilio_media import ByteBudget, MediaUnavailable

CHUNK = 1000


class Streamed:
    """A streamed HTTP response: the chunks it hands out are counted as they are read."""

    def __init__(self, size: int, announced: bool) -> None:
        self.status_code, self.size = 200, size
        self.headers = {"Content-Type": "image/jpeg", **({"Content-Length": str(size)} if announced else {})}
        self.read = 0

    def iter_content(self, chunk_size: int) -> Iterator[bytes]:
        while self.read < self.size:
            chunk = b"x" * min(CHUNK, self.size - self.read)
            self.read += len(chunk)
            yield chunk


def _read(response: Streamed, budget: ByteBudget, max_bytes: int = 1_000_000) -> twilio_media.Media:
    return twilio_media._read(response, max_bytes, float("inf"), budget)  # type: ignore[arg-type]


def test_an_announced_file_is_reserved_whole_before_a_byte_is_read():
    budget = ByteBudget(5 * CHUNK)
    response = Streamed(6 * CHUNK, announced=True)

    with pytest.raises(MediaUnavailable, match="batch's media size limit"):
        _read(response, budget)

    assert (response.read, budget.left) == (0, 5 * CHUNK)


def test_an_unannounced_file_is_reserved_as_it_is_read_and_stops_at_the_budget():
    budget = ByteBudget(5 * CHUNK + 10)
    response = Streamed(20 * CHUNK, announced=False)

    with pytest.raises(MediaUnavailable, match="batch's media size limit"):
        _read(response, budget)

    assert response.read == 6 * CHUNK  # the chunk that passed the budget, not one more
    assert budget.left == 5 * CHUNK + 10  # given back: nothing of it is kept


def test_what_is_read_stays_reserved_for_the_batch():
    budget = ByteBudget(5 * CHUNK)
    for announced in (True, False):
        fetched = _read(Streamed(2 * CHUNK, announced), budget)
        assert len(fetched.data) == 2 * CHUNK

    assert budget.left == CHUNK
