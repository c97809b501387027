"""Stacks: ReFrame environments of the site's configuration, the parts in which two differ, and
the mixes that take some parts from B and the rest from A.

A stack is what ReFrame resolves for an environment name on the selected system
(``reframe --show-config environments``): modules, env_vars, extras, compiler fields. Parts:

  module <stem>      a module by the name before its first '/' (cray-hdf5-parallel/1.12 -> 1.14)
  env <NAME>         an environment variable (OMPI_MCA_io, MPICH_MPIIO_HINTS, LD_PRELOAD, ...)
  hint <key>         a key of extras 'mpiio_hints' (MPI-IO hints every check of the stack gets)
  extras <key>       any other extras key (a library prefix such as adios2_dir, spack_env)
  <field>            cc, cflags, prepare_cmds, ... (a compiler or setup field as a whole)

List-valued extras (cmake_prefix_path, gate_setup) are not parts of their own: an element that
differs goes with the part whose value it contains (the ADIOS2 prefix in cmake_prefix_path goes
with adios2_dir), so a mix that takes B's ADIOS2 takes it everywhere; what no part claims is a
part of its own. Features are not parts: a mix has the features A and B share.
"""
import copy
import json
import os
import subprocess

from postprocess.common.errors import UsageError

IGNORED = ('name', 'target_systems', 'features', 'resources')
HINTS = 'mpiio_hints'


class Part:
    """One difference between A and B; ``attached``: {list extras key: (A's elements, B's)}."""

    def __init__(self, kind, key, a, b):
        self.kind, self.key, self.a, self.b = kind, key, a, b
        self.attached = {}

    @property
    def name(self):
        return self.key if self.kind == 'field' else f'{self.kind} {self.key}'

    def label(self):
        return f'{self.name}: {_short(self.a)} -> {_short(self.b)}'

    def to_json(self):
        return {'name': self.name, 'kind': self.kind, 'key': self.key, 'a': self.a, 'b': self.b,
                'label': self.label()}


def _short(value):
    if value is None:
        return '(none)'
    if isinstance(value, str) and value.startswith('/'):
        return os.path.basename(value.rstrip('/')) or value
    return json.dumps(value) if not isinstance(value, str) else value


def _show(reframe, config, system, what):
    cmd = [reframe, '-C', config] + (['--system', system] if system else []) + \
        ['--show-config', what]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as err:
        raise UsageError(f"cannot run ReFrame '{reframe}': {err.strerror}") from None
    text = proc.stdout
    start = min([i for i in (text.find('['), text.find('"')) if i >= 0], default=-1)
    if proc.returncode != 0 or start < 0:
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ['no output']
        raise UsageError(f"cannot load ReFrame configuration '{config}'"
                         f"{f' for system {system!r}' if system else ''}: {last[0]}")
    return json.JSONDecoder().raw_decode(text[start:])[0]


def system_name(reframe, config):
    """The system ReFrame picks by hostname."""
    return _show(reframe, config, None, 'systems/0/name')


def resolve(reframe, config, system):
    """{name: environment dict} as ReFrame resolves them for ``system`` (its own --show-config)."""
    envs = _show(reframe, config, system, 'environments')
    return {e['name']: e for e in envs}


def stack(envs, name, what):
    if name not in envs:
        raise UsageError(f"{what}: no environment '{name}' for this system "
                         f"(known: {', '.join(sorted(envs))})")
    return envs[name]


def _module_stem(mod):
    name = mod if isinstance(mod, str) else mod.get('name', '')
    return name.split('/')[0]


def _by_stem(mods):
    return {_module_stem(m): m for m in mods or []}


def parts(a, b):
    """The parts in which environments ``a`` and ``b`` differ, in a stable order."""
    out = []
    ma, mb = _by_stem(a.get('modules')), _by_stem(b.get('modules'))
    out += [Part('module', s, ma.get(s), mb.get(s)) for s in sorted(set(ma) | set(mb))
            if ma.get(s) != mb.get(s)]
    va, vb = dict(map(tuple, a.get('env_vars') or [])), dict(map(tuple, b.get('env_vars') or []))
    out += [Part('env', k, va.get(k), vb.get(k)) for k in sorted(set(va) | set(vb))
            if va.get(k) != vb.get(k)]
    ea, eb = a.get('extras') or {}, b.get('extras') or {}
    ha, hb = ea.get(HINTS) or {}, eb.get(HINTS) or {}
    out += [Part('hint', k, ha.get(k), hb.get(k)) for k in sorted(set(ha) | set(hb))
            if ha.get(k) != hb.get(k)]
    scalars = [Part('extras', k, ea.get(k), eb.get(k)) for k in sorted(set(ea) | set(eb))
               if k != HINTS and ea.get(k) != eb.get(k)
               and not isinstance(ea.get(k, eb.get(k)), list)]
    out += scalars
    for key in sorted(set(ea) | set(eb)):
        la, lb = ea.get(key), eb.get(key)
        if key == HINTS or la == lb or not isinstance(la if la is not None else lb, list):
            continue
        out += _attach(key, la or [], lb or [], scalars)
    fields = sorted((set(a) | set(b)) - set(IGNORED) - {'modules', 'env_vars', 'extras'})
    out += [Part('field', f, a.get(f), b.get(f)) for f in fields if a.get(f) != b.get(f)]
    return out


def _attach(key, la, lb, scalars):
    """Elements of a list extras that differ go with the scalar part whose value they contain;
    returns a part of its own for what no scalar part claims."""
    gone, new = [x for x in la if x not in lb], [x for x in lb if x not in la]
    rest_a, rest_b = [], []
    for items, side, rest in ((gone, 'a', rest_a), (new, 'b', rest_b)):
        for item in items:
            owner = next((p for p in scalars if isinstance(getattr(p, side), str)
                          and getattr(p, side) and getattr(p, side) in str(item)), None)
            if owner is None:
                rest.append(item)
                continue
            pa, pb = owner.attached.setdefault(key, ([], []))
            (pa if side == 'a' else pb).append(item)
    if not rest_a and not rest_b:
        return []
    part = Part('extras', key, la, lb)
    part.attached[key] = (rest_a, rest_b)
    return [part]


def mix(a, b, taken, name):
    """Environment ``name``: A with the parts ``taken`` as in B; features shared by A and B."""
    env = copy.deepcopy(a)
    env['name'] = name
    env['features'] = [f for f in a.get('features', []) if f in set(b.get('features', []))]
    extras = env.setdefault('extras', {})
    for p in taken:
        if p.kind == 'module':
            mods = [m for m in env.get('modules', []) if _module_stem(m) != p.key]
            env['modules'] = mods + ([copy.deepcopy(p.b)] if p.b is not None else [])
        elif p.kind == 'env':
            vars_ = [v for v in env.get('env_vars', []) if v[0] != p.key]
            env['env_vars'] = vars_ + ([[p.key, p.b]] if p.b is not None else [])
        elif p.kind == 'hint':
            hints = dict(extras.get(HINTS) or {})
            hints.pop(p.key, None)
            if p.b is not None:
                hints[p.key] = p.b
            extras[HINTS] = hints
        elif p.kind == 'extras' and p.key not in p.attached:
            _set(extras, p.key, p.b)
        elif p.kind == 'field':
            _set(env, p.key, p.b)
        for key, (gone, new) in p.attached.items():
            extras[key] = [x for x in extras.get(key, []) if x not in gone] + list(new)
    return env


def _set(d, key, value):
    if value is None:
        d.pop(key, None)
    else:
        d[key] = copy.deepcopy(value)
