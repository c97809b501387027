"""Tonight's verdict for ci/nightly.sh: the detect findings about what this run ran, and their
confirmation by a re-run of the flagged checks.

* ``scope_tonight``: a series finding counts when its check passed in tonight's ReFrame report and
  the finding is about that series' latest night (a key not run tonight must not fail it again for
  an old night); a `system` finding counts for the partitions tonight's run used.
* ``rerun_targets``: what to re-run: every check behind a flagged series; for a flagged common
  factor, the fio baseline and a few checks of that partition that moved just like it (the re-run
  must see several typical series to estimate the machine's state again); ``rerun_runs``: how many
  whole runs of them (each with tonight's repetitions, where each repetition sat tonight).
* ``confirm``: the re-run's repetitions form one extra night, labelled ``<night> confirm``, judged
  by the same detector (postprocess/detect/suite.py): each flagged series' re-run alone against
  its history before the change, Holm over the flags at ``alpha_confirm`` (the second stage of
  the verdict); a flag that does not pass is ``unconfirmed``. The re-run's perflogs live in the
  run directory, never in the history, so no fake night is created.
"""
import datetime

from postprocess.common.findings import flag_key, group_keys, is_many
from postprocess.detect.factors import SYSTEM_CHECK, is_baseline_params, is_rate_params
from postprocess.detect.suite import detect
from postprocess.history.store import History

FLAGS = ('regression', 'improvement')
CARRIED = 'carried'         # a change an earlier night's re-run confirmed, going on: not re-run
CONFIRM_LABEL = ' confirm'
MAX_SYSTEM_RERUN = 6        # checks re-run to confirm a moving common factor (fio excluded)
MAX_GROUP_RERUN = 6         # members re-run to confirm a moving group


def _ran(report, field=None):
    """{(system, partition, environ, check): hash} of the checks that passed in report.json
    (``field``: that field of each case instead of its hash)."""
    out = {}
    for run in report.get('runs', []):
        for case in run.get('testcases', []):
            if case.get('result') == 'pass':
                name = case.get('display_name') or case.get('name')
                out[(case.get('system'), case.get('partition'), case.get('environ'), name)] = \
                    case.get(field) if field else (case.get('hashcode') or case.get('hash'))
    return out


def scope_tonight(findings, report):
    """The findings about tonight's run (see module docstring), latest night of each series."""
    ran = _ran(report)
    partitions = {(k[0], k[1]) for k in ran}
    latest = {}
    for f in findings:
        if is_many(f):
            if (f['system'], f['partition']) not in partitions:
                continue
        elif (f['system'], f['partition'], f['environ'], f['check']) not in ran:
            continue
        key = (f['system'], f['partition'], f['environ'], f['check'], f['params'], f['phase'])
        if key not in latest or f['night'] >= latest[key]['night']:
            latest[key] = f
    return sorted(latest.values(), key=lambda f: (f.get('scope') != 'system', f['check'],
                                                  f['params'], f['phase']))


def carry_confirmed(findings, past):
    """Regressions going on from a change that an earlier night's re-run confirmed (``past``:
    detect/cli.py past_unconfirmed, its ``.confirmed``) keep that confirmation: ``confirmation``
    ``carried``, never re-run. Whether the change still holds is the first stage's persistence
    rule, over every night since (detect/evidence.py continue_change); one short re-run against
    it lost true changes on their second night (runs 28.2, 29.2, 30.1: the stack's writes -18 %,
    -19 %, -17 % by tonight's run, -2 %, -9 %, -7 % by its re-run) and saves the batch queue's time."""
    confirmed = getattr(past, 'confirmed', None) or {}
    for f in findings:
        since, night = str(f.get('since') or '')[:10], str(f.get('night') or '')[:10]
        if f['status'] != 'regression' or not since or since >= night:
            continue
        if any(since <= n < night for n in confirmed.get(flag_key(f), ())):
            f['confirmation'] = CARRIED
    return findings


def rerun_targets(findings, report):
    """ReFrame ``-n`` selectors (``/<hash>``) of the checks to re-run, sorted, without repeats."""
    ran = _ran(report)
    return sorted(f'/{ran[k]}' for k in _rerun_keys(findings) if ran.get(k))


