"""``notify``: tell the addresses in ``IOREGRESS_NOTIFY`` (Apprise URLs: mailto://, slack://,
msteams://, matrix://, json://... separated by spaces or commas) when a night is red, and once when
it is green again; never more than one message per night and system (postprocess/notify/state.py).

    python -m postprocess notify --run RUN_DIR --system NAME --status EXIT [--failed-step STEP]...
                                 [--urls URLS]

The nightly's exit status says which message: 3 is RED (a regression, confirmed by the re-run unless
confirmation is off), with the findings; 1 is FAILED, naming what failed: the checks that failed
(from the run's report.json) and each step ci/nightly.sh names with --failed-step (reframe,
perflogs, darshan-index, detect, verdict, report), or that the cause was not recorded; 0 is green.
2 (the nightly's bad usage: nothing ran) says nothing and leaves the state as it is; another status
is bad usage here. The message is the run's summary lines and the page's address
(IOREGRESS_REPORT_URL + path, else file://). An address that cannot be used or reached is one line;
the exit status is 0 unless the arguments are wrong.
"""
import datetime
import os
import re
import urllib.parse

import ioregress_env
from postprocess.common.errors import UsageError

REGRESSION, FAILED, USAGE = 3, 1, 2      # ci/nightly.sh's exit statuses (0: all well)
# what each step ci/nightly.sh may name failed, for the message
STEPS = {'reframe': 'ReFrame itself failed (no failed check in its report)',
         'perflogs': 'the history perflogs were not fully written',
         'darshan-index': 'postprocess darshan-index failed', 'detect': 'postprocess detect failed',
         'verdict': 'postprocess verdict could not judge the night', 'report': 'postprocess report failed'}


def register(subparsers):
    p = subparsers.add_parser('notify', help='message (Apprise) on a red night and once when green '
                                             'again; off unless IOREGRESS_NOTIFY is set')
    p.add_argument('--run', required=True, metavar='RUN_DIR', help='the nightly run directory')
    p.add_argument('--system', required=True, help='the system the run is of')
    p.add_argument('--status', required=True, type=int, help="ci/nightly.sh's exit status (0, 1, 2, 3)")
    p.add_argument('--failed-step', action='append', default=[], metavar='STEP', choices=sorted(STEPS),
                   help='a step of the night that failed (repeatable; status 1): ' + ', '.join(STEPS))
    p.add_argument('--urls', default=ioregress_env.get('IOREGRESS_NOTIFY') or '',
                   help='Apprise URLs (default: $IOREGRESS_NOTIFY)')
    p.set_defaults(func=run)


def split_urls(text):
    return [u for u in re.split(r'[\s,]+', text.strip()) if u]


# Schemes whose host part is a server's name; the others (slack://, discord://, tgram://...) carry
# tokens where a host would be, so a log line names only their scheme and position.
HOST_SCHEMES = {'mailto', 'mailtos', 'json', 'jsons', 'xml', 'xmls', 'form', 'forms', 'matrix',
                'matrixs', 'ntfy', 'ntfys', 'mmost', 'mmosts', 'rocket', 'rockets', 'gotify',
                'gotifys', 'apprise', 'apprises'}


def redacted(url, index):
    """Where an address points, for a log line: never a token or a password."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in HOST_SCHEMES and parts.netloc:
        return f'{scheme}://{parts.netloc.rsplit("@", 1)[-1]}'
    return f'{scheme or "?"}://... (address {index})'


def night_of(run_dir):
    """The run's night: the UTC date of its directory name (<stamp>-<system>-<tag>), else today."""
    m = re.match(r'(\d{4})(\d{2})(\d{2})T', os.path.basename(os.path.abspath(run_dir)))
    if m:
        return '-'.join(m.groups())
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def night_result(run_dir):
    """What `postprocess summary` judges of the run: counts, what needs attention (report/verdict.py)."""
    from postprocess.report import verdict
    report = os.path.join(run_dir, 'report.json')
    detect = os.path.join(run_dir, 'post', 'detect.json')
    tonight = os.path.join(run_dir, 'post', 'verdict.json')
    return verdict.build(verdict.load_findings(detect) if os.path.exists(detect) else [],
                         verdict.load_cases(report) if os.path.exists(report) else None,
                         verdict.skip_reasons(os.path.join(run_dir, 'reframe.out')),
                         verdict.load_verdict(tonight) if os.path.exists(tonight) else None)


