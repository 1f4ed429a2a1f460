"""The API keys the OpenAI stand-in accepts, checked on every API request as OpenAI checks
them: a key it does not know (never created, or revoked) gets 401 with OpenAI's error body,
code `invalid_api_key`, "Incorrect API key provided: sk-abc*****xyz. You can find your API
key at https://platform.openai.com/account/api-keys." (the key masked), and nothing is done
(https://help.openai.com/en/articles/6882433-incorrect-api-key-provided,
https://platform.openai.com/docs/guides/error-codes: "401 - Incorrect API key provided").

The local stack registers the keys it hands out (the deployment's OpenAI secret, tenants'
own keys: infra/local/stack.py); others with:
  - `POST /_control/keys` `{"api_key": "...", "revoked": false}`: OpenAI accepts the key
    from now on (or, `"revoked": true`, refuses it from now on); `add_key(key)` and
    `revoke_key(key)` in Python;
  - `GET /_control/keys` answers how many keys are accepted (never the keys).
The keys outlive `POST /_control/reset`. Refused requests are counted under
`unauthenticated` in `GET /_control/calls`'s `requests`.

Each key belongs to a project, as an OpenAI project key does ("Project keys - Provides
access to a single project": the API reference's Authentication section; a project holds
its "threads, assistants, fine-tuning, and storage": help.openai.com/en/articles/9186755;
"An API key from Project A cannot read, write, or delete a vector store owned by Project
B — it returns 404", as practitioners report it). What a project owns here are its files
and vector stores (openai_files.py). Unless told otherwise
each key is a project of its own (`proj_` and a hash of the key); `POST /_control/keys`
`{"api_key": "...", "project": "proj_shop"}` (`add_key(key, project=...)`) puts a key in a
named project, so that two keys share what either creates (as a key rotated within a
project does). A key keeps its project once revoked; registering it again with another
project moves it. The answer to `POST /_control/keys` names the key's `project`.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from werkzeug.wrappers import Request, Response

from infra.local.standins.base import StandIn, json_response
from infra.local.standins.openai_model import error

API_PREFIX = "/v1/"


class OpenAIKeysStandIn(StandIn):
    """Refuses an API request whose Bearer key is not one it accepts, before any route."""

    def __init__(self) -> None:
        super().__init__()
        self._keys: set[str] = set()
        self._projects: dict[str, str] = {}  # key → its project (kept once revoked)
        self._keys_lock = threading.Lock()

    def add_key(self, api_key: str, project: str | None = None) -> str:
        """Accept `api_key` from now on, in `project` (None: the one it had, or one of its
        own); its project."""
        if not api_key:
            raise ValueError("an empty key")
        with self._keys_lock:
            self._keys.add(api_key)
            if project or api_key not in self._projects:
                self._projects[api_key] = project or _own_project(api_key)
            return self._projects[api_key]

    def project_of(self, authorization: str) -> str:
        """The project of the key an accepted request's `Authorization` header carries."""
        key = authorization.partition(" ")[2].strip()
        with self._keys_lock:
            return self._projects.get(key) or _own_project(key)

    def keys_of(self, project: str) -> list[str]:
        """The keys (accepted or revoked) of `project`, masked."""
        with self._keys_lock:
            return sorted(mask(key) for key, owner in self._projects.items() if owner == project)

    def revoke_key(self, api_key: str) -> None:
        with self._keys_lock:
            self._keys.discard(api_key)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        if request.path == "/_control/keys":
            return self._control_keys(request)(environ, start_response)
        if request.path.startswith(API_PREFIX):
            refusal = self._key_refusal(request.headers.get("Authorization", ""))
            if refusal is not None:
                with self._lock:
                    self.request_counts["unauthenticated"] += 1
                return refusal(environ, start_response)
        return super().__call__(environ, start_response)

    def _key_refusal(self, authorization: str) -> Response | None:
        scheme, _, key = authorization.partition(" ")
        key = key.strip()
        if scheme.lower() != "bearer" or not key:
            return error(401, None, "You didn't provide an API key.")
        with self._keys_lock:
            if key in self._keys:
                return None
        message = (
            f"Incorrect API key provided: {mask(key)}. "
            "You can find your API key at https://platform.openai.com/account/api-keys."
        )
        return error(401, "invalid_api_key", message)

    def _control_keys(self, request: Request) -> Response:
        answer: dict[str, Any] = {}
        if request.method == "POST":
            body = request.get_json(force=True)
            key = str(body.get("api_key") or "")
            try:
                if body.get("revoked"):
                    self.revoke_key(key)
                else:
                    answer["project"] = self.add_key(key, body.get("project") or None)
            except ValueError as failure:
                return json_response({"error": {"message": str(failure), "status": 400}}, 400)
        with self._keys_lock:
            return json_response({"keys": len(self._keys), **answer})


def mask(key: str) -> str:
    """A key as OpenAI shows it in an error: its first and last three characters."""
    return f"{key[:3]}*****{key[-3:]}" if len(key) > 8 else "*****"


def _own_project(key: str) -> str:
    return "proj_" + hashlib.sha256(key.encode()).hexdigest()[:24]
