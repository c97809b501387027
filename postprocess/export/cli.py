"""``export-findings``: tonight's verdict (post/verdict.json) to VictoriaMetrics as
``ioregress_finding`` samples, which configs/grafana/ioregress.json shows as annotations.

    python -m postprocess export-findings --run RUN_DIR --system NAME [--config SETTINGS | --url URL]

The address comes from the system file's ``'export': {'victoriametrics': URL}`` (the same one the
perflog handler sends to) unless ``--url`` gives it. No address: nothing to do (exit 0). A server
that cannot be reached is one warning line and exit 0: the store is a view, the night stays judged.
"""
import datetime
import importlib.util
import os
import sys

from postprocess.common.errors import UsageError


def register(subparsers):
    p = subparsers.add_parser('export-findings', help="tonight's findings to VictoriaMetrics (Grafana "
                                                      'annotations); off unless configured')
    p.add_argument('--run', required=True, metavar='RUN_DIR', help='run directory (post/verdict.json)')
    p.add_argument('--system', required=True, help='the system the run is of')
    p.add_argument('--config', metavar='SETTINGS', help="ReFrame settings whose system files say "
                                                        "'export': {'victoriametrics': URL}")
    p.add_argument('--url', help='VictoriaMetrics base address (overrides --config)')
    p.set_defaults(func=run)


def configured_url(settings, system):
    """The VictoriaMetrics address configs/settings.py found for ``system`` (None: not configured)."""
    spec = importlib.util.spec_from_file_location('ioregress_settings', settings)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, 'EXPORT_URLS', {}).get(system)


def run(args):
    from postprocess.common.address import page_address
    from postprocess.common.jsonfile import read_json
    from postprocess.export import victoriametrics as vm
    if args.config and not os.path.isfile(args.config):
        raise UsageError(f"no such settings file '{args.config}'")
    url = args.url or (configured_url(args.config, args.system) if args.config else None)
    if not url:
        return 0
    path = os.path.join(args.run, 'post', 'verdict.json')
    if not os.path.exists(path):
        print(f'export-findings: no verdict in {args.run}: nothing exported')
        return 0
    verdict = read_json(path, 'verdict')
    # the findings' time: when the verdict was written (the night's run), not now
    try:
        written = datetime.datetime.fromisoformat(verdict['written'])
    except (KeyError, TypeError, ValueError):
        written = datetime.datetime.now(datetime.timezone.utc)
    lines = vm.finding_lines(verdict, int(written.timestamp() * 1000), page_address(args.run))
    if not lines:
        return 0
    try:
        vm.post_lines(url, lines)
    except (OSError, ValueError) as err:
        print(f'export-findings: warning: {len(lines)} finding(s) not exported to {vm.public(url)}: '
              f'{" ".join(str(getattr(err, "reason", err)).split())}', file=sys.stderr)
        return 0
    print(f'export-findings: {len(lines)} finding(s) -> {vm.public(url)}')
    return 0
