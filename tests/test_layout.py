"""The layout the code is reached through: `pip install -e .` (ci/setup.sh) makes `contract`,
`postprocess`, `gate`, `iobench_lib` and `ioregress_env` importable from anywhere, postprocess never
imports the gate (the gate judges with postprocess, not the other way), bench runs as `python3 -m bench.NAME` from the checkout,
and nothing reaches code by editing the import path; no test imports another test module."""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = {'contract': REPO / 'contract', 'postprocess': REPO / 'postprocess', 'gate': REPO / 'gate',
            'iobench_lib': REPO / 'reframe_checks' / 'iobench_lib'}
MODULES = ['ioregress_env']         # top-level modules (pyproject: py-modules)
TREES = ['tests', 'bench', 'contract', 'reframe_checks', 'postprocess', 'gate', 'configs', 'ci']


def modules(name, root):
    """Every module of a package, dotted, from its files; __main__ (the CLI, which would run) left
    out."""
    out = []
    for path in sorted(root.rglob('*.py')):
        if path.name == '__main__.py':
            continue
        parts = path.relative_to(root).with_suffix('').parts
        if parts[-1] == '__init__':
            parts = parts[:-1]
        out.append('.'.join((name,) + parts))
    return out


def offenders(find):
    """{file: lines} of every Python file of the trees where ``find(ast)`` names lines (this file
    left out: it names what it looks for)."""
    found = {}
    for tree in TREES:
        for path in sorted((REPO / tree).rglob('*.py')):
            if path == Path(__file__).resolve():
                continue
            lines = find(ast.parse(path.read_text(), str(path)))
            if lines:
                found[str(path.relative_to(REPO))] = lines
    return found


def test_every_module_imports_from_anywhere_and_is_this_checkouts(tmp_path):
    """A fresh interpreter in an unrelated directory, no PYTHONPATH: every module of the packages
    imports, from this checkout's files, and the report's templates come with the package."""
    names = [m for name, root in PACKAGES.items() for m in modules(name, root)] + MODULES
    # a folder of modules without __init__.py would import here (a namespace) and be left out of
    # a wheel (pyproject: namespaces = false)
    bare = [str(d) for root in PACKAGES.values() for d in {p.parent for p in root.rglob('*.py')}
            if not (d / '__init__.py').exists()]
    assert not bare, bare
    assert {'postprocess.why.annotate', 'iobench_lib.installed', 'gate.cli', 'contract.perflog'} <= set(names)
    probe = ('import importlib, importlib.resources, json, sys\n'
             'files = {n: importlib.import_module(n).__file__ for n in sys.argv[1:]}\n'
             "files['templates'] = [str(importlib.resources.files(p) / 'templates' / 'index.html')\n"
             "                      for p in ('postprocess.report', 'postprocess.darshan')]\n"
             "files['templates'].append(str(importlib.resources.files('gate') / 'templates' / 'gate.html'))\n"
             'print(json.dumps(files))\n')
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    proc = subprocess.run([sys.executable, '-c', probe, *names], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = json.loads(proc.stdout)
    templates = files.pop('templates')
    assert all(Path(t).is_file() for t in templates), templates
    elsewhere = {n: f for n, f in files.items() if not Path(f).resolve().is_relative_to(REPO)}
    assert not elsewhere, ('installed from another checkout; run ci/setup.sh here', elsewhere)
    # the script setup.sh and nightly.sh ask says so too
    proc = subprocess.run([sys.executable, str(REPO / 'ci' / 'installed_here.py')], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_bench_modules_import_from_the_checkout():
    """`python3 -m bench.NAME` from the repository root: each bench module imports (with what it
    takes from postprocess, iobench_lib and tests.support) without running."""
    names = [f'bench.{p.stem}' for p in sorted((REPO / 'bench').glob('*.py')) if p.stem != '__init__']
    assert 'bench.real_replay' in names
    proc = subprocess.run([sys.executable, '-c', 'import importlib, sys\n'
                           'for n in sys.argv[1:]: importlib.import_module(n)', *names],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = subprocess.run([sys.executable, '-m', 'bench.production_replay', '--help'], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and 'usage:' in proc.stdout, proc.stderr


def path_tricks(tree):
    """Lines where code edits the import path: sys.path, or a PYTHONPATH handed to a child."""
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr == 'path' and isinstance(node.value, ast.Name)
                and node.value.id == 'sys'):
            out.append(node.lineno)
        elif isinstance(node, ast.keyword) and node.arg == 'PYTHONPATH':
            out.append(node.value.lineno)
        elif isinstance(node, ast.Constant) and node.value == 'PYTHONPATH':
            out.append(node.lineno)
    return out


def test_path_tricks_are_found_and_there_are_none():
    assert path_tricks(ast.parse('import sys\nsys.path.insert(0, "x")\n')) == [2]
    assert path_tricks(ast.parse('env = dict(os.environ, PYTHONPATH="x")\n')) == [1]
    found = offenders(path_tricks)
    assert not found, found


def imports_of_tests(tree):
    """Lines importing a test module or conftest (test_x, tests.test_x, conftest)."""
    out = []
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ''] if isinstance(node, ast.ImportFrom) else [])
        out += [node.lineno for n in names
                if any(part.startswith('test_') or part == 'conftest' for part in n.split('.'))]
    return out


def test_no_test_module_imports_another():
    """Shared test code lives in tests/support (fixtures in conftest.py, which pytest finds)."""
    assert imports_of_tests(ast.parse('from test_verdicts import runs_for\nimport conftest\n'
                                           'from tests.support.simruns import runs\n')) == [1, 2]
    found = offenders(imports_of_tests)
    assert not found, found


def imports_of(tree, names):
    """Lines importing one of the top-level ``names`` (import x, import x.y, from x[.y] import)."""
    out = []
    for node in ast.walk(tree):
        mods = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                [node.module or ''] if isinstance(node, ast.ImportFrom) and not node.level else [])
        out += [node.lineno for m in mods if m.split('.')[0] in names]
    return out


