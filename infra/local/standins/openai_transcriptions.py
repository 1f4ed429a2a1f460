"""Speech to text in the OpenAI stand-in: `POST /v1/audio/transcriptions`
(https://platform.openai.com/docs/api-reference/audio/createTranscription).

The request is multipart: `file` (required; "flac, mp3, mp4, mpeg, mpga, m4a, ogg, wav, or
webm", identified by its file name's extension) and `model` (required). The answer is
`{"text": ...}` (`response_format` json, the default) or the bare text (`text`). A file
over 25 MB is refused with 413 ("the maximum request size is 25 MiB":
https://help.openai.com/en/articles/7031512); a format it does not take, with 400. Links
are not taken: "you must send a file" (same page).

The stand-in cannot hear: what a recording says is told to it beforehand, by the file's
SHA-256 (`say`, or `POST /_control/transcripts` `{"audio_sha256": ..., "text": ...}`);
a recording it was not told about is silence, transcribed as "".

Control:
  - `POST /_control/transcription_faults` `{"faults": [...]}`: each used by one
    transcription, in order: `{"status": 500}` (OpenAI's error body), `{"delay": 30}`
    (the answer comes 30 s late), `{}` (let it through).
  - `GET /_control/transcriptions` lists the transcriptions asked for, with their answers.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from typing import Any

from werkzeug.routing import Rule
from werkzeug.wrappers import Request, Response

from infra.local.standins.base import Fault, json_response
from infra.local.standins.openai_conversations import ConversationsStandIn
from infra.local.standins.openai_model import error

FORMATS = ("flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm")
MAX_BYTES = 25 * 1024 * 1024


class TranscriptionsStandIn(ConversationsStandIn):
    rules = [
        *ConversationsStandIn.rules,
        Rule("/v1/audio/transcriptions", endpoint="create_transcription", methods=["POST"]),
        Rule("/_control/transcripts", endpoint="control_transcripts", methods=["POST"]),
        Rule("/_control/transcription_faults", endpoint="control_transcription_faults", methods=["POST"]),
        Rule("/_control/transcriptions", endpoint="control_transcriptions", methods=["GET"]),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.transcripts: dict[str, str] = {}  # what each recording says, by its SHA-256
        self.transcriptions: list[dict[str, Any]] = []
        self._transcription_faults: deque[Fault] = deque()
        self._audio_lock = threading.Lock()

    def _reset(self) -> None:
        super()._reset()
        with self._audio_lock:
            self.transcripts.clear()
            self.transcriptions.clear()
            self._transcription_faults.clear()

    # --- for tests ------------------------------------------------------------------------

    def say(self, audio: bytes, text: str) -> None:
        """From now on, `audio` is transcribed as `text`."""
        with self._audio_lock:
            self.transcripts[hashlib.sha256(audio).hexdigest()] = text

    def inject_transcription_faults(self, *faults: Fault) -> None:
        with self._audio_lock:
            self._transcription_faults.extend(faults)

    # --- the API --------------------------------------------------------------------------

    def create_transcription(self, request: Request) -> Response:
        with self._audio_lock:
            fault = dict(self._transcription_faults.popleft()) if self._transcription_faults else {}
        upload = request.files.get("file")
        data = upload.read() if upload else b""
        call: dict[str, Any] = {
            "model": request.form.get("model"),
            "filename": upload.filename if upload else None,
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "at": time.time(),
        }
        time.sleep(float(fault.get("delay") or 0))
        response = self._transcribe(request, upload.filename if upload else None, data, fault)
        call["status"] = response.status_code
        with self._audio_lock:
            self.transcriptions.append(call)
        return response

    def _transcribe(self, request: Request, filename: str | None, data: bytes, fault: Fault) -> Response:
        if fault.get("status"):
            return error(int(fault["status"]), fault.get("code"))
        if not request.form.get("model"):
            return error(400, None, "you must provide a model parameter", "model")
        if filename is None:
            return error(400, None, "Could not parse multipart form", "file")
        if len(data) > MAX_BYTES:
            return error(
                413, None, f"Maximum content size limit ({MAX_BYTES}) exceeded ({len(data)} bytes read)"
            )
        if filename.rsplit(".", 1)[-1].lower() not in FORMATS:
            return error(400, None, f"Invalid file format. Supported formats: {list(FORMATS)}", "file")
        with self._audio_lock:
            text = self.transcripts.get(hashlib.sha256(data).hexdigest(), "")
        if request.form.get("response_format") == "text":
            return Response(text, 200, content_type="text/plain")
        return json_response({"text": text})

    # --- control --------------------------------------------------------------------------

    def control_transcripts(self, request: Request) -> Response:
        body = request.get_json(force=True)
        with self._audio_lock:
            self.transcripts[str(body["audio_sha256"])] = str(body["text"])
        return json_response({"transcripts": len(self.transcripts)})

    def control_transcription_faults(self, request: Request) -> Response:
        self.inject_transcription_faults(*(request.get_json(force=True).get("faults") or []))
        with self._audio_lock:
            return json_response({"queued": len(self._transcription_faults)})

    def control_transcriptions(self, request: Request) -> Response:
        with self._audio_lock:
            return json_response({"transcriptions": list(self.transcriptions)})