def what_failed(result, steps):
    """A failed night's causes, for the title ('2 checks failed; postprocess detect failed') and
    one line each for the body. Never a guess: a cause nobody recorded is said to be unknown."""
    failed = result['counts']['failed'] if result else 0
    regressions = sum(a['kind'] != 'failed' for a in result['attention']) if result else 0
    causes = [f'{failed} check{"s" if failed != 1 else ""} failed'] if failed else []
    causes += [STEPS[s] for s in dict.fromkeys(steps) if s != 'reframe' or not failed]
    if not causes:
        causes = ['cause not recorded: see the run\'s reframe.out and the nightly log']
    lines = [f'FAILED: {c}' for c in causes]
    if regressions:
        causes.append(f'and {regressions} regression{"s" if regressions != 1 else ""}')
    return '; '.join(causes), lines


def message(kind, system, night, run_dir, status, steps=()):
    from postprocess.common.address import page_address
    from postprocess.report import summary
    try:
        result = night_result(run_dir)
        body = summary.render(result)
    except (OSError, UsageError) as err:          # the message still goes out, saying why
        result, body = None, f'(no summary: {err})'
    if kind != 'red':
        title = f'ioregress {system} {night}: green again'
    elif status == REGRESSION:
        title = f'ioregress {system} {night}: RED (regression)'
    else:
        causes, lines = what_failed(result, steps)
        title = f'ioregress {system} {night}: FAILED ({causes})'
        body = '\n'.join(lines + [body])
    return title, f'{body}\n{page_address(run_dir)}'


def send(urls, title, body):
    """Send to each address on its own: [(redacted address, None if sent, else why not)]."""
    import logging
    import apprise
    logging.getLogger('apprise').setLevel(logging.CRITICAL)   # one line per address, ours
    outcome = []
    for index, url in enumerate(urls, 1):
        where = redacted(url, index)
        box = apprise.Apprise()
        if not box.add(url):
            outcome.append((where, 'not a usable Apprise URL'))
            continue
        try:
            # plain text: the summary's columns and line breaks as the terminal shows them
            sent = box.notify(title=title, body=body, body_format=apprise.NotifyFormat.TEXT)
            outcome.append((where, None if sent else 'delivery failed'))
        except Exception as err:                  # noqa: BLE001 -- a plugin's fault is one line
            outcome.append((where, f'{type(err).__name__}: {" ".join(str(err).split())}'))
    return outcome


def run(args):
    from postprocess.notify import state
    if args.status not in (0, FAILED, USAGE, REGRESSION):
        raise UsageError(f"unknown --status {args.status} (ci/nightly.sh's 0, 1, 2 or 3)")
    if args.failed_step and args.status != FAILED:
        raise UsageError(f"--failed-step '{args.failed_step[0]}' with --status {args.status} (only 1 failed)")
    urls = split_urls(args.urls)
    if not urls:
        return 0
    if not os.path.isdir(args.run):
        raise UsageError(f"no such run directory '{args.run}'")
    if args.status == USAGE:       # nothing ran: neither red nor green, and no state changes
        print('notify: status 2 (the nightly\'s bad usage: nothing ran): nothing to tell')
        return 0
    tonight = 'red' if args.status in (FAILED, REGRESSION) else 'green'
    night = night_of(args.run)
    results_root = os.path.dirname(os.path.dirname(os.path.abspath(args.run)))
    path = state.state_path(results_root, args.system)
    kind = state.decide(tonight, night, state.load(path))
    if kind is None:
        return 0
    title, body = message(kind, args.system, night, args.run, args.status, args.failed_step)
    outcome = send(urls, title, body)
    for where, why in outcome:
        print(f'notify: {where}: ' + ('sent' if why is None else f'not sent ({why})'))
    if any(why is None for _, why in outcome):
        state.save(path, {'state': kind, 'night': night, 'run': os.path.basename(args.run),
                          'sent': datetime.datetime.now(datetime.timezone.utc)
                          .isoformat(timespec='seconds')})
    return 0
