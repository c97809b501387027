"""The docs are true: every command line README.md and docs/*.md show runs against its `--help`
(the postprocess subcommand exists and takes each --option, the gate takes each --option; ci/*.sh
and reframe take each option; a bench module exists and declares it), every repository path they name exists, every
relative link lands on a file (and heading), and no line carries a run's date or time other than
a figure's "measured on" date.

A doc that names a command, option or path that does not exist fails here with the doc, the
line and the bad word; the fix is in the doc (or the code), never in this file's rules.
"""
import functools
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / 'README.md', REPO / 'CHANGELOG.md'] + sorted((REPO / 'docs').glob('*.md'))
TOP = ('src', 'ci', 'docs', 'configs', 'postprocess', 'gate', 'reframe_checks', 'tests', 'bench',
       'spack_env', '.ci', '.github')
# Files a run or a site writes, named by the docs but never in the tree.
GENERATED = {'gate-settings.py', '.gitlab-ci.yml'}
# Where a doc's bare relative path may start (the checks name iobench_lib/… as they import it).
ROOTS = ('', 'reframe_checks', 'src')
EXT = r'(?:py|md|sh|yml|yaml|toml|c|h|cfg|txt)'


def lines_of(doc):
    """(line number, logical line) of a doc: fenced and indented code lines joined over `\\`."""
    out, held, start = [], '', 0
    for no, line in enumerate(doc.read_text().splitlines(), 1):
        if held:
            line, no = held + ' ' + line.strip(), start
        if line.rstrip().endswith('\\'):
            held, start = line.rstrip()[:-1], no
            continue
        held = ''
        out.append((no, line))
    return out


def spans(text):
    """Inline code spans and indented/fenced code of one line."""
    found = re.findall(r'`([^`]+)`', text)
    if text.startswith('    ') and not text.lstrip().startswith(('-', '|', '*')):
        found.append(text.strip())
    return found


# ---- commands ---------------------------------------------------------------------------------
@functools.lru_cache(None)
def postprocess_help():
    """{subcommand: its --help text} from the real parser (what `--help` prints)."""
    from postprocess.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == '_SubParsersAction')
    return {name: p.format_help() for name, p in sub.choices.items()}


@functools.lru_cache(None)
def gate_help():
    """What `python -m gate --help` prints, from the real parser."""
    from gate.cli import build_parser
    return build_parser().format_help()


@functools.lru_cache(None)
def help_of(*argv):
    proc = subprocess.run(list(argv), cwd=REPO, capture_output=True, text=True, timeout=120)
    return proc.stdout + proc.stderr


def placeholder(word):
    """CMD, NAME, <command>: a doc's stand-in, not a name."""
    return word.rstrip(':').isupper() or word.startswith('<')


def options(tokens):
    return [t.split('=', 1)[0].strip('[]),.;') for t in tokens if re.match(r'\[?--[a-z]', t)]


