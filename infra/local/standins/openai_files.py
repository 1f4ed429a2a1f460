"""Files and vector stores in the OpenAI stand-in: what the `file_search` tool searches
(openai_knowledge.py), as OpenAI's file search guide sets it up
(https://developers.openai.com/api/docs/guides/tools-file-search: upload a file to the
Files API, create a vector store, add the file to it) and as the API reference and the
`openai` SDK's types shape the objects (FileObject, VectorStore, VectorStoreFile).

Files (https://platform.openai.com/docs/api-reference/files): `POST /v1/files`
(multipart: `file`, `purpose`), `GET /v1/files` (`purpose`, `limit`, `order`, `after`),
`GET /v1/files/{id}`, `DELETE /v1/files/{id}`. A file is `{"id": "file-…", "object":
"file", "bytes", "created_at", "filename", "purpose", "status": "processed", ...}`. An
empty file is refused: 400 "File is empty." (as OpenAI answers it: openai/openai-go#434,
canyongbs/advisingapp#2796); so is a `purpose` the API does not list. An id the project
does not hold: 404 "No such File object: file-…" (param `id`, OpenAI's body as quoted in
many clients' tests, e.g. the openai-python traceback in inaimathi's sleeper-agents notes).

Vector stores (https://platform.openai.com/docs/api-reference/vector-stores): create
(`name`, `metadata` as for a response, `file_ids` at most 100: "Invalid 'file_ids': array
too long. Expected an array with maximum length 100, ..." as quoted in
dimagi/open-chat-studio#954), list, retrieve, update (`name`, `metadata`), delete; and
their files (https://platform.openai.com/docs/api-reference/vector-stores-files): add
(`file_id`, `attributes`), list (`filter` by status, `limit`, `order`, `after`, `before`),
retrieve, delete ("This will remove the file from the vector store but the file itself will
not be deleted"). A store another project created, or none at all: 404 "No vector store
found with id 'vs_…'." (the message clients match on, e.g. wpsc's OpenAI integration:
"OpenAI returns 404 with a "No vector store found with id ..." message when the configured
store doesn't exist for this key/project (e.g. after a key rotation)"), on every call.
A file not in the store: 404 "No file found with id 'file-…' in vector store 'vs_…'."
(the stand-in's wording).

Indexing: adding a file answers `in_progress` (the store too, when created with
`file_ids`); reads show it `completed` once `POST /_control/indexing` `{"seconds": N}` have
passed (0 by default: the next read). Only completed files are searched. A file whose type
file search does not take (not one of the "Supported files" of the guide: .c .cpp .cs .css
.doc .docx .go .html .java .js .json .md .pdf .php .pptx .py .rb .sh .tex .ts .txt) ends
`failed` with `last_error` `{"code": "unsupported_file", "message": "The file type is not
supported."}` (OpenAI's, as quoted in openai/openai-openapi#300); a text file that is not
UTF-8, UTF-16 or ASCII ("For text/ MIME types, the encoding must be one of utf-8, utf-16, or
ascii") `invalid_file`. The stand-in reads text files only: a .pdf, .doc, .docx or .pptx
completes and never matches. Deleting a File does not take it out of the stores it was
added to (OpenAI's reference does not say it does; this is the worse case): it stays
listed and searched until it is removed from each store.

Ownership: files and stores belong to the project of the key that created them
(openai_keys.py); they outlive `POST /_control/reset`, as the keys do (and as a deployed
tenant's knowledge outlives any test). `GET /_control/vector_stores` lists every store
(`id`, `name`, `metadata`, `status`, `file_counts`, `files`, `project`, `created_with` the
creating key and `api_keys` the project's keys, masked)
and every file not deleted (`files`); `DELETE /_control/vector_stores` forgets all of them
(`forget_knowledge()` in Python).
"""

from __future__ import annotations

import copy
import secrets
import string
import time
from dataclasses import dataclass, field
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from infra.local.standins.base import json_response
from infra.local.standins.openai_keys import mask
from infra.local.standins.openai_model import error, item_page, new_id
from infra.local.standins.openai_tools import ToolsStandIn, metadata_refusal

PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")
# The guide's "Supported files" (https://developers.openai.com/api/docs/guides/tools-file-search,
# as quoted from platform.openai.com/docs/assistants/tools/file-search/supported-files).
UNREAD = ("doc", "docx", "pdf", "pptx")  # supported by OpenAI, not read by the stand-in
TEXTS = ("c", "cpp", "cs", "css", "go", "html", "java", "js", "json", "md", "php", "py", "rb")
SEARCHABLE = (*TEXTS, "sh", "tex", "ts", "txt", *UNREAD)
MAX_FILE_IDS = 100
# The `auto` strategy as OpenAI reports it on a vector store file (openai/openai-openapi#300).
AUTO_CHUNKING = {"type": "static", "static": {"max_chunk_size_tokens": 800, "chunk_overlap_tokens": 400}}
UNSUPPORTED = {"code": "unsupported_file", "message": "The file type is not supported."}
UNPARSED = {"code": "invalid_file", "message": "The file could not be parsed."}


