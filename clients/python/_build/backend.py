"""A PEP 517 build backend in the standard library alone, for this one
package: it makes the wheel (and the sdist) of src/ticketd_client from the
[project] table of pyproject.toml. pip runs it in place (backend-path), so
installing needs neither a package index nor setuptools.

It knows exactly what this project holds: pure Python, one package under
src/, no dependencies, no scripts."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "ticketd_client"


def _project() -> Dict[str, str]:
    """The string fields of [project] in pyproject.toml (tomllib where
    Python has it, 3.11 on; a reading of `key = "value"` lines before)."""
    path = os.path.join(ROOT, "pyproject.toml")
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:
        fields: Dict[str, str] = {}
        section = ""
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                m = re.match(r"\[(.+)\]$", line)
                if m:
                    section = m.group(1).strip()
                    continue
                m = re.match(r'([A-Za-z0-9_-]+)\s*=\s*"((?:[^"\\]|\\.)*)"$', line)
                if m and section == "project":
                    fields[m.group(1)] = m.group(2).replace('\\"', '"')
        return fields
    with open(path, "rb") as f:
        proj = tomllib.load(f)["project"]
    return {k: v for k, v in proj.items() if isinstance(v, str)}


def _names() -> Tuple[str, str, str]:
    p = _project()
    dist = re.sub(r"[-_.]+", "_", p["name"]).lower()
    return p["name"], dist, p["version"]


def _metadata() -> str:
    p = _project()
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"]]
    if "description" in p:
        lines.append("Summary: " + p["description"])
    if "requires-python" in p:
        lines.append("Requires-Python: " + p["requires-python"])
    if "license" in p:
        lines.append("License: " + p["license"])
    return "\n".join(lines) + "\n"


def _files() -> List[Tuple[str, str]]:
    """(path in the wheel, path on disk) of the package's files."""
    src = os.path.join(ROOT, "src")
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(src, PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".py", ".typed")):
                full = os.path.join(dirpath, name)
                out.append((os.path.relpath(full, src).replace(os.sep, "/"), full))
    return out


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _wheel(wheel_directory: str, entries: List[Tuple[str, bytes]]) -> str:
    _, dist, version = _names()
    info = "%s-%s.dist-info" % (dist, version)
    entries = entries + [
        (info + "/METADATA", _metadata().encode()),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: ticketd _build/backend.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = "".join("%s,%s,%d\n" % (name, _digest(data), len(data)) for name, data in entries)
    record += info + "/RECORD,,\n"
    entries.append((info + "/RECORD", record.encode()))
    filename = "%s-%s-py3-none-any.whl" % (dist, version)
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            zi = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return filename


def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[dict] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[dict] = None) -> str:
    _, dist, version = _names()
    info = "%s-%s.dist-info" % (dist, version)
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    return info


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None,
                metadata_directory: Optional[str] = None) -> str:
    entries = []
    for name, full in _files():
        with open(full, "rb") as f:
            entries.append((name, f.read()))
    return _wheel(wheel_directory, entries)


def build_editable(wheel_directory: str, config_settings: Optional[dict] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """An editable install: a .pth file that puts src/ on sys.path."""
    _, dist, _ = _names()
    return _wheel(wheel_directory, [("__editable__.%s.pth" % dist, (os.path.join(ROOT, "src") + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    _, dist, version = _names()
    base = "%s-%s" % (dist, version)
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        files = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")),
                 ("_build/backend.py", os.path.abspath(__file__))]
        files += [("src/" + name, full) for name, full in _files()]
        for name, full in files:
            with open(full, "rb") as f:
                data = f.read()
            ti = tarfile.TarInfo(base + "/" + name)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 0
            tar.addfile(ti, io.BytesIO(data))
        pkg_info = _metadata().encode()
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size, ti.mode, ti.mtime = len(pkg_info), 0o644, 0
        tar.addfile(ti, io.BytesIO(pkg_info))
    return filename
