"""Stacks that are Spack environments: their parts are the packages whose versions differ.

On a site that builds iobench with Spack (partition extras ``iobench_build: spack``), a stack is
a ReFrame environment whose extras ``spack_env`` names a Spack environment directory (with its
``spack.lock``); the build fixture installs that environment (reframe_checks/iobench_lib/
spack_build.py). When A and B differ in ``spack_env``, ``--bisect`` replaces that one part by the
packages whose concrete versions differ between the two locks (``spack <name>: 1.12.2 -> 1.14.3``;
a package only one side has counts too). A mix is a new Spack environment made by Spack itself:
``spack env create -d <mix> <A>/spack.yaml`` (Spack rewrites the manifest's relative paths), then
for each package taken from B its ``packages:`` entry from B's manifest (externals, variants) and
a requirement ``@=<B's version>`` added with ``spack config add -f``, then ``spack concretize -f``;
the gate's warm-up slot installs it like any stack. Without Spack the bisection says so and names
nothing; the gate's verdict stands.
"""
import os
import shutil
import subprocess

import yaml

import ioregress_env
from gate.stacks import Part
from iobench_lib import spack_lock

KEY = 'spack_env'


class SpackMissing(Exception):
    """No Spack to build a mix with: the bisection is skipped with this reason."""


def spack_command(environ=None):
    """The spack executable ($IOREGRESS_SPACK_ROOT/bin first, as spack_build.py), or None."""
    root = ioregress_env.get('IOREGRESS_SPACK_ROOT', environ)
    path = (os.path.join(root, 'bin') + os.pathsep if root else '') + \
        (os.environ if environ is None else environ).get('PATH', '')
    return shutil.which('spack', path=path)


def expand(parts):
    """``parts`` with an ``extras spack_env`` part replaced by one part per package whose version
    differs between the two locks (left as it is when either side has no lock)."""
    out = []
    for p in parts:
        va = spack_lock.versions(p.a) if p.kind == 'extras' and p.key == KEY and p.a else None
        vb = spack_lock.versions(p.b) if va is not None and p.b else None
        if vb is None:
            out.append(p)
            continue
        for name in sorted(set(va) | set(vb)):
            if va.get(name) != vb.get(name):
                part = Part('spack', name, va.get(name), vb.get(name))
                part.dirs = (p.a, p.b)
                out.append(part)
    return out


def realise(taken, out_dir, log=print):
    """Make the Spack environment of A with the packages ``taken`` (spack parts) as in B;
    returns its directory. SpackMissing when there is no Spack."""
    spack = spack_command()
    if spack is None:
        raise SpackMissing('no spack on PATH and no $IOREGRESS_SPACK_ROOT: the mixes of a '
                           'spack.lock difference cannot be built here')
    a_dir, b_dir = taken[0].dirs
    with open(os.path.join(b_dir, 'spack.yaml')) as fp:
        b_packages = (yaml.safe_load(fp).get('spack') or {}).get('packages') or {}
    os.makedirs(os.path.dirname(out_dir), exist_ok=True)
    _spack(spack, ['env', 'create', '-d', out_dir, os.path.join(a_dir, 'spack.yaml')], log)
    for p in taken:
        entry = dict(b_packages.get(p.key) or {})
        if p.b is not None:
            entry['require'] = [f'@={p.b}']
        add = os.path.join(out_dir, f'gate-{p.key}.yaml')
        with open(add, 'w') as fp:
            yaml.safe_dump({'packages': {p.key: entry}}, fp)
        _spack(spack, ['-e', out_dir, 'config', 'add', '-f', add], log)
    _spack(spack, ['-e', out_dir, 'concretize', '-f'], log)
    return out_dir


def _spack(spack, args, log):
    log(f'gate: spack {" ".join(args)}')
    proc = subprocess.run([spack] + args, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ['']
        raise SpackMissing(f'spack {" ".join(args[:3])} failed: {tail[0]}')
    return proc.stdout
