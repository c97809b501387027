"""Lustre striping for iobench runs: a mixin (RegressionTestPlugin) of IOBenchBase.

The stripe menu is partition configuration, extras 'stripes', in either form:
    'stripes': ['default', 'c1-S1M', 'c4-S4M', 'c-1-S128M']          # names say count and size
    'stripes': {'default': None, 'wide': {'count': -1, 'size': '128M'}}
'default' leaves the filesystem's layout alone (it is still read back on +lustre). A name
`c<count>-S<size>` means `lfs setstripe -c <count> -S <size>`; count -1 is all OSTs, size takes
K/M/G suffixes (powers of 1024) and must be a power-of-two multiple of 64 KiB.

The `stripe` parameter: parameter values are fixed when the check class is defined, so
`stripe_menu()` reads the menus of the *selected system's* partitions at import time (ReFrame has
loaded the configuration by then) and the checks declare `stripe = parameter(stripe_menu())`. A
test whose stripe is not on its own partition's menu is skipped with that reason; `-P stripe=...`
still overrides. Off Lustre (no +lustre feature) every stripe but 'default' skips with the reason.

On +lustre partitions, before iobench starts (base.py's prerun, right after `mkdir run_dir`):
`lfs setstripe -c COUNT -S SIZE run_dir`, then `lfs getstripe -d run_dir > lustre-dir-layout.txt`.
Sanity parses that read-back (plain and PFL/composite output) and fails if the layout differs, if
the data were not on Lustre, or if ROMIO's striping_factor/striping_unit read back differ;
Darshan's LUSTRE records are checked by the Darshan mixin via `darshan_expect_stripe`.

Library knobs follow the stripe only where the check (or `-S stripe_follow=...`) says so:
`stripe_follow` lists any of FOLLOW_KNOBS, or ['all']. Given hints/params are never overridden.
"""
import os
import re
import shlex

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import variable
from reframe.core.exceptions import ConfigError, ReframeFatalError

LAYOUT_FILE = 'lustre-dir-layout.txt'
MIN_STRIPE = 64 * 1024
_UNITS = {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3}
_NAME_RE = re.compile(r'^c(-?\d+)-S(\d+[KMG]?)$')
_SAFE_NAME = re.compile(r'^[A-Za-z0-9_.+-]+$')
#: knob -> (backends it applies to, what it sets)
FOLLOW_KNOBS = {
    'mpiio_striping': (('mpiio', 'hdf5'), 'MPI-IO hints striping_factor=count, striping_unit=size'),
    'cb_nodes': (('mpiio', 'hdf5'), 'MPI-IO hint cb_nodes=count (one aggregator per OST)'),
    'hdf5_alignment': (('hdf5',), 'HDF5 --param alignment=size (H5Pset_alignment)'),
    'sionlib_fsblksize': (('sionlib',), 'SIONlib --param fsblksize=size'),
    # the HDF5 engine has no aggregators: ADIOS2 would reject NumAggregators there
    'adios2_aggregators': (('adios2:bp5', 'adios2:bp4'), 'ADIOS2 --param NumAggregators=count'),
}


class StripeError(ConfigError):
    """A stripe menu entry that must not reach a shell."""


def parse_size(text):
    """Bytes of a stripe size like 1048576, '64K', '4M', '1G' (suffixes are powers of 1024)."""
    m = re.fullmatch(r'(\d+)([KMG]?)', str(text).strip().upper())
    if not m:
        raise StripeError(f'bad stripe size {text!r} (a number with optional K, M or G)')
    return int(m.group(1)) * _UNITS[m.group(2)]


def validate(count, size):
    """(count, size_bytes) checked: count an integer >= -1, size a power-of-two multiple of 64 KiB."""
    if isinstance(count, bool) or not isinstance(count, (int, str)) or \
            not re.fullmatch(r'-?\d+', str(count).strip()) or int(count) < -1:
        raise StripeError(f'bad stripe count {count!r} (an integer >= -1; -1 = all OSTs)')
    nbytes = size if isinstance(size, int) and not isinstance(size, bool) else parse_size(size)
    if nbytes < MIN_STRIPE or nbytes % MIN_STRIPE or nbytes & (nbytes - 1):
        raise StripeError(f'bad stripe size {size!r} (a power-of-two multiple of 64 KiB)')
    return int(count), nbytes


