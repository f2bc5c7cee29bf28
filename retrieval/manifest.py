"""`manifest.json`: what an index was built from and with, written last by `retrieval.build_index`.

An index folder without a manifest is not an index (an interrupted build never gets one). Loading checks the
manifest against the docstore and the caller's expectations, and warns when library versions drifted.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass, field, fields
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

from plumbing import atomic

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
FILENAME = "manifest.json"


class ManifestError(ValueError):
    """An index folder that is missing, half-built, or not what the caller expected."""


def library_versions(names: tuple[str, ...]) -> dict[str, str]:
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def folder_fingerprint(folder: Path) -> str:
    """Cheap identity of a model folder: its config.json plus every file's name and size (no hashing of weights)."""
    h = hashlib.sha256((folder / "config.json").read_bytes() if (folder / "config.json").is_file() else b"")
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(f"{f.relative_to(folder)}\0{f.stat().st_size}\0".encode())
    return h.hexdigest()


def file_sha256(path: Path, progress: bool = False) -> str:
    from tqdm.auto import tqdm

    h = hashlib.sha256()
    with path.open("rb") as f, tqdm(total=path.stat().st_size, unit="B", unit_scale=True, desc="sha256",
                                    disable=not progress, mininterval=1.0) as bar:
        while block := f.read(1 << 22):
            h.update(block)
            bar.update(len(block))
    return h.hexdigest()


@dataclass
class Manifest:
    backend: str
    params: dict[str, Any]
    corpus_path: str
    corpus_sha256: str
    n_passages: int
    n_skipped_lines: int
    libraries: dict[str, str]
    build_seconds: float
    built_at: str
    format_version: int = FORMAT_VERSION
    extra: dict[str, Any] = field(default_factory=dict)  # backend facts (index bytes, vocabulary size, ...)

    def write(self, directory: Path) -> None:
        atomic.write_json(directory / FILENAME, asdict(self), sort_keys=True)

    @classmethod
    def read(cls, directory: Path) -> Manifest:
        path = directory / FILENAME
        if not directory.is_dir():
            raise ManifestError(f"{directory}: no such index folder")
        if not path.is_file():
            raise ManifestError(f"{directory}: not a finished index (no {FILENAME}); build it with "
                                "`python -m retrieval.build_index`")
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise ManifestError(f"{path}: unreadable manifest ({exc})") from None
        if not isinstance(raw, dict):
            raise ManifestError(f"{path}: manifest must be a JSON object")
        if raw.get("format_version") != FORMAT_VERSION:
            raise ManifestError(f"{path}: manifest format {raw.get('format_version')!r}, this code reads "
                                f"{FORMAT_VERSION}; rebuild the index")
        names = {f.name for f in fields(cls)}
        missing = sorted(n for n in names - raw.keys() if n != "extra")
        if missing:
            raise ManifestError(f"{path}: manifest lacks {missing}")
        return cls(**{k: v for k, v in raw.items() if k in names})

    def warn_on_version_drift(self) -> None:
        now = library_versions(tuple(self.libraries))
        for name, built in self.libraries.items():
            if now[name] != built:
                logger.warning("index built with %s %s, running %s; rebuild if results look wrong",
                               name, built, now[name])


class BackendParams:
    """Mixin for each backend's `Params` dataclass: build from a dict / `key=value` strings with type checks."""

    LOAD_TIME: ClassVar[frozenset[str]] = frozenset()  # parameters that may differ between build and load

    @classmethod
    def from_dict(cls, values: dict[str, Any]):
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"unknown {cls.__module__} parameter(s) {unknown}; known: {sorted(known)}")
        return cls(**values)

    @classmethod
    def from_strings(cls, pairs: list[str]):
        """`["k1=1.2", "method=lucene"]` -> Params, converting each value to the field's default's type."""
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for pair in pairs:
            key, sep, raw = pair.partition("=")
            if not sep or key not in known:
                raise ValueError(f"bad --param {pair!r}: expected KEY=VALUE with KEY in {sorted(known)}")
            default = getattr(cls(), key)
            if isinstance(default, bool):
                if raw.lower() not in ("true", "false", "1", "0"):
                    raise ValueError(f"--param {key} expects true/false, got {raw!r}")
                values[key] = raw.lower() in ("true", "1")
            elif isinstance(default, (int, float)):
                try:
                    values[key] = type(default)(raw)
                except ValueError:
                    raise ValueError(f"--param {key} expects a {type(default).__name__}, got {raw!r}") from None
            else:
                values[key] = raw
        return cls.from_dict(values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