def rerun_runs(findings, report, repetitions):
    """How many whole runs of the re-run checks give each at least ``repetitions`` repetitions.

    The re-run repeats each check as tonight ran it (ReFrame ``--repeat``), not with more
    repetitions in one process: iobench's first repetitions run slower than its later ones (warm
    caches and allocations; up to 2x for the quick suite's 4 MiB here), so the median of 10 in one
    process is not comparable with the history's medians of 5, and a real slowdown read as none."""
    repeat = _ran(report, 'repeat')
    per_run = [repeat.get(k) for k in _rerun_keys(findings)]
    per_run = [r for r in per_run if isinstance(r, int) and r > 0]
    return max(1, -(-repetitions // min(per_run))) if per_run else 1


def _rerun_keys(findings):
    chosen = set()
    for f in findings:
        if f['status'] not in FLAGS or f.get('confirmation') == CARRIED:
            continue
        if f.get('scope') == 'group':
            members = [g for g in findings if g.get('scope') == 'series'
                       and g['phase'] == f['phase'] and g.get('change') is not None
                       and (g['system'], g['partition']) == (f['system'], f['partition'])
                       and f['params'] in group_keys(g['params'], g['check'])
                       and _on_basis(g, f)]
            # the members that moved most the group's way: they carry its level at the re-run
            members.sort(key=lambda g: g['change'] * (1 if f['change'] > 0 else -1), reverse=True)
            chosen.update(_key(g) for g in members[:MAX_GROUP_RERUN])
        elif is_many(f):
            same = [g for g in findings if not is_many(g) and g['phase'] == f['phase']
                    and (g['system'], g['partition']) == (f['system'], f['partition'])
                    and g.get('change') is not None]
            base = [g for g in same if is_baseline_params(g['params'])]
            # the checks that moved like the partition (smallest change after the common
            # factor): the re-run estimates the machine's state from them, not from outliers
            typical = sorted((g for g in same if not is_baseline_params(g['params'])
                              and g['status'] not in FLAGS and _on_basis(g, f)),
                             key=lambda g: abs(g['change']))[:MAX_SYSTEM_RERUN]
            chosen.update(_key(g) for g in base + typical)
        else:
            chosen.add(_key(f))
    return chosen


def _on_basis(g, f):
    """Is series finding g among those finding f's level was read on (its bandwidth-bound
    series, when f says it was read on those only)? The re-run must estimate the same level. An
    operation rate is a member of no factor and no group (detect/suite.py): a re-run slot it took
    left the level to fewer members (run 17.2 night 13: the factor re-read on five)."""
    if is_rate_params(g['params']):
        return False
    bound = f.get('factor_min_seconds')
    return bound is None or (g.get('phase_seconds') or 0.0) >= bound


def _key(f):
    return (f['system'], f['partition'], f['environ'], f['check'])


def confirm(history_runs, confirm_runs, tonight_findings, unconfirmed=None):
    """Findings with flags that the re-run did not reproduce turned ``unconfirmed``.

    Each finding gains ``confirmation``: ``confirmed``, ``not reproduced`` or ``not re-run`` (a
    flag without re-run data stays as it was: no evidence either way). ``unconfirmed``: earlier
    nights' refuted flags (detect/cli.py past_unconfirmed), so that the re-run is judged against
    the history the first stage used.
    """
    flagged = [f for f in tonight_findings
               if f['status'] in FLAGS and f.get('confirmation') != CARRIED]
    if not flagged or not confirm_runs:
        for f in flagged:
            f['confirmation'] = 'not re-run'
        return tonight_findings
    night = max(f['night'] for f in flagged)
    label = night + CONFIRM_LABEL
    if hasattr(unconfirmed, 'for_tonight'):
        unconfirmed = unconfirmed.for_tonight(night)    # as the first stage judged tonight
    start = min(r['time'] for r in confirm_runs)
    for r in confirm_runs:
        r['session'] = f'confirm:{r["system"]}:{r["partition"]}@{start.isoformat()}'
        r['session_start'] = start
    history = History(list(history_runs) + list(confirm_runs))
    for s in history.sessions:
        if s['id'].startswith('confirm:'):
            s['night'] = label
    systems = {(f['partition'], f['phase']) for f in flagged if f.get('scope') in ('system', 'stack')}
    # a phase judged against the other (a contrast finding): both factors from the re-run
    systems |= {(f['partition'], f['against']) for f in flagged if f.get('against')}
    again = {(g['system'], g['partition'], g['environ'], g['check'], g['params'], g['phase']): g
             for g in detect(history, latest_only=True, carry_night=label,
                             estimate_factor=systems, unconfirmed=unconfirmed)
             if g['night'] == label}
    for f in flagged:
        g = again.get((f['system'], f['partition'], f['environ'], f['check'], f['params'],
                       f['phase']))
        if g is None:
            f['confirmation'] = 'not re-run'
        elif g['status'] == f['status']:
            f['confirmation'] = 'confirmed'
            f['confirm_change'] = g['change']
        else:
            f['confirmation'] = 'not reproduced'
            f['confirm_change'] = g['change']
            f['status'] = 'unconfirmed'
    return tonight_findings


def summary(findings, stage):
    """The verdict document written to <run>/post/verdict.json (see docs/CONTRACT.md)."""
    regressions = [f for f in findings if f['status'] == 'regression']
    return {
        'schema': 'ioregress-verdict/1',
        'written': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
        'confirmation': stage,
        'status': 'regression' if regressions else 'ok',
        'exit': 3 if regressions else 0,
        'regressions': len(regressions),
        'unconfirmed': sum(f['status'] == 'unconfirmed' for f in findings),
        'improvements': sum(f['status'] == 'improvement' for f in findings),
        'watching': sum(f['status'] == 'watching' for f in findings),
        'findings': [f for f in findings if f['status'] not in ('ok', 'insufficient history')],
        'judged': len(findings),
    }


def is_system(f):
    return is_many(f) or f.get('check') == SYSTEM_CHECK