def menu_of(extras):
    """{name: None | (count, size_bytes)} of a partition's extras 'stripes' (validated)."""
    raw = extras.get('stripes', ['default'])
    entries = raw.items() if isinstance(raw, dict) else ((name, None) for name in raw)
    menu = {}
    for name, spec in entries:
        if not isinstance(name, str) or not _SAFE_NAME.match(name):
            raise StripeError(f'bad stripe name {name!r} (letters, digits, _ . + - only)')
        if name == 'default':
            menu[name] = None
        elif isinstance(spec, dict):
            if set(spec) - {'count', 'size'} or 'count' not in spec or 'size' not in spec:
                raise StripeError(f'stripe {name!r}: give exactly count and size, not {spec!r}')
            menu[name] = validate(spec['count'], spec['size'])
        else:
            m = _NAME_RE.match(name)
            if not m:
                raise StripeError(f"bad stripe name {name!r} (expected 'default' or "
                                  "c<count>-S<size>, e.g. c4-S4M)")
            menu[name] = validate(m.group(1), m.group(2))
    return menu


def stripe_menu():
    """Stripe names of every partition of the selected system, 'default' first (for parameter())."""
    names = ['default']
    try:
        import reframe.core.runtime as rt
        partitions = rt.runtime().system.partitions
    except (Exception, ReframeFatalError):   # no ReFrame runtime (plain import, pytest): the neutral menu
        return names
    for part in partitions:
        try:
            names += [n for n in menu_of(part.extras) if n not in names]
        except StripeError:
            continue       # reported per test at setup, where it fails only that partition
    return names


def setstripe_command(run_dir, count, size, lfs='lfs'):
    count, size = validate(count, size)
    return f'{shlex.quote(lfs)} setstripe -c {count} -S {size} {shlex.quote(run_dir)}'


def getstripe_command(run_dir, out=LAYOUT_FILE, lfs='lfs'):
    return f'{shlex.quote(lfs)} getstripe -d {shlex.quote(run_dir)} > {shlex.quote(out)}'


def _value(text):
    text = text.strip()
    if text == 'EOF':
        return None
    if re.fullmatch(r'-?\d+', text):
        return int(text)
    if re.fullmatch(r'\d+[KMG]', text, re.I):
        return parse_size(text)
    return text


def parse_getstripe(text):
    """Components of the first path in `lfs getstripe [-d]` output, plain or PFL/composite:
    [{'start': int, 'end': int | None (EOF), 'stripe_count': int, 'stripe_size': int}, ...].
    A plain layout is one component [0, EOF). Raises ValueError if no layout is found."""
    pairs = [(k.replace('lmm_', '', 1), _value(v)) for line in text.splitlines()
             for k, v in re.findall(r'([A-Za-z_.]+):\s+(\S+)', line)]
    if any(k.startswith('lcm_') for k, _ in pairs):
        comps, cur, seen_header = [], None, False
        for key, val in pairs:
            if key == 'lcm_layout_gen':
                if seen_header:
                    break               # the next path's layout
                seen_header = True
            elif key == 'lcme_id':
                cur = {'start': 0, 'end': None}
                comps.append(cur)
            elif cur is not None and key == 'lcme_extent.e_start':
                cur['start'] = val
            elif cur is not None and key == 'lcme_extent.e_end':
                cur['end'] = val
            elif cur is not None and key in ('stripe_count', 'stripe_size'):
                cur[key] = val
    else:
        plain = {'start': 0, 'end': None}
        for key, val in pairs:
            if key in ('stripe_count', 'stripe_size') and key not in plain:
                plain[key] = val
        comps = [plain]
    comps = [c for c in comps if isinstance(c.get('stripe_count'), int)
             and isinstance(c.get('stripe_size'), int)]
    if not comps:
        raise ValueError('no stripe_count/stripe_size found in lfs getstripe output')
    return comps


def layout_problems(components, count, size):
    """Sentences saying how a read-back layout differs from a plain (count, size) request."""
    if len(components) != 1:
        return [f'layout has {len(components)} components (composite/PFL), expected one plain '
                f'layout -c {count} -S {size}']
    got = components[0]
    out = []
    if got['stripe_size'] != size:
        out.append(f'stripe_size {got["stripe_size"]} != requested {size}')
    # -1 stays -1 in a directory's default layout; a file shows the OST count it got.
    if got['stripe_count'] != count and not (count == -1 and got['stripe_count'] > 0):
        out.append(f'stripe_count {got["stripe_count"]} != requested {count}')
    return out