def command_faults(cmd):
    """What is wrong with one command line ([] when it all exists)."""
    try:
        tokens = shlex.split(cmd.replace('…', '').replace('...', ''))
    except ValueError:
        tokens = cmd.split()
    out = []
    for i, tok in enumerate(tokens):
        rest = tokens[i + 1:]
        if tok in ('python', 'python3') and rest[:2] == ['-m', 'postprocess']:
            args = [a for a in rest[2:] if a not in ('|', '&&')]
            args = args[:args.index('|')] if '|' in args else args
            if not args or args[0].startswith('-'):
                out += [o for o in options(args) if o != '--help']
                continue
            name = args[0]
            if placeholder(name):
                continue
            text = postprocess_help().get(name)
            if text is None:
                out.append(f'postprocess {name}')
                continue
            out += [f'postprocess {name} {o}' for o in options(args[1:]) if o not in text.split()
                    and not re.search(re.escape(o) + r'\b', text)]
        elif tok in ('python', 'python3') and rest[:2] == ['-m', 'gate']:
            out += [f'gate {o}' for o in options(rest[2:]) if o not in gate_help().split()
                    and not re.search(re.escape(o) + r'\b', gate_help())]
        elif tok in ('python', 'python3') and rest[:1] == ['-m'] and rest[1:2] \
                and rest[1].startswith('bench.') and not placeholder(rest[1].split('.', 1)[1]):
            src = REPO / (rest[1].replace('.', '/') + '.py')
            if not src.is_file():
                out.append(rest[1])
                continue
            body = src.read_text()
            out += [f'{rest[1]} {o}' for o in options(rest[2:])
                    if f"'{o}'" not in body and f'"{o}"' not in body]
        elif re.fullmatch(r'(\./)?ci/[\w-]+\.sh', tok) or tok in ('.ci/run',):
            script = REPO / tok.lstrip('./') if not tok.startswith('.ci') else REPO / tok
            if not script.is_file():
                out.append(tok)
                continue
            if script.suffix == '.sh' and script.name in ('nightly.sh', 'gate.sh'):
                text = help_of('bash', str(script), '--help')
                args = rest[:rest.index('--')] if '--' in rest else rest
                args = args[:args.index('&&')] if '&&' in args else args
                out += [f'{tok} {o}' for o in options(args) if o not in text]
        elif tok == 'reframe' and i == 0:
            text = help_of('reframe', '--help')
            out += [f'reframe {o}' for o in options(rest) if o not in text]
    return out


def test_every_documented_command_exists():
    faults = []
    for doc in DOCS:
        if not doc.exists():
            continue
        for no, line in lines_of(doc):
            for span in spans(line):
                for fault in command_faults(span):
                    faults.append(f'{doc.relative_to(REPO)}:{no}: {fault}')
            # prose like "`detect --all-nights`": a subcommand with its option in one code span
            for span in re.findall(r'`([a-z-]+ --[^`]+)`', line):
                name = span.split()[0]
                if name in postprocess_help():
                    text = postprocess_help()[name]
                    faults += [f'{doc.relative_to(REPO)}:{no}: postprocess {name} {o}'
                               for o in options(span.split()[1:]) if o not in text]
    assert not faults, 'commands or options the docs name that do not exist:\n' + '\n'.join(faults)


def test_the_checker_catches_what_does_not_exist():
    """The rules can fail: a made-up subcommand, option, script and bench module are named."""
    assert command_faults('python -m postprocess why --run x') == ['postprocess why']
    assert command_faults('python3 -m postprocess detect --perflog x') == ['postprocess detect --perflog']
    assert command_faults('ci/nightly.sh --tag nightly --db x') == ['ci/nightly.sh --db']
    assert command_faults('python3 -m bench.nosuch') == ['bench.nosuch']
    assert command_faults('python -m gate --a x --b y --nosuch') == ['gate --nosuch']
    assert command_faults('python -m postprocess detect --store s --system local') == []
    assert path_faults('see configs/systems/nosuch.py', REPO / 'docs') == ['configs/systems/nosuch.py']
    assert path_faults('a DESIGN.md', REPO) == ['DESIGN.md']


# ---- paths ------------------------------------------------------------------------------------
@functools.lru_cache(None)
def tracked():
    files = subprocess.run(['git', 'ls-files'], cwd=REPO, capture_output=True, text=True).stdout.split()
    return {Path(f).name for f in files}


def exists(rel, base):
    pattern = re.sub(r'<[^>]*>', '*', rel).rstrip('/')
    for root in [base] + [REPO / r for r in ROOTS]:
        if any(root.glob(pattern)) if any(c in pattern for c in '*?[') else (root / pattern).exists():
            return True
    return False


