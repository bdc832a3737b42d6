"""aayu's metadata step: run offline, as the sandbox uid, in the per-run copy of a Python package whose
dependencies are not all written as data (`dynamic`, or only `setup.py`/`setup.cfg`). It asks the
package's own build backend for its metadata (`prepare_metadata_for_build_wheel`) and writes the
requirements to download and install, one per line: the package's own, those of its first extra named
test, tests or testing (else the lines of `more.txt`, which aayu read from a requirements file or a
dependency group), and pytest at aayu's pin when none of them is pytest.

argv: <copy> <work> <out> <pytest pin>: `more.txt` is read from <work>, `requirements.txt` written into <out>
(root reads it back as data before anything downloads it)."""

import email.parser
import importlib
import os
import sys
import tempfile
import zipfile

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib


def backend_of(config):
    system = config.get("build-system", {})
    name = system.get("build-backend", "setuptools.build_meta:__legacy__")
    for path in reversed(system.get("backend-path", [])):
        sys.path.insert(0, os.path.abspath(path))
    module, _, attrs = name.partition(":")
    backend = importlib.import_module(module)
    for attr in filter(None, attrs.split(".")):
        backend = getattr(backend, attr)
    return backend


def metadata_of(backend):
    out = tempfile.mkdtemp()
    hook = getattr(backend, "prepare_metadata_for_build_wheel", None)
    if hook is not None:
        folder = hook(out, {})
        with open(os.path.join(out, folder, "METADATA"), encoding="utf-8") as f:
            return email.parser.Parser().parse(f)
    wheel = backend.build_wheel(out, {})
    with zipfile.ZipFile(os.path.join(out, wheel)) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(z.read(name).decode("utf-8"))


def main():
    copy, work, out, pin = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    os.chdir(copy)
    sys.path.insert(0, copy)
    config = {}
    if os.path.exists("pyproject.toml"):
        with open("pyproject.toml", "rb") as f:
            config = tomllib.load(f)
    metadata = metadata_of(backend_of(config))
    own = canonicalize_name(metadata.get("Name", ""))
    extras = metadata.get_all("Provides-Extra") or []
    chosen = next((e for e in extras if canonicalize_name(e) in ("test", "tests", "testing")), None)
    requires = [Requirement(r) for r in metadata.get_all("Requires-Dist") or []]
    wanted = {chosen} if chosen else set()
    lines, seen, grew = [], set(), True
    while grew:
        grew = False
        for req in requires:
            applies = req.marker is None or any(
                req.marker.evaluate({"extra": e}) for e in (wanted | {""})
            )
            if not applies:
                continue
            if canonicalize_name(req.name) == own:
                if not req.extras <= wanted:
                    wanted |= req.extras
                    grew = True
                continue
            if req.url:
                print(f"a requirement by URL: `{req}`", file=sys.stderr)
                sys.exit(3)
            text = req.name + (f"[{','.join(sorted(req.extras))}]" if req.extras else "") + str(req.specifier)
            if text not in seen:
                seen.add(text)
                lines.append(text)
    if chosen is None:
        with open(os.path.join(work, "more.txt"), encoding="utf-8") as f:
            for line in f.read().splitlines():
                if line.strip() and line not in seen:
                    seen.add(line)
                    lines.append(line)
    names = {canonicalize_name(Requirement(line).name) for line in lines}
    if "pytest" not in names:
        lines.append(pin)
    with open(os.path.join(out, "requirements.txt"), "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    print(f"extra: {chosen or '-'}; {len(lines)} requirements", file=sys.stderr)


main()