def follow_args(knobs, backend, count, size, hints, params, mode=None):
    """iobench arguments that make the library follow the stripe, and what was not applied.
    A knob applies to a backend, or to one backend:mode only."""
    knobs = list(FOLLOW_KNOBS) if 'all' in knobs else list(knobs)
    args, notes = [], []
    for knob in knobs:
        if knob not in FOLLOW_KNOBS:
            raise ConfigError(f'unknown stripe_follow knob {knob!r} (known: '
                              f'{", ".join(FOLLOW_KNOBS)}, all)')
        if backend not in FOLLOW_KNOBS[knob][0] and f'{backend}:{mode}' not in FOLLOW_KNOBS[knob][0]:
            continue
        sets = {'mpiio_striping': [('hint', 'striping_factor', count),
                                   ('hint', 'striping_unit', size)],
                'cb_nodes': [('hint', 'cb_nodes', count)],
                'hdf5_alignment': [('param', 'alignment', size)],
                'sionlib_fsblksize': [('param', 'fsblksize', size)],
                'adios2_aggregators': [('param', 'NumAggregators', count)]}[knob]
        for kind, key, val in sets:
            given = hints if kind == 'hint' else params
            if key in given:
                notes.append(f'{key}: check sets {given[key]}')
            elif val == -1:
                notes.append(f'{key}: not set for stripe count -1 (OST count unknown here)')
            else:
                args += [f'--{kind}', f'{key}={val}']
    return args, notes


class LustreStripe(rfm.RegressionTestPlugin):
    #: Library knobs that follow the stripe (see FOLLOW_KNOBS), or ['all']; [] = none.
    stripe_follow = variable(typ.List[str], value=[])
    #: The `lfs` command (partition extras 'lfs' override it).
    lfs_command = variable(str, value='lfs')

    _stripe_req = None        # (count, size_bytes) requested on this run, or None
    _stripe_notes = ()

    def _on_lustre(self):
        return 'lustre' in self.current_partition.features

    def _lfs(self):
        return self.current_partition.extras.get('lfs', self.lfs_command)

    def lustre_skip_reason(self):
        part = self.current_partition
        menu = menu_of(part.extras)          # a bad entry raises: fails the test, names it
        if self.stripe not in menu:
            return (f'stripe {self.stripe!r} is not on {part.fullname}\'s menu '
                    f'({", ".join(menu)})')
        if self.stripe != 'default' and not self._on_lustre():
            return (f'stripe {self.stripe!r} needs a +lustre partition; '
                    f'{part.fullname} has none')
        self._stripe_req = menu[self.stripe]
        return None

    def lustre_prepare(self, run_dir):
        if not self._on_lustre():
            return []
        cmds = []
        if self._stripe_req is not None:
            cmds.append(setstripe_command(run_dir, *self._stripe_req, lfs=self._lfs()))
            if hasattr(self, 'darshan_expect_stripe'):
                self.darshan_expect_stripe = self._stripe_req
        cmds.append(getstripe_command(run_dir, lfs=self._lfs()))
        self.keep_files = list(self.keep_files) + [LAYOUT_FILE]
        return cmds

    def lustre_iobench_args(self):
        if self._stripe_req is None:
            return []
        args, self._stripe_notes = follow_args(self.stripe_follow, self.backend,
                                               *self._stripe_req, self.hints, self.params,
                                               mode=self.mode)
        return args

    def _read_layout(self):
        with open(os.path.join(self.stagedir, LAYOUT_FILE)) as fp:
            return parse_getstripe(fp.read())

    def lustre_sanity(self):
        if not self._on_lustre():
            return []
        problems = []
        fs_type = (self.iob_result or {}).get('fs_type')
        if fs_type and fs_type != 'lustre':
            problems.append(f'run dir is on {fs_type}, not Lustre (check extras scratch)')
        if self._stripe_req is None:
            return problems
        count, size = self._stripe_req
        try:
            problems += [f'{LAYOUT_FILE}: {p}' for p in
                         layout_problems(self._read_layout(), count, size)]
        except (OSError, ValueError) as err:
            problems.append(f'stripe not confirmed: cannot read {LAYOUT_FILE}: {err}')
        in_effect = (self.iob_result or {}).get('hints_in_effect') or {}
        for key, want in (('striping_factor', count), ('striping_unit', size)):
            if key in in_effect and want != -1 and str(in_effect[key]) != str(want):
                problems.append(f'MPI-IO reports {key}={in_effect[key]}, requested {want}')
        return problems

    def lustre_perf_values(self):
        return {}

    def lustre_provenance(self):
        prov = {'stripe': self.stripe}
        if self._stripe_req is not None:
            prov['requested'] = {'count': self._stripe_req[0], 'size': self._stripe_req[1]}
            prov['follow'] = list(self.stripe_follow)
            if self._stripe_notes:
                prov['follow_notes'] = list(self._stripe_notes)
        if not self._on_lustre():
            prov['layout'] = 'not read back (no +lustre)'
            return prov
        try:
            prov['layout'] = self._read_layout()
        except (OSError, ValueError) as err:
            prov['layout'] = f'unreadable: {err}'
        return prov
