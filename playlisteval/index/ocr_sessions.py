"""ONNX Runtime sessions for rapidocr's models, made with the options the index needs (issue 26).

rapidocr builds each model's session itself, with ONNX Runtime's default of intra-op threads that
spin while they wait for work. On two shared cores the spinning thread burns the core the frame
decoder (one chunk ahead, index/work.py) or another video's reader needs: on one 720p slide, two
threads took 0.195 s and 0.38 CPU-s a frame spinning, 0.159 s and 0.29 CPU-s not, the text the same.
So the sessions are made here, from the same bundled model files rapidocr would pick, with spinning off
and the CPU arena off (it only grew, issue 43), and handed to rapidocr through its custom-session hook (a
model section's ``session``, rapidocr PR #451) before its first call creates them. Where that hook or the
model lookup is missing (another rapidocr), rapidocr's own sessions are used: slower, the same text.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from playlisteval.logs import get_logger

log = get_logger(__name__)


def use_quiet_sessions(engine: Any, threads: int, int8: bool = False, int8_rec: bool = False) -> bool:
    """Give a fresh rapidocr engine detection and recognition sessions that do not spin; True when
    done (the angle classifier is off, see ocr.py, so it keeps rapidocr's). ``int8`` / ``int8_rec``: the
    detection / recognition session runs the 8-bit copy of rapidocr's model (ocr_int8.py); a copy that
    cannot be made is a ConfigError, never a silent fall back to floats."""
    from playlisteval.errors import ConfigError
    from playlisteval.index.ocr_int8 import int8_detector, int8_recognizer

    try:
        import onnxruntime as ort
        from omegaconf import flag_override
        from rapidocr.inference_engine.base import FileInfo, InferSession

        cfg = engine.cfg
        made = []
        for kind, part in enumerate((cfg.Det, cfg.Rec)):
            path = part.get("model_path")
            if path is None:  # rapidocr's own choice for this model: the file its session would load
                info = InferSession.get_model_url(FileInfo(
                    engine_type=part.engine_type, ocr_version=part.ocr_version, task_type=part.task_type,
                    lang_type=part.lang_type, model_type=part.model_type))
                path = Path(cfg.Global.model_root_dir) / Path(info["model_dir"]).name
            if int8 and kind == 0:  # the detector
                path = int8_detector(Path(path))
            elif int8_rec and kind == 1:  # the recogniser
                path = int8_recognizer(Path(path))
            made.append(ort.InferenceSession(str(path), sess_options=_options(ort, threads),
                                             providers=["CPUExecutionProvider"]))
        for part, session in zip((cfg.Det, cfg.Rec), made, strict=True):
            with flag_override(part, "allow_objects", True):  # the config holds an object, not a value
                part.session = session
    except ConfigError:
        raise
    # anything (another rapidocr's config, ONNX Runtime refusing a file): the speed-up is lost, not the OCR
    except Exception as exc:  # noqa: BLE001
        log.info("ocr.default_sessions", error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return False
    return True


def _options(ort: Any, threads: int) -> Any:
    options = ort.SessionOptions()
    options.log_severity_level = 4  # errors come back as exceptions; nothing printed
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL  # as rapidocr sets it
    # no BFC arena: it keeps every region it grew for crops and batches of new shapes until the session
    # ends, so a long index grew with the frames read (issue 43: 80 camera-like frames, 336 MB resident
    # with it; 165 MB without, the freed pages given back by index/heap.py); plain malloc/free instead
    options.enable_cpu_mem_arena = False
    options.intra_op_num_threads = max(1, threads)
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


_importing = threading.Lock()


def rapidocr_class() -> Any:
    """rapidocr's ``RapidOCR``, imported once with its model table read once.

    Two of rapidocr's modules each read its 85-KB model table (default_models.yaml) into OmegaConf at
    import, ~0.2 CPU-s each of Python under the GIL, which every other thread of a starting index waits
    on (issue 43). While it is imported here, the second read gets the first's object; both only read it.
    Any other file, or a call with other arguments, is read as usual, and OmegaConf is restored after.
    """
    import sys

    if "rapidocr.main" in sys.modules:
        from rapidocr import RapidOCR

        return RapidOCR
    from omegaconf import OmegaConf

    with _importing:
        original, attribute = OmegaConf.load, OmegaConf.__dict__["load"]  # the function, its staticmethod
        read: dict[str, Any] = {}

        def load_once(file_: Any, *args: Any, **kwargs: Any) -> Any:
            key = str(file_)
            if args or kwargs or not isinstance(file_, (str, Path)) or Path(key).name != "default_models.yaml":
                return original(file_, *args, **kwargs)
            if key not in read:
                read[key] = original(file_)
            return read[key]

        OmegaConf.load = staticmethod(load_once)  # type: ignore[method-assign]
        try:
            from rapidocr import RapidOCR
        finally:
            OmegaConf.load = attribute  # type: ignore[method-assign]
    return RapidOCR