def imports_of_test_tree(tree):
    """Lines importing anything of tests/ (tests, tests.support...)."""
    return imports_of(tree, {'tests'})


def test_only_tests_import_from_tests():
    """Data flows one way: bench, the checks, configs and postprocess never lean on the tests."""
    assert imports_of_test_tree(ast.parse('from tests.support import nights\nimport bench\n')) == [1]
    found = {f: lines for f, lines in offenders(imports_of_test_tree).items()
             if not f.startswith('tests/')}
    assert not found, found


def test_postprocess_never_imports_the_gate_and_the_environment_table_imports_nothing():
    """The gate runs ReFrame and judges with postprocess; postprocess knows nothing of it.
    ioregress_env is read by the configs, the checks, postprocess and the gate: it imports none."""
    assert imports_of(ast.parse('from gate import pairs\nimport gate.cli\nfrom . import gate\n'),
                      {'gate'}) == [1, 2]
    found = [str(p.relative_to(REPO)) for p in sorted((REPO / 'postprocess').rglob('*.py'))
             if imports_of(ast.parse(p.read_text()), {'gate'})]
    assert not found, found
    suite = {'postprocess', 'gate', 'iobench_lib', 'bench', 'tests'}
    assert not imports_of(ast.parse((REPO / 'ioregress_env.py').read_text()), suite)


def test_the_checks_reach_postprocess_only_through_the_contract():
    """reframe_checks/ and configs/ (the producer) share with postprocess/ (the consumer) only
    contract/ (docs/CONTRACT.md), and contract/ leans on neither side."""
    found = {}
    for tree, banned in (('reframe_checks', {'postprocess'}), ('configs', {'postprocess'}),
                         ('contract', {'postprocess', 'iobench_lib', 'reframe'})):
        for path in sorted((REPO / tree).rglob('*.py')):
            bad = imports_of(ast.parse(path.read_text(), str(path)), banned)
            if bad:
                found[str(path.relative_to(REPO))] = bad
    assert not found, found
