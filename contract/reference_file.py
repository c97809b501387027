"""Per-system reference files: configs/references/<system>.yaml.

ReFrame 4.10 reads the file itself through ``reference = {'$ref': PATH}``; the entry of a test is
the one under its class name, indexed by ``$index``. Our layout (what calibration writes):

    require_reference: false          # true: a run without an entry fails (after the run)
    BenchIO:                          # the check's class name
      $index: [$partition, iob_params]
      'local:default':                # partition full name
        'backend=posix,mode=fpp,pattern=benchio,ranks=2,size=64,stripe=default':
          write_bw: [400, -0.8, null, MiB/s]    # [reference, lower, upper, unit], bounds relative
          read_bw:  [500, -0.8, null, MiB/s]    # (-0.8 = may be 80 % lower); null = unbounded

ReFrame's own error for a malformed file is a type dump without a key path, so ``load`` checks the
file first and names the file and the key that is wrong. Pure Python: tested without ReFrame runs.
"""
import numbers
import re

import yaml

# how calibration indexes a check's entries (base.py resolves each name for ReFrame)
INDEX = ['$partition', 'iob_params']
TOP_LEVEL_OPTIONS = {'require_reference': bool}


class ReferenceFileError(Exception):
    """A reference file that cannot be used; the message names the file and the key."""


def _is_num(x):
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _check_tuple(path, keypath, val):
    where = f'{path}: {".".join(str(k) for k in keypath)}'
    if isinstance(val, list) and val and val[0] == '$xfail':
        if len(val) != 3 or not isinstance(val[1], str):
            raise ReferenceFileError(f"{where}: expected ['$xfail', message, [ref, lower, upper, unit]], "
                                     f'got {val!r}')
        return _check_tuple(path, keypath, val[2])
    if not isinstance(val, list) or len(val) not in (3, 4):
        raise ReferenceFileError(f'{where}: expected [reference, lower, upper, unit], got {val!r}')
    ref, lower, upper = val[:3]
    if not _is_num(ref):
        raise ReferenceFileError(f'{where}: reference value must be a number, got {ref!r}')
    if lower is not None and not (_is_num(lower) and lower <= 0):
        raise ReferenceFileError(f'{where}: lower bound must be a number <= 0 or null, got {lower!r}')
    if upper is not None and not (_is_num(upper) and upper >= 0):
        raise ReferenceFileError(f'{where}: upper bound must be a number >= 0 or null, got {upper!r}')
    if len(val) == 4 and not (val[3] is None or isinstance(val[3], str)):
        raise ReferenceFileError(f'{where}: unit must be a string, got {val[3]!r}')


def _check_level(path, keypath, node, depth):
    if not isinstance(node, dict):
        raise ReferenceFileError(f'{path}: {".".join(str(k) for k in keypath)}: '
                                 f'expected a mapping, got {node!r}')
    for key, val in node.items():
        if depth == 0:
            # leaf level: performance variable -> reference tuple
            if not isinstance(key, str):
                raise ReferenceFileError(f'{path}: {".".join(map(str, keypath))}: performance '
                                         f'variable name must be a string, got {key!r}')
            _check_tuple(path, keypath + [key], val)
        else:
            _check_level(path, keypath + [key], val, depth - 1)


def validate(path, data):
    """Raise ReferenceFileError unless `data` (the parsed YAML of `path`) is a usable reference file."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ReferenceFileError(f'{path}: top level must be a mapping of check class names, '
                                 f'got {type(data).__name__}')
    for key, val in data.items():
        if key in TOP_LEVEL_OPTIONS:
            if not isinstance(val, TOP_LEVEL_OPTIONS[key]):
                raise ReferenceFileError(f'{path}: {key}: expected true or false, got {val!r}')
            continue
        if not isinstance(val, dict):
            raise ReferenceFileError(f'{path}: {key}: expected a mapping, got {val!r}')
        index = val.get('$index')
        if index is None:
            depth = 1   # ReFrame's default: 'system:partition' -> variables
        elif isinstance(index, list) and index and all(isinstance(i, str) for i in index):
            depth = len(index)
        else:
            raise ReferenceFileError(f'{path}: {key}.$index: expected a list of attribute names, '
                                     f'got {index!r}')
        body = {k: v for k, v in val.items() if k != '$index'}
        _check_level(path, [key], body, depth)
    return data


def load(path):
    """Parse and validate a reference file; returns the parsed mapping."""
    try:
        with open(path) as fp:
            data = yaml.safe_load(fp)
    except yaml.YAMLError as err:
        raise ReferenceFileError(f'{path}: not valid YAML: {err}'.replace('\n', ' ')) from None
    except OSError as err:
        raise ReferenceFileError(f'{path}: cannot read: {err.strerror}') from None
    return validate(path, data)


def _match(level, key):
    """ReFrame's rule: exact key first, then string keys as anchored regular expressions."""
    if key in level:
        return level[key]
    for k, v in level.items():
        if isinstance(k, str) and isinstance(key, str) and re.fullmatch(k, key):
            return v
    raise KeyError(key)


def lookup(data, check, resolve):
    """The reference entry ({perf variable: tuple}) of class `check`, or None. `resolve(name)`
    gives the test's value for each $index name ('$partition', 'iob_params', ...)."""
    node = (data or {}).get(check)
    if not isinstance(node, dict):
        return None
    index = node.get('$index') or ['$system:$partition']
    node = {k: v for k, v in node.items() if k != '$index'}
    try:
        for name in index:
            node = _match(node, resolve(name))
    except KeyError:
        return None
    return node


def require_reference(data):
    """The file's require_reference switch (false when absent)."""
    return bool((data or {}).get('require_reference', False))