def path_faults(text, base):
    """Repository paths named in ``text`` that are not in the tree (relative to ``base``, the
    repository or one of ROOTS)."""
    out = []
    for m in re.finditer(r'(?<![\w./$~-])((?:\.\./)*(?:\.?[\w<>*-]+/)*[\w<>*.-]+\.' + EXT + r')\b', text):
        path = m.group(1)
        if '/' not in path:
            if path.endswith(('.py', '.md', '.sh', '.yml', '.yaml', '.toml')) and '<' not in path \
                    and '*' not in path and path not in tracked() and path not in GENERATED:
                out.append(path)
            continue
        first = path.split('/')[0]
        if first in ('results', 'RUN', 'run') or not (first in TOP or first in ('iobench_lib', '..')
                                                        or path.startswith(('./', '../'))
                                                        or exists(path, base)):
            continue
        if not exists(path, base):
            out.append(path)
    return out


def test_every_documented_path_exists():
    faults = []
    for doc in DOCS:
        if not doc.exists():
            continue
        for no, line in lines_of(doc):
            words = ' '.join(spans(line))
            links = re.findall(r'\]\(([^)#\s]+)(?:#[^)]*)?\)', line)
            for path in path_faults(words, doc.parent) + [
                    lk for lk in links if '://' not in lk and not (doc.parent / lk).exists()]:
                faults.append(f'{doc.relative_to(REPO)}:{no}: {path}')
    assert not faults, 'paths the docs name that are not in the tree:\n' + '\n'.join(faults)


def slug(heading):
    """GitHub's anchor of a heading."""
    text = re.sub(r'[^\w\- ]', '', heading.strip().lower().replace('`', ''))
    return text.replace(' ', '-')


def test_every_link_anchor_exists():
    faults = []
    for doc in DOCS:
        if not doc.exists():
            continue
        for no, line in lines_of(doc):
            for target, anchor in re.findall(r'\]\(([^)#\s]*)#([^)\s]+)\)', line):
                dest = (doc.parent / target) if target else doc
                if not dest.is_file() or dest.suffix != '.md':
                    continue
                heads = {slug(h) for h in re.findall(r'^#+ (.*)$', dest.read_text(), re.M)}
                if anchor not in heads:
                    faults.append(f'{doc.relative_to(REPO)}:{no}: {target}#{anchor}')
    assert not faults, 'links to headings that do not exist:\n' + '\n'.join(faults)


# ---- no lab notebook --------------------------------------------------------------------------
# Pages whose run logs their owners are moving out in another change (remove once merged).
NOT_YET = set()
DATE = re.compile(r'\b20\d\d-\d\d-\d\d\b|\b\d\d:\d\d(?::\d\d)?(?:[–-]\d\d:\d\d)? ?UTC\b')


def test_no_run_log_in_the_docs():
    """A date stays only as a figure's "measured on" date (or in CHANGELOG.md, which is the
    place for history); a clock time of a run never."""
    faults = []
    for doc in DOCS:
        if not doc.exists() or doc.name == 'CHANGELOG.md' or \
                str(doc.relative_to(REPO)) in NOT_YET:
            continue
        text = doc.read_text()
        for no, line in enumerate(text.splitlines(), 1):
            for m in DATE.finditer(line):
                if re.search(r'measured on ' + re.escape(m.group(0)), line, re.I) or \
                        _example(line, m.group(0)) or _measured_cell(text, line, m.group(0)):
                    continue
                faults.append(f'{doc.relative_to(REPO)}:{no}: {m.group(0)}: {line.strip()[:90]}')
    assert not faults, 'run dates or times in the docs (CHANGELOG.md or "measured on"):\n' + \
        '\n'.join(faults)


def _measured_cell(text, line, date):
    """A figures table's last cell under a "measured on" heading."""
    return line.startswith('|') and re.search(r'\|\s*' + date + r'\s*\|\s*$', line) \
        and '| measured on |' in text


def _example(line, date):
    """Dates inside code (an example command's argument, a JSON field, a sample output)."""
    return any(date in s for s in spans(line)) or line.startswith('    ')


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-p', 'no:xdist', '-q']))
