"""The README's Python examples run as written, each as a script of its own
(so `if __name__ == "__main__":` and multiprocessing's spawn work as they
would for a reader)."""

import pathlib
import re
import subprocess
import sys

import pytest

from _support import frameworks_required

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_python_examples():
    assert len(BLOCKS) >= 2, "README.md lost its Python examples"


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, tmp_path):
    uses = [name for name in ("torch", "jax") if re.search(rf"^import {name}\b", BLOCKS[index], flags=re.M)]
    if uses and not frameworks_required():
        for name in uses:
            pytest.importorskip(name)  # only where the xtask installs no frameworks (venv-np1)
    script = tmp_path / f"readme_block_{index}.py"
    script.write_text(BLOCKS[index])
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
