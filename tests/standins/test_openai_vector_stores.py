"""Files and vector stores in the OpenAI stand-in through the real `openai` SDK: objects in
OpenAI's shapes, indexing that answers `in_progress` first, files file search cannot take
ending `failed`, everything owned by the key's project (another project's key gets 404), and
the control listing that shows what was created (keys masked) and outlives a reset."""

from __future__ import annotations

import openai
import pytest
import requests

from tests.standins.conftest import OPENAI_KEY
from tests.support.waiting import wait_until

HOURS = b"Opening hours\n\nSunday opening hours are 10:00 to 16:00.\n\nWeekdays we open at 08:00."
OTHER_KEY = "other-project-openai-key"


def upload(ai: openai.OpenAI, name: str = "hours.md", data: bytes = HOURS, purpose: str = "assistants"):
    return ai.files.create(file=(name, data), purpose=purpose)  # type: ignore[arg-type]


def client(url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(api_key=key, base_url=url + "/v1", max_retries=0, timeout=3)


def control(url: str) -> dict:
    return requests.get(f"{url}/_control/vector_stores", timeout=3).json()


def test_a_file_is_uploaded_fetched_and_deleted_in_openai_shapes(ai, openai_standin):
    uploaded = upload(ai)

    assert uploaded.id.startswith("file-") and len(uploaded.id) == 27
    assert (uploaded.object, uploaded.bytes, uploaded.filename, uploaded.purpose) == (
        "file",
        len(HOURS),
        "hours.md",
        "assistants",
    )
    assert isinstance(uploaded.created_at, int)
    assert ai.files.retrieve(uploaded.id) == uploaded
    assert [f.id for f in ai.files.list(purpose="assistants")] == [uploaded.id]
    assert upload(ai, "notes.txt", b"x", purpose="user_data").purpose == "user_data"

    deleted = ai.files.delete(uploaded.id)

    assert (deleted.id, deleted.object, deleted.deleted) == (uploaded.id, "file", True)
    with pytest.raises(openai.NotFoundError) as gone:
        ai.files.retrieve(uploaded.id)
    assert gone.value.body == {
        "message": f"No such File object: {uploaded.id}",
        "type": "invalid_request_error",
        "param": "id",
        "code": None,
    }


def test_an_empty_file_or_an_unknown_purpose_is_refused_and_nothing_is_kept(ai, openai_standin):
    _, url = openai_standin
    with pytest.raises(openai.BadRequestError) as empty:
        upload(ai, data=b"")
    assert empty.value.body["message"] == "File is empty."
    with pytest.raises(openai.BadRequestError) as purpose:
        upload(ai, purpose="knowledge")
    assert purpose.value.body["param"] == "purpose" and purpose.value.body["code"] == "invalid_value"
    assert control(url)["files"] == []


def test_a_vector_store_indexes_its_files_in_progress_then_completed(ai, openai_standin):
    first, second = upload(ai), upload(ai, "faq.txt", b"Parking is free on Sundays.")

    store = ai.vector_stores.create(name="shop knowledge", metadata={"tenant": "AC1"}, file_ids=[first.id])

    assert store.id.startswith("vs_") and store.object == "vector_store"
    assert (store.name, store.metadata, store.status) == ("shop knowledge", {"tenant": "AC1"}, "in_progress")
    assert (store.file_counts.in_progress, store.file_counts.total) == (1, 1)
    fetched = ai.vector_stores.retrieve(store.id)
    assert fetched.status == "completed" and fetched.file_counts.completed == 1
    assert fetched.usage_bytes == len(HOURS)
    assert [s.id for s in ai.vector_stores.list()] == [store.id]

    added = ai.vector_stores.files.create(
        vector_store_id=store.id, file_id=second.id, attributes={"lang": "en"}
    )
    assert (added.id, added.object, added.vector_store_id, added.status) == (
        second.id,
        "vector_store.file",
        store.id,
        "in_progress",
    )
    polled = ai.vector_stores.files.create_and_poll(vector_store_id=store.id, file_id=second.id)
    assert polled.status == "completed" and polled.last_error is None and polled.attributes == {"lang": "en"}
    listed = ai.vector_stores.files.list(vector_store_id=store.id, order="asc")
    assert [(f.id, f.status) for f in listed] == [(first.id, "completed"), (second.id, "completed")]

    removed = ai.vector_stores.files.delete(first.id, vector_store_id=store.id)
    assert (removed.id, removed.object, removed.deleted) == (first.id, "vector_store.file.deleted", True)
    assert [f.id for f in ai.vector_stores.files.list(vector_store_id=store.id)] == [second.id]
    assert ai.files.retrieve(first.id).id == first.id  # the file itself stays

    renamed = ai.vector_stores.update(store.id, name="renamed")
    assert renamed.name == "renamed" and renamed.metadata == {"tenant": "AC1"}
    dropped = ai.vector_stores.delete(store.id)
    assert (dropped.id, dropped.object, dropped.deleted) == (store.id, "vector_store.deleted", True)
    with pytest.raises(openai.NotFoundError) as gone:
        ai.vector_stores.retrieve(store.id)
    assert gone.value.body == {
        "message": f"No vector store found with id '{store.id}'.",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }


def test_indexing_can_be_told_to_take_longer(ai, openai_standin):
    _, url = openai_standin
    assert requests.post(f"{url}/_control/indexing", json={"seconds": 0.3}, timeout=3).json() == {
        "seconds": 0.3
    }
    store = ai.vector_stores.create(name="slow", file_ids=[upload(ai).id])

    assert ai.vector_stores.retrieve(store.id).status == "in_progress"
    assert wait_until(lambda: ai.vector_stores.retrieve(store.id).status == "completed", timeout=2)
    requests.post(f"{url}/_control/reset", timeout=3)
    quick = ai.vector_stores.create(name="quick", file_ids=[upload(ai).id])
    assert ai.vector_stores.retrieve(quick.id).status == "completed"  # a reset restores 0 s


def test_files_file_search_cannot_take_end_failed(ai, openai_standin):
    image = upload(ai, "logo.png", b"\x89PNG\r\n\x1a\n....", purpose="user_data")
    latin1 = upload(ai, "menu.txt", "Crème brûlée".encode("latin-1"))
    store = ai.vector_stores.create(name="mixed", file_ids=[image.id, latin1.id])

    files = {f.id: f for f in ai.vector_stores.files.list(vector_store_id=store.id)}

    assert files[image.id].status == "failed" and files[image.id].last_error is not None
    assert (files[image.id].last_error.code, files[image.id].last_error.message) == (
        "unsupported_file",
        "The file type is not supported.",
    )
    assert files[latin1.id].last_error is not None and files[latin1.id].last_error.code == "invalid_file"
    counts = ai.vector_stores.retrieve(store.id).file_counts
    assert (counts.failed, counts.completed, counts.total) == (2, 0, 2)
    failed = ai.vector_stores.files.list(vector_store_id=store.id, filter="failed")
    assert len(list(failed)) == 2


def test_too_many_file_ids_are_refused(ai, openai_standin):
    with pytest.raises(openai.BadRequestError) as refused:
        ai.vector_stores.create(name="big", file_ids=[f"file-{n}" for n in range(101)])
    assert refused.value.body["message"] == (
        "Invalid 'file_ids': array too long. Expected an array with maximum length 100, "
        "but got an array with length 101 instead."
    )


def test_another_projects_key_finds_no_store_and_no_file(ai, openai_standin):
    standin, url = openai_standin
    mine = upload(ai)
    store = ai.vector_stores.create(name="mine", file_ids=[mine.id])
    standin.add_key(OTHER_KEY)
    other = client(url, OTHER_KEY)
    expected = f"No vector store found with id '{store.id}'."

    for attempt in (
        lambda: other.vector_stores.retrieve(store.id),
        lambda: other.vector_stores.files.list(vector_store_id=store.id),
        lambda: other.vector_stores.files.create(vector_store_id=store.id, file_id=mine.id),
        lambda: other.vector_stores.delete(store.id),
    ):
        with pytest.raises(openai.NotFoundError) as refused:
            attempt()
        assert refused.value.body["message"] == expected
    with pytest.raises(openai.NotFoundError):
        other.files.retrieve(mine.id)
    theirs = upload(other)
    with pytest.raises(openai.NotFoundError) as foreign:  # nor may a file of theirs join my store
        ai.vector_stores.files.create(vector_store_id=store.id, file_id=theirs.id)
    assert foreign.value.body["message"] == f"No such File object: {theirs.id}"
    assert list(other.vector_stores.list()) == [] and [f.id for f in other.files.list()] == [theirs.id]
    assert ai.vector_stores.retrieve(store.id).file_counts.total == 1  # untouched


def test_a_key_registered_in_the_same_project_shares_its_stores(ai, openai_standin):
    standin, url = openai_standin
    store = ai.vector_stores.create(name="shared")
    project = standin.project_of(f"Bearer {OPENAI_KEY}")
    answer = requests.post(f"{url}/_control/keys", json={"api_key": OTHER_KEY, "project": project}, timeout=3)

    assert answer.json() == {"keys": 2, "project": project}
    assert client(url, OTHER_KEY).vector_stores.retrieve(store.id).name == "shared"
    standin.revoke_key(OPENAI_KEY)  # a rotated key: the project keeps its stores
    assert [s.id for s in client(url, OTHER_KEY).vector_stores.list()] == [store.id]


def test_a_deleted_file_stays_in_its_stores_until_removed_from_them(ai, openai_standin):
    uploaded = upload(ai)
    store = ai.vector_stores.create(name="orphans", file_ids=[uploaded.id])

    ai.files.delete(uploaded.id)

    assert [f.id for f in ai.vector_stores.files.list(vector_store_id=store.id)] == [uploaded.id]
    ai.vector_stores.files.delete(uploaded.id, vector_store_id=store.id)
    assert list(ai.vector_stores.files.list(vector_store_id=store.id)) == []


def test_the_control_listing_shows_stores_masked_and_outlives_a_reset(ai, openai_standin):
    standin, url = openai_standin
    uploaded = upload(ai)
    store = ai.vector_stores.create(name="kb", metadata={"tenant": "AC1"}, file_ids=[uploaded.id])

    assert requests.post(f"{url}/_control/reset", timeout=3).json() == {"reset": True}
    listed = requests.get(f"{url}/_control/vector_stores", timeout=3)

    assert OPENAI_KEY not in listed.text
    (shown,) = listed.json()["vector_stores"]
    assert (shown["id"], shown["name"], shown["metadata"]) == (store.id, "kb", {"tenant": "AC1"})
    assert shown["file_counts"]["completed"] == 1 and shown["status"] == "completed"
    assert shown["files"] == [{"id": uploaded.id, "filename": "hours.md", "status": "completed"}]
    assert shown["project"] == standin.project_of(f"Bearer {OPENAI_KEY}")
    assert shown["created_with"] == "loc*****key" and shown["api_keys"] == ["loc*****key"]
    assert [(f["id"], f["project"]) for f in listed.json()["files"]] == [(uploaded.id, shown["project"])]
    assert ai.vector_stores.retrieve(store.id).name == "kb"  # the API still has it

    forgotten = requests.delete(f"{url}/_control/vector_stores", timeout=3).json()
    assert forgotten == {"vector_stores": [], "files": []}
    with pytest.raises(openai.NotFoundError):
        ai.vector_stores.retrieve(store.id)
