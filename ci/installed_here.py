"""Exit 0 when `postprocess`, `gate`, `ioregress_env` and `iobench_lib` import from this checkout
(the editable install ci/setup.sh makes: `pip install -e .`), else 1 with one line saying where
they come from.

Run as a file (`python3 ci/installed_here.py`), so the checkout itself is not on sys.path: what it
finds is what ReFrame's configuration, the checks and the tests import from anywhere.
"""
import importlib
import os
import sys

CHECKOUT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
PACKAGES = {'postprocess': 'postprocess', 'gate': 'gate', 'ioregress_env': 'ioregress_env.py',
            'iobench_lib': os.path.join('reframe_checks', 'iobench_lib')}


def main():
    for name, where in PACKAGES.items():
        want = os.path.join(CHECKOUT, where)
        try:
            module = importlib.import_module(name)
            # a package is its folder, a module (ioregress_env) its file
            got = os.path.realpath(getattr(module, '__path__', [module.__file__])[0])
        except ImportError:
            print(f'ioregress is not installed (no {name}): run ci/setup.sh or '
                  f'`pip install --no-deps -e {CHECKOUT}`', file=sys.stderr)
            return 1
        if got != want:
            print(f'{name} comes from {got}, not this checkout ({want}): run ci/setup.sh here',
                  file=sys.stderr)
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
