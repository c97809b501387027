"""The one rule for names that become part of a path: system, partition, check (class) names.

Perflogs live at ``perflogs/<system>/<partition>/<Check>.log``, references at
``configs/references/<system>.yaml`` and run directories at ``runs/<stamp>-<system>-<tag>``; a name
with ``/``, ``..``, a leading ``-`` or shell metacharacters would write elsewhere or be read as an
option. ci/nightly.sh asks this module (``python -m postprocess.common.names system NAME``) so the
shell and Python sides cannot drift apart.
"""
import re
import sys

from postprocess.common.errors import UsageError

# Letters, digits, '_' and '-', not starting with '-', at most 64 characters (ReFrame's own
# system/partition names are identifiers with '-' allowed).
NAME_RE = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_-]{0,63}')
KINDS = ('system', 'partition', 'check')


def is_valid(name):
    return isinstance(name, str) and NAME_RE.fullmatch(name) is not None


def check_name(kind, name):
    """Return ``name`` or raise UsageError naming it (``kind`` is what it names, for the message)."""
    if not is_valid(name):
        raise UsageError(f"bad {kind} name '{name}' (letters, digits, '_' and '-' only, not "
                         f"starting with '-', at most 64 characters)")
    return name


def main(argv):
    """``python -m postprocess.common.names KIND NAME``: exit 0 if valid, else one line, exit 2."""
    if len(argv) != 2 or argv[0] not in KINDS:
        sys.stderr.write(f"usage: python -m postprocess.common.names {{{','.join(KINDS)}}} NAME\n")
        return 2
    try:
        check_name(*argv)
    except UsageError as err:
        sys.stderr.write(f'error: {err}\n')
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
