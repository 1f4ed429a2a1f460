"""Media files as people send them on WhatsApp, small: what the Twilio stand-in serves for
the corpus's media URLs. Each starts as its format does (the checks on the way to the
model look at the first bytes); the photo and the sticker are real images (16x16)."""

from __future__ import annotations

import base64

PHOTO = base64.b64decode(
    "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAoHBwgHBgoICAgLCgoLDhgQDg0NDh0VFhEYIx8lJCIfIiEmKzcvJik0KSEiMEEx"
    "NDk7Pj4+JS5ESUM8SDc9Pjv/2wBDAQoLCw4NDhwQEBw7KCIoOzs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7Ozs7"
    "Ozs7Ozs7Ozs7Ozs7Ozs7Ozv/wAARCAAQABADASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QA"
    "tRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3"
    "ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLD"
    "xMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QA"
    "tREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2"
    "Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6"
    "wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwCh/wAhj/sI/wDpV/8AbP8A0P8A3vv5"
    "1FaP/IY/7CP/AKVf/bP/AEP/AHvv+XufefB6fl/wPy9Nv//Z"
)
STICKER = base64.b64decode(
    "UklGRm4AAABXRUJQVlA4IGIAAACwAgCdASoQABAAAUAmJamDxsBfgGuABtIAAQ0ADkAA/u7Xr//mPy//5k3/zNl2nTVgzSFI"
    "7KFqsmFK8F5LrCO/xeKCpOru3m94SgMfF//2lr4oPgH//bJ//ZwP00pXB7+gAA=="
)
# An Ogg page header (WhatsApp voice notes are Opus in Ogg), then stand-in audio data.
VOICE_NOTE = b"OggS\x00\x02" + b"\x00" * 20 + b"\x01\x13OpusHead\x01\x01" + b"voice-note-audio" * 8
VIDEO = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + b"\x00" * 64
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
VCARD = b"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Ben Ortiz\r\nTEL;type=CELL:+14155550199\r\nEND:VCARD\r\n"

BY_TYPE = {
    "image/jpeg": PHOTO,
    "image/webp": STICKER,
    "audio/ogg": VOICE_NOTE,
    "video/mp4": VIDEO,
    "application/pdf": PDF,
    "text/vcard": VCARD,
}
# What the voice note says, as the OpenAI stand-in is told to transcribe it.
VOICE_NOTE_SAYS = "It's the blue house next to the bakery, ring twice"
