"""Atomic output: write to a temporary file in the target directory, then rename over the target.

A reader never sees a half-written file and an interrupted run leaves the old file intact.
"""
import contextlib
import errno
import os
import tempfile


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; on success rename it to ``path``, else remove it."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    make_dirs(directory)
    base = os.path.basename(path)
    fd, tmp = tempfile.mkstemp(prefix=f'.{base}.', suffix='.tmp', dir=directory)
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def make_dirs(directory):
    """os.makedirs, but a regular file in the way is named as such (not 'File exists')."""
    probe = directory
    while probe and not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if probe and not os.path.isdir(probe):
        raise NotADirectoryError(errno.ENOTDIR, 'not a directory', probe)
    os.makedirs(directory, exist_ok=True)


def write_text(path, text):
    with atomic_path(path) as tmp:
        with open(tmp, 'w', encoding='utf-8') as fp:
            fp.write(text)
            fp.flush()
            os.fsync(fp.fileno())


def save_figure(fig, path, **kwargs):
    """Save a matplotlib figure atomically; the format comes from ``path``'s extension."""
    fmt = os.path.splitext(path)[1].lstrip('.') or 'png'
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=fmt, **kwargs)
