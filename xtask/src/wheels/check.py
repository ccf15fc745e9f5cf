"""Checks what `cargo xtask wheels` built: every wheel (and the sdist) has
what a package index shows and what `pip install bytelens` users expect.

usage: python check.py WHEEL_OR_SDIST...

For each wheel: the tag (cp311-abi3-<platform>), the extension module, the
stubs (`_native.pyi`) and `py.typed`, the `bytelens` console command, the
GPU feature where the platform links it (`--no-gpu WHEEL` names those
that were built without), and the metadata: summary, license, classifiers
for every tested Python version and operating system, project URLs, and the
README as a Markdown long description. For the sdist: the same metadata in
PKG-INFO, and the sources a build needs. Prints one line per artifact and
exits 1 if any check failed, naming each failure.
"""

import configparser
import email.parser
import sys
import tarfile
import zipfile
from pathlib import Path

PYTHONS = ("3.11", "3.12", "3.13")
SYSTEMS = ("POSIX :: Linux", "Microsoft :: Windows", "MacOS")
URLS = ("Homepage", "Documentation", "Repository", "Issues", "Changelog")
# wgpu's panic locations name its crate's sources: a build without the
# `gpu` feature has none of them.
GPU_MARK = b"wgpu-core-"


def metadata_problems(text: str) -> list[str]:
    """What the core metadata `text` (METADATA or PKG-INFO) lacks."""
    meta = email.parser.Parser().parsestr(text)
    problems = []
    for field in ("Name", "Version", "Summary", "License-Expression", "Requires-Python"):
        if not meta.get(field):
            problems.append(f"no {field}")
    if meta.get("Requires-Python") != ">=3.11":
        problems.append(f"Requires-Python is {meta.get('Requires-Python')!r}, not '>=3.11'")
    classifiers = meta.get_all("Classifier") or []
    for version in PYTHONS:
        if f"Programming Language :: Python :: {version}" not in classifiers:
            problems.append(f"no classifier for Python {version}")
    for system in SYSTEMS:
        if f"Operating System :: {system}" not in classifiers:
            problems.append(f"no classifier for {system}")
    urls = [u.split(",")[0].strip() for u in meta.get_all("Project-URL") or []]
    for label in URLS:
        if label not in urls:
            problems.append(f"no {label} URL")
    if not (meta.get("Description-Content-Type") or "").startswith("text/markdown"):
        problems.append("the long description is not Markdown")
    if not meta.get_payload().lstrip().startswith("# bytelens"):
        problems.append("the long description is not the README")
    if "numpy>=1.26" not in (meta.get_all("Requires-Dist") or []):
        problems.append("numpy is not a requirement")
    return problems


def check_wheel(path: Path, gpu: bool) -> list[str]:
    problems = []
    with zipfile.ZipFile(path) as whl:
        names = whl.namelist()
        info = next(n for n in names if n.endswith(".dist-info/WHEEL"))
        dist_info = info.rsplit("/", 1)[0]
        tags = [
            line.split(":", 1)[1].strip()
            for line in whl.read(info).decode().splitlines()
            if line.startswith("Tag:")
        ]
        if not tags or not all(t.startswith("cp311-abi3-") for t in tags):
            problems.append(f"tags {tags}, not cp311-abi3-*")
        native = [n for n in names if n.startswith("bytelens/_native.") and n.endswith((".so", ".pyd"))]
        if len(native) != 1:
            problems.append(f"extension modules {native}, not one")
        elif native[0] not in ("bytelens/_native.abi3.so", "bytelens/_native.pyd"):
            problems.append(f"{native[0]} is not named for the stable ABI")
        elif gpu != (GPU_MARK in whl.read(native[0])):
            problems.append("built without the gpu feature" if gpu else "has the gpu feature")
        for needed in ("bytelens/__init__.py", "bytelens/__main__.py", "bytelens/_native.pyi", "bytelens/py.typed"):
            if needed not in names:
                problems.append(f"no {needed}")
        entry_points = configparser.ConfigParser(delimiters=("=",))
        entry_points.read_string(whl.read(f"{dist_info}/entry_points.txt").decode())
        scripts = entry_points["console_scripts"] if "console_scripts" in entry_points else {}
        if scripts.get("bytelens", "").strip() != "bytelens.__main__:main":
            problems.append("no `bytelens` console command")
        problems += metadata_problems(whl.read(f"{dist_info}/METADATA").decode())
    return problems


def check_sdist(path: Path) -> list[str]:
    with tarfile.open(path) as sdist:
        names = sdist.getnames()
        top = names[0].split("/", 1)[0]
        problems = []
        for needed in ("pyproject.toml", "PKG-INFO", "bytelens/_native.pyi", "bytelens/py.typed", "native/python/src/lib.rs"):
            if not any(n.endswith(f"/{needed}") for n in names):
                problems.append(f"no {needed}")
        if not any(n.endswith("/Cargo.lock") for n in names):
            problems.append("no Cargo.lock (the build would not be the tested one)")
        member = sdist.extractfile(f"{top}/PKG-INFO")
        problems += metadata_problems(member.read().decode() if member else "")
    return problems


def main(args: list[str]) -> int:
    no_gpu = set()
    paths = []
    while args:
        arg = args.pop(0)
        if arg == "--no-gpu":
            no_gpu.add(Path(args.pop(0)).name)
        else:
            paths.append(Path(arg))
    failed = False
    for path in paths:
        if path.name.endswith(".tar.gz"):
            problems = check_sdist(path)
        else:
            problems = check_wheel(path, gpu=path.name not in no_gpu)
        if problems:
            failed = True
            print(f"{path.name}: " + "; ".join(problems))
        else:
            print(f"{path.name}: tag, files, console command and metadata ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
