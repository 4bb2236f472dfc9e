"""Timestamps and fresh identifiers, cheap enough for every request.

`utc_now()` is ISO 8601 UTC with milliseconds and a `Z` (the form A2A timestamps use); the
date and time of day are formatted once a second. `new_id()` is a random (version 4) UUID
in its usual text form, built without the `uuid.UUID` object.
"""

from __future__ import annotations

import os
import time

_second = -1
_second_text = ""
_milli = -1
_milli_text = ""


def utc_now() -> str:
    global _second, _second_text, _milli, _milli_text
    milli = int(time.time() * 1000)
    if milli == _milli:
        return _milli_text
    second = milli // 1000
    if second != _second:
        _second_text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _second = second
    _milli, _milli_text = milli, f"{_second_text}.{milli % 1000:03d}Z"
    return _milli_text


def new_id() -> str:
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
