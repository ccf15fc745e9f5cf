"""The Python examples of the README and of the guide (docs/guide/*.md) run
as written, each as a script of its own (so `if __name__ == "__main__":` and
multiprocessing's spawn work as they would for a reader). The docs suite of
`cargo xtask test` runs this file; the python suite leaves it to it."""

import pathlib
import re
import subprocess
import sys

import pytest

from _support import frameworks_required

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]


def _blocks(path):
    """Each ```python block of a markdown file, with the line it starts on."""
    text = path.read_text()
    for match in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
        yield text.count("\n", 0, match.start()) + 2, match.group(1)


BLOCKS = [(f"{path.relative_to(ROOT)}:{line}", code) for path in SOURCES for line, code in _blocks(path)]


def test_docs_have_python_examples():
    assert len(BLOCKS) >= 20, f"only {len(BLOCKS)} Python examples in the README and the guide"
    chapters = {name.split(":")[0] for name, _ in BLOCKS}
    for chapter in ("README.md", "docs/guide/getting-started.md", "docs/guide/files.md", "docs/guide/gpu.md"):
        assert chapter in chapters, f"{chapter} lost its Python examples"


@pytest.mark.parametrize("code", [code for _, code in BLOCKS], ids=[name for name, _ in BLOCKS])
def test_example_runs(code, tmp_path):
    uses = [name for name in ("torch", "jax") if re.search(rf"^import {name}\b", code, flags=re.M)]
    if uses and not frameworks_required():
        for name in uses:
            pytest.importorskip(name)  # only where the xtask installs no frameworks (venv-np1)
    script = tmp_path / "example.py"
    script.write_text(code)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
