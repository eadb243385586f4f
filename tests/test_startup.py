"""Start-up stays light (issue 26): ``import dodb`` and ``dodb --help`` load none of the
engine's heavy modules; they load on first use (dodb/lazy.py)."""
from __future__ import annotations

import subprocess
import sys

# rich draws tables and progress: it loads when something is drawn, never to start up
HEAVY = ("numpy", "duckdb", "numba", "sqlglot", "pyarrow", "pandas", "polars", "matplotlib", "rich")
_LOADED = "import sys; print(' '.join(m for m in {heavy!r} if m in sys.modules))"


def _loaded_after(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code + "; " + _LOADED.format(heavy=HEAVY)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_import_dodb_loads_no_heavy_module():
    assert _loaded_after("import dodb; dodb.DodbError") == []
    assert _loaded_after("import dodb; import sys; assert 'click' not in sys.modules") == []  # the CLI's alone


def test_cli_help_loads_no_heavy_module():
    code = ("import contextlib, io\nfrom dodb.cli import main\nwith contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n")
    out = subprocess.run([sys.executable, "-c", code + _LOADED.format(heavy=HEAVY)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == []


def test_first_use_loads_the_engine():
    assert "duckdb" in _loaded_after("import dodb; dodb.connect")
