"""A helper process that makes eSpeak NG deterministic.

eSpeak NG keeps synthesis state in process-wide globals (wave phase, queues, the noise generator), so the
same text spoken after different earlier utterances comes out slightly different. This program initialises
the library once and never synthesizes itself; for every request it forks a child, which speaks from that
pristine state and exits. The same input therefore always gives the same samples, whatever was spoken before,
in whichever process.

Protocol (run as `python -m audioeval.audio.espeak_zygote`): one JSON request per line on stdin,
`{"text", "voice", "params": {name: int}, "ssml": bool}`; for each, stdout carries a 1-byte status (0 ok,
1 error), an 8-byte little-endian length and that many bytes: PCM16 little-endian samples at the native rate,
or a UTF-8 error message. The first thing written is the native sampling rate as 4 bytes.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import sys

AUDIO_OUTPUT_SYNCHRONOUS = 2
PARAMS = {"rate": 1, "volume": 2, "pitch": 3, "range": 4, "wordgap": 7}
CHARS_UTF8 = 1
SSML = 0x10
EE_OK = 0
CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)


def _speak(lib: ctypes.CDLL, request: dict) -> tuple[int, bytes]:
    chunks: list[bytes] = []

    def collect(wav, n, _events):  # noqa: ANN001 - ctypes callback
        if wav and n > 0:
            chunks.append(ctypes.string_at(wav, n * 2))
        return 0

    callback = CALLBACK(collect)
    lib.espeak_SetSynthCallback(callback)
    if lib.espeak_SetVoiceByName(request["voice"].encode()) != EE_OK:
        return 1, f"eSpeak NG has no voice {request['voice']!r}".encode()
    for name, value in request["params"].items():
        lib.espeak_SetParameter(PARAMS[name], int(value), 0)
    if hasattr(lib, "espeak_ng_SetRandSeed"):
        lib.espeak_ng_SetRandSeed(0)
    data = request["text"].encode("utf-8") + b"\0"
    flags = CHARS_UTF8 | (SSML if request.get("ssml") else 0)
    status = lib.espeak_Synth(ctypes.create_string_buffer(data), len(data), 0, 0, 0, flags, None, None)
    if status != EE_OK:
        return 1, f"eSpeak NG could not synthesise the text (status {status})".encode()
    lib.espeak_Synchronize()
    return 0, b"".join(chunks)


def _write(stream, status: int, payload: bytes) -> None:  # noqa: ANN001
    stream.write(struct.pack("<BQ", status, len(payload)))
    stream.write(payload)
    stream.flush()


def main() -> None:
    import espeakng_loader

    lib = ctypes.CDLL(espeakng_loader.get_library_path())
    lib.espeak_Synth.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    rate = lib.espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, espeakng_loader.get_data_path().encode(), 0)
    out = sys.stdout.buffer
    out.write(struct.pack("<i", rate))
    out.flush()
    for line in sys.stdin.buffer:
        request = json.loads(line)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: speak from the pristine state, hand the bytes back, vanish
            os.close(read_end)
            try:
                status, payload = _speak(lib, request)
            except Exception as err:  # noqa: BLE001
                status, payload = 1, repr(err).encode()
            with os.fdopen(write_end, "wb") as pipe:
                _write(pipe, status, payload)
            os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            reply = pipe.read()
        os.waitpid(pid, 0)
        if len(reply) < 9:
            reply = struct.pack("<BQ", 1, 32) + b"eSpeak NG child process crashed"[:32].ljust(32)
        out.write(reply)
        out.flush()


if __name__ == "__main__":
    main()
