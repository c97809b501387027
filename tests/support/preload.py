"""Test-only LD_PRELOAD shims: a small C source compiled here with the machine's cc (never a
binary in the repository). Skips the calling test when no C compiler is installed."""
import shutil
import subprocess

import pytest


def build_preload(directory, name, source):
    """Compile ``source`` (C text) into DIRECTORY/NAME.so and return its path (str)."""
    cc = shutil.which('cc') or shutil.which('gcc')
    if not cc:
        pytest.skip('no C compiler for the LD_PRELOAD shim')
    src = directory / f'{name}.c'
    src.write_text(source)
    lib = directory / f'{name}.so'
    subprocess.run([cc, '-shared', '-fPIC', '-O2', '-Wall', '-o', str(lib), str(src), '-ldl'],
                   check=True, capture_output=True)
    return str(lib)