@dataclass
class StoredFile:
    id: str
    project: str
    api_key: str  # masked
    filename: str
    purpose: str
    size: int
    created_at: int
    text: str | None  # None: nothing the stand-in can search
    problem: dict[str, str] | None  # why file search cannot index it

    def resource(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": self.size,
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",  # deprecated, still in the object
            "status_details": None,
            "expires_at": None,
        }


@dataclass
class StoreFile:
    """A file added to a vector store."""

    file: StoredFile
    created_at: int
    ready_at: float
    attributes: dict[str, Any]

    def status(self, now: float, fresh: bool = False) -> str:
        if fresh or now < self.ready_at:
            return "in_progress"
        return "failed" if self.file.problem else "completed"

    def resource(self, store_id: str, now: float, fresh: bool = False) -> dict[str, Any]:
        status = self.status(now, fresh)
        return {
            "id": self.file.id,
            "object": "vector_store.file",
            "created_at": self.created_at,
            "vector_store_id": store_id,
            "status": status,
            "last_error": self.file.problem if status == "failed" else None,
            "usage_bytes": self.file.size if status == "completed" else 0,
            "attributes": self.attributes,
            "chunking_strategy": AUTO_CHUNKING,
        }


@dataclass
class VectorStore:
    id: str
    project: str
    api_key: str  # masked
    name: str
    metadata: dict[str, str]
    created_at: int
    expires_after: dict[str, Any] | None = None
    last_active_at: int = 0
    files: dict[str, StoreFile] = field(default_factory=dict)

    def resource(self, now: float, fresh: bool = False) -> dict[str, Any]:
        statuses = [f.status(now, fresh) for f in self.files.values()]
        counts = {s: statuses.count(s) for s in ("in_progress", "completed", "failed", "cancelled")}
        return {
            "id": self.id,
            "object": "vector_store",
            "created_at": self.created_at,
            "name": self.name,
            "metadata": self.metadata,
            "status": "in_progress" if counts["in_progress"] else "completed",
            "file_counts": {**counts, "total": len(statuses)},
            "usage_bytes": sum(f.file.size for f in self.files.values() if f.status(now) == "completed"),
            "last_active_at": self.last_active_at or self.created_at,
            "expires_after": self.expires_after,
            "expires_at": None,
        }


