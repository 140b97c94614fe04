"""A PEP 517 build backend for the pure-Python baton package, in-tree.

The package is plain Python files over libbaton.so, so a wheel is a zip of
them with the metadata of pyproject.toml. Keeping the backend here (no
setuptools to fetch into pip's isolated build environment) makes
``pip install ./python`` work offline. It builds wheels (also editable
ones, PEP 660) and sdists.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "baton"
TAG = "py3-none-any"


def _project() -> Dict[str, str]:
    """name, version, description, requires-python from pyproject.toml."""
    text = (ROOT / "pyproject.toml").read_text()
    try:
        import tomllib

        p = tomllib.loads(text)["project"]
        return {k: str(p.get(k, "")) for k in ("name", "version", "description", "requires-python")}
    except ImportError:  # Python < 3.11: the [project] table's simple keys
        out = {}
        for k in ("name", "version", "description", "requires-python"):
            m = re.search(r'^%s\s*=\s*"([^"]*)"' % re.escape(k), text, re.M)
            out[k] = m.group(1) if m else ""
        return out


def _metadata() -> str:
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {p['version']}",
        f"Summary: {p['description']}",
        f"Requires-Python: {p['requires-python']}",
        "Provides-Extra: kafka",
        'Requires-Dist: confluent-kafka>=1.6; extra == "kafka"',
        "Provides-Extra: test",
        'Requires-Dist: pytest; extra == "test"',
        "Description-Content-Type: text/markdown",
        "",
        (ROOT / "README.md").read_text(),
    ]
    return "\n".join(lines)


def _dist_info() -> str:
    p = _project()
    return f"{p['name']}-{p['version']}.dist-info"


def _wheel_name() -> str:
    p = _project()
    return f"{p['name']}-{p['version']}-{TAG}.whl"


def _package_files() -> List[Tuple[str, bytes]]:
    out = []
    for f in sorted((ROOT / PACKAGE).rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts and f.suffix in (".py", ".typed"):
            out.append((f.relative_to(ROOT).as_posix(), f.read_bytes()))
    return out


def _write_wheel(directory: str, files: List[Tuple[str, bytes]]) -> str:
    info = _dist_info()
    files = files + [
        (f"{info}/METADATA", _metadata().encode()),
        (f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: baton-backend\nRoot-Is-Purelib: true\nTag: {TAG}\n".encode()),
    ]
    record = []
    for name, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    name = _wheel_name()
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            zi = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            z.writestr(zi, data, zipfile.ZIP_DEFLATED)
    return name


def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> List[str]:
    return []


get_requires_for_build_sdist = get_requires_for_build_wheel
get_requires_for_build_editable = get_requires_for_build_wheel


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[dict] = None) -> str:
    info = Path(metadata_directory) / _dist_info()
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(_metadata())
    return info.name


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None, metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory: str, config_settings: Optional[dict] = None, metadata_directory: Optional[str] = None) -> str:
    """An editable install: a .pth file that puts this directory on sys.path."""
    return _write_wheel(wheel_directory, [("baton_editable.pth", (str(ROOT) + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    p = _project()
    base = f"{p['name']}-{p['version']}"
    name = f"{base}.tar.gz"
    extra = ["pyproject.toml", "README.md", "_build/backend.py"]
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for rel, data in [(r, (ROOT / r).read_bytes()) for r in extra] + _package_files():
            ti = tarfile.TarInfo(f"{base}/{rel}")
            ti.size = len(data)
            ti.mode = 0o644
            t.addfile(ti, io.BytesIO(data))
        pkg = f"Metadata-Version: 2.1\nName: {p['name']}\nVersion: {p['version']}\n".encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg)
        ti.mode = 0o644
        t.addfile(ti, io.BytesIO(pkg))
    return name