class FilesStandIn(ToolsStandIn):
    rules = [
        *ToolsStandIn.rules,
        Rule("/v1/files", endpoint="files_api", methods=["GET", "POST"]),
        Rule("/v1/files/<file_id>", endpoint="file_api", methods=["GET", "DELETE"]),
        Rule("/v1/vector_stores", endpoint="vector_stores_api", methods=["GET", "POST"]),
        Rule("/v1/vector_stores/<vs_id>", endpoint="vector_store_api", methods=["GET", "POST", "DELETE"]),
        Rule("/v1/vector_stores/<vs_id>/files", endpoint="store_files_api", methods=["GET", "POST"]),
        Rule(
            "/v1/vector_stores/<vs_id>/files/<file_id>", endpoint="store_file_api", methods=["GET", "DELETE"]
        ),
        Rule("/_control/vector_stores", endpoint="control_vector_stores", methods=["GET", "DELETE"]),
        Rule("/_control/indexing", endpoint="control_indexing", methods=["POST"]),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, StoredFile] = {}
        self.vector_stores: dict[str, VectorStore] = {}
        self.indexing_seconds = 0.0

    def _reset(self) -> None:
        super()._reset()
        self.indexing_seconds = 0.0  # the files and stores stay, as the keys do

    # --- for tests ------------------------------------------------------------------------

    def forget_knowledge(self) -> None:
        """Forget every file and vector store, of every project."""
        with self._lock:
            self.files.clear()
            self.vector_stores.clear()

    def knowledge(self) -> dict[str, Any]:
        """What `GET /_control/vector_stores` answers."""
        now = time.time()
        with self._lock:
            stores = [
                {
                    **store.resource(now),
                    "project": store.project,
                    "created_with": store.api_key,
                    "api_keys": self.keys_of(store.project),
                    "files": [
                        {"id": f.file.id, "filename": f.file.filename, "status": f.status(now)}
                        for f in store.files.values()
                    ],
                }
                for store in self.vector_stores.values()
            ]
            files = [{**f.resource(), "project": f.project} for f in self.files.values()]
            return copy.deepcopy({"vector_stores": stores, "files": files})

    # --- files ----------------------------------------------------------------------------

    def files_api(self, request: Request) -> Response:
        project = self.project_of(request.headers.get("Authorization", ""))
        if request.method == "GET":
            purpose = request.args.get("purpose")
            with self._lock:
                owned = [f for f in self.files.values() if f.project == project]
                listed = [f.resource() for f in owned if purpose in (None, f.purpose)]
                return _page(request, listed, most=10000, default=10000)
        upload = request.files.get("file")
        purpose = request.form.get("purpose")
        if upload is None:
            return error(400, "missing_required_parameter", "Missing required parameter: 'file'.", "file")
        if not purpose:
            return error(
                400, "missing_required_parameter", "Missing required parameter: 'purpose'.", "purpose"
            )
        if purpose not in PURPOSES:
            supported = ", ".join(f"'{p}'" for p in PURPOSES)
            message = f"Invalid value: '{purpose}'. Supported values are: {supported}."
            return error(400, "invalid_value", message, "purpose")
        data = upload.read()
        if not data:
            return error(400, None, "File is empty.", "file")
        filename = upload.filename or "upload"
        text, problem = _readable(filename, data)
        stored = StoredFile(
            _file_id(),
            project,
            mask(request.headers.get("Authorization", "").partition(" ")[2].strip()),
            filename,
            purpose,
            len(data),
            int(time.time()),
            text,
            problem,
        )
        with self._lock:
            self.files[stored.id] = stored
        return json_response(stored.resource())

    def file_api(self, request: Request, file_id: str) -> Response:
        project = self.project_of(request.headers.get("Authorization", ""))
        with self._lock:
            stored = self.files.get(file_id)
            if stored is None or stored.project != project:
                return file_not_found(file_id)
            if request.method == "DELETE":
                del self.files[file_id]  # the stores it was added to keep it (see above)
                return json_response({"id": file_id, "object": "file", "deleted": True})
            return json_response(stored.resource())

    # --- vector stores --------------------------------------------------------------------

    def vector_stores_api(self, request: Request) -> Response:
        project = self.project_of(request.headers.get("Authorization", ""))
        now = time.time()
        if request.method == "GET":
            with self._lock:
                owned = [s.resource(now) for s in self.vector_stores.values() if s.project == project]
                return _page(request, owned)
        body = request.get_json(force=True, silent=True) or {}
        file_ids = body.get("file_ids") or []
        if (refused := metadata_refusal(body.get("metadata"))) is not None:
            return refused
        if not isinstance(file_ids, list) or len(file_ids) > MAX_FILE_IDS:
            length = len(file_ids) if isinstance(file_ids, list) else 0
            message = (
                f"Invalid 'file_ids': array too long. Expected an array with maximum length "
                f"{MAX_FILE_IDS}, but got an array with length {length} instead."
            )
            return error(400, "array_above_max_length", message, "file_ids")
        key = mask(request.headers.get("Authorization", "").partition(" ")[2].strip())
        store = VectorStore(
            new_id("vs")[:27], project, key, str(body.get("name") or ""), body.get("metadata") or {}, int(now)
        )
        store.expires_after = body.get("expires_after")
        with self._lock:
            for file_id in file_ids:
                stored = self.files.get(str(file_id))
                if stored is None or stored.project != project:
                    return file_not_found(str(file_id), "file_ids")
                store.files[stored.id] = self._attached(stored, {})
            self.vector_stores[store.id] = store
            return json_response(store.resource(now, fresh=True))

    def vector_store_api(self, request: Request, vs_id: str) -> Response:
        now = time.time()
        with self._lock:
            store = self._store(request, vs_id)
            if store is None:
                return store_not_found(vs_id)
            if request.method == "DELETE":
                del self.vector_stores[vs_id]  # its files stay in the Files API
                return json_response({"id": vs_id, "object": "vector_store.deleted", "deleted": True})
            if request.method == "POST":
                body = request.get_json(force=True, silent=True) or {}
                if (refused := metadata_refusal(body.get("metadata"))) is not None:
                    return refused
                store.name = str(body["name"]) if body.get("name") is not None else store.name
                store.metadata = body["metadata"] if body.get("metadata") is not None else store.metadata
            return json_response(store.resource(now))

    def store_files_api(self, request: Request, vs_id: str) -> Response:
        now = time.time()
        with self._lock:
            store = self._store(request, vs_id)
            if store is None:
                return store_not_found(vs_id)
            if request.method == "GET":
                wanted = request.args.get("filter")
                listed = [
                    f.resource(vs_id, now) for f in store.files.values() if wanted in (None, f.status(now))
                ]
                return _page(request, listed)
            body = request.get_json(force=True, silent=True) or {}
            file_id = body.get("file_id")
            if not file_id:
                message = "Missing required parameter: 'file_id'."
                return error(400, "missing_required_parameter", message, "file_id")
            stored = self.files.get(str(file_id))
            if stored is None or stored.project != store.project:
                return file_not_found(str(file_id), "file_id")
            if stored.id not in store.files:  # adding it again answers it as it is
                store.files[stored.id] = self._attached(stored, body.get("attributes") or {})
                return json_response(store.files[stored.id].resource(vs_id, now, fresh=True))
            return json_response(store.files[stored.id].resource(vs_id, now))

    def store_file_api(self, request: Request, vs_id: str, file_id: str) -> Response:
        with self._lock:
            store = self._store(request, vs_id)
            if store is None:
                return store_not_found(vs_id)
            attached = store.files.get(file_id)
            if attached is None:
                message = f"No file found with id '{file_id}' in vector store '{vs_id}'."
                return error(404, None, message)
            if request.method == "DELETE":
                del store.files[file_id]
                return json_response({"id": file_id, "object": "vector_store.file.deleted", "deleted": True})
            return json_response(attached.resource(vs_id, time.time()))

    def _store(self, request: Request, vs_id: str) -> VectorStore | None:
        """The store, if the request's project owns it (lock held)."""
        store = self.vector_stores.get(vs_id)
        if store is None or store.project != self.project_of(request.headers.get("Authorization", "")):
            return None
        return store

    def _attached(self, stored: StoredFile, attributes: dict[str, Any]) -> StoreFile:
        return StoreFile(stored, int(time.time()), time.time() + self.indexing_seconds, attributes)

    def searchable(self, project: str, store_ids: list[str]) -> list[StoreFile] | str:
        """The completed files of the project's stores `store_ids`, each once; or the first
        id that names no store of the project."""
        now = time.time()
        found: dict[str, StoreFile] = {}
        with self._lock:
            for vs_id in store_ids:
                store = self.vector_stores.get(vs_id)
                if store is None or store.project != project:
                    return vs_id
                store.last_active_at = int(now)
                for attached in store.files.values():
                    if attached.status(now) == "completed":
                        found.setdefault(attached.file.id, attached)
        return list(found.values())

    # --- control --------------------------------------------------------------------------

    def control_vector_stores(self, request: Request) -> Response:
        if request.method == "DELETE":
            self.forget_knowledge()
        return json_response(self.knowledge())

    def control_indexing(self, request: Request) -> Response:
        seconds = float((request.get_json(force=True, silent=True) or {}).get("seconds") or 0)
        with self._lock:
            self.indexing_seconds = seconds
        return json_response({"seconds": seconds})


def store_not_found(vs_id: str) -> Response:
    return error(404, None, f"No vector store found with id '{vs_id}'.")


def file_not_found(file_id: str, param: str = "id") -> Response:
    return error(404, None, f"No such File object: {file_id}", param)


def _file_id() -> str:
    """An id of OpenAI's form: `file-` and 22 letters and digits."""
    alphabet = string.ascii_letters + string.digits
    return "file-" + "".join(secrets.choice(alphabet) for _ in range(22))


def _readable(filename: str, data: bytes) -> tuple[str | None, dict[str, str] | None]:
    """The file's text for search (None: none the stand-in reads) and why file search
    cannot index it (None: it can)."""
    extension = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    if extension not in SEARCHABLE:
        return None, UNSUPPORTED
    if extension in UNREAD:
        return None, None
    encoding = "utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8"
    try:
        return data.decode(encoding), None
    except UnicodeDecodeError:
        return None, UNPARSED


def _page(request: Request, objects: list[dict[str, Any]], most: int = 100, default: int = 20) -> Response:
    """A cursor page of `objects` (oldest first) as the API's lists answer: `limit` 1 to
    `most` (the files' list: 10,000, its default too; the vector stores': 100, default 20),
    `order` by `created_at` (default desc), `after` / `before` an id."""
    limit = request.args.get("limit", default, type=int)
    order = request.args.get("order", "desc")
    if limit is None or not 1 <= limit <= most:
        return error(400, "integer_out_of_range", f"Invalid 'limit': expected 1 to {most}.", "limit")
    if order not in ("asc", "desc"):
        return error(400, "invalid_value", "Invalid 'order': expected 'asc' or 'desc'.", "order")
    ordered = objects if order == "asc" else objects[::-1]
    ids = [o["id"] for o in ordered]
    if (after := request.args.get("after")) in ids:
        ordered = ordered[ids.index(after) + 1 :]
    if (before := request.args.get("before")) in ids:
        ordered = ordered[: ids.index(before)]
    return json_response(item_page(copy.deepcopy(ordered[:limit]), len(ordered) > limit))
