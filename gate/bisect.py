"""``gate --bisect``: which of the parts in which A and B differ carries the slowdown.

Only the checks and phases the gate found slower are run again, as pairs against A:
  1. one mix per part: A with that part as in B ("A+part"), all mixes and A in each block
     (A, M1..Mp, then Mp..M1, A). Its share of B's change is log(mix/A) / log(B/A), per check
     and phase. A part is named when its mix is slower than A beyond doubt (the whole interval
     of mix/A below 1) and carries at least SHARE of B's change: the gate has already said B is
     slower by more than the tolerance, the question here is which part, and a part that moves
     a check by a sliver of that is not the answer however sure the sliver is.
  2. only if some slower check and phase has no part named in 1 (the parts act together):
     one mix per part with everything but that part as in B ("B-part"). A part without which
     the slowdown is gone (the interval of B-part/A starts at 1 - tolerance or above) is named:
     "interacting" when two or more are named so for one check and phase (each needs the
     other), "needed" when it is the only one (its own mix in stage 1 was not conclusive).
So at most 2p mixes of p parts, each run ``pairs`` times with A: (p + 1) x pairs slots a stage,
plus one warm-up per mix; more than ``max_parts`` parts is refused before anything runs.

Under ``--pairs auto`` each stage runs blocks until every mix is decided by the sequential rule
(sequential.py) or the cap, and a part is named in stage 1 when its mix is "slower" (the gate's
own verdict) carrying at least SHARE. A stage with a mix left undecided at the cap cannot tell:
the bisection stops there, names nothing and the gate exits 4, rather than name a guess.
"""
import math

import os

from postprocess.common.errors import UsageError
from gate import judge, spack, stacks

#: the least share of B's change a part's mix must carry to be named (stage 1): a third, so
#: that two parts that each carry half are both named, and a part whose mix is only just
#: surely below 1 (a neutral part in a noisy run) is not
SHARE = 1 / 3


def run(session, names, a, b, results, hashes, cfg, parts=None):
    """Bisect the checks and phases the gate's ``results`` found slower; ``names``: (A's name,
    B's name); ``a``, ``b``: their environments; ``hashes``: {check: ReFrame test hash};
    ``cfg``: pairs, tolerance, level, max_parts; ``parts``: default stacks.parts(a, b) with a
    Spack lock difference expanded (spack.py). Returns the JSON."""
    slower = {(r['check'], r['phase']) for r in results if r['status'] == 'slower'}
    parts = parts_of(a, b, cfg.max_parts) if parts is None else parts
    doc = {'parts': [p.to_json() for p in parts], 'stages': [], 'named': [],
           'checks': [{'check': c, 'phase': ph} for c, ph in sorted(slower)]}
    if not parts:
        doc['note'] = ('A and B resolve to the same environment: the difference is not in the '
                       'stack (the machine, or the noise of this run)')
        return doc
    if len(parts) == 1:
        doc['named'] = [{'part': parts[0].name, 'how': 'the only part that differs'}]
        return doc
    only = set(slower)
    select = []
    for check in sorted({c for c, _ in slower}):
        select += ['-n', '/' + hashes[check]]      # a test variant's hash selects it alone
    try:
        return _bisect(doc, session, names, a, b, parts, only, select, results, cfg)
    except spack.SpackMissing as err:
        doc['note'] = f'bisection skipped: {err}'
        return doc


def parts_of(a, b, max_parts):
    """The parts of A and B (a Spack lock difference expanded); UsageError beyond max_parts,
    before anything runs."""
    parts = spack.expand(stacks.parts(a, b))
    if len(parts) > max_parts:
        raise UsageError(f'--bisect: A and B differ in {len(parts)} parts, more than '
                         f'--max-parts {max_parts}: '
                         + '; '.join(p.label() for p in parts[:max_parts + 1]))
    return parts


def carries(status, hi, share, sequential=False):
    """Stage 1's rule for one mix, check and phase (arrays welcome: bench/gate_sim.py): named
    when its mix is surely slower (sequential: the verdict "slower"; fixed n: the interval below
    1) and carries at least SHARE of B's change."""
    slower = (status == 'slower') if sequential else (hi < 1)
    return slower & (share >= SHARE)


def undecided(doc, stage):
    """Say so in ``doc`` when a mix of this stage is left undecided; True then."""
    open_ = [f'{m["label"]} {r["check"]} {r["phase"]} after {r["n"]} pairs'
             for m in stage['mixes'] for r in m['results'] if r['status'] == 'cannot tell']
    if open_:
        doc['cannot_tell'] = (f'stage {len(doc["stages"])} could not tell ' + '; '.join(open_) +
                              ': no part named (more pairs, a quieter machine, or a larger '
                              '--effect)')
    return bool(open_)


def _bisect(doc, session, names, a, b, parts, only, select, results, cfg):
    seq = getattr(cfg, 'sequential', False)
    one = _stage(session, names[0], a, b, [[p] for p in parts], 'A+', only, select, cfg)
    doc['stages'].append(one)
    if seq and undecided(doc, one):
        return doc
    named = {}
    b_ratio = {(r['check'], r['phase']): r['ratio'] for r in results}
    for i, p in enumerate(parts):
        for r in one['mixes'][i]['results']:
            share = _share(r.get('ratio'), b_ratio.get((r['check'], r['phase'])))
            if r.get('hi') is not None and share is not None and \
                    carries(r.get('status'), r['hi'], share, seq):
                named.setdefault(p.name, []).append(r)
    unexplained = [key for key in sorted(only) if not any(
        (r['check'], r['phase']) == key for rows in named.values() for r in rows)]
    if unexplained:
        rest = [[q for q in parts if q is not p] for p in parts]
        two = _stage(session, names[0], a, b, rest, 'B-', set(unexplained), select, cfg)
        doc['stages'].append(two)
        if seq and undecided(doc, two):
            return doc
        for i, p in enumerate(parts):
            for r in two['mixes'][i]['results']:
                # without this part B is not slower: its interval starts inside the tolerance
                if r.get('lo') is not None and r['lo'] >= 1 - cfg.tolerance:
                    named.setdefault(p.name, []).append(dict(r, stage=2))
    per_key = {}
    for rows in named.values():
        for r in rows:
            if r.get('stage') == 2:
                key = (r['check'], r['phase'])
                per_key[key] = per_key.get(key, 0) + 1
    doc['named'] = [{'part': p.name, 'how': _how(named[p.name], per_key),
                     'checks': [(r['check'], r['phase']) for r in named[p.name]]}
                    for p in parts if p.name in named]
    return doc


def _how(rows, per_key):
    """'alone' when the part's own mix was slower (stage 1); else 'interacting' when other parts
    were needed for the same check and phase too, 'needed' when it was the only one."""
    if any(r.get('stage') != 2 for r in rows):
        return 'alone'
    return 'interacting' if any(per_key[(r['check'], r['phase'])] > 1 for r in rows) \
        else 'needed'


def shares(doc, gate_results):
    """Per slower check and phase: each part's share of B's change (from stage 1)."""
    if not doc.get('stages'):
        return []
    b_ratio = {(r['check'], r['phase']): r['ratio'] for r in gate_results}
    out = []
    for mix in doc['stages'][0]['mixes']:
        for r in mix['results']:
            rb = b_ratio.get((r['check'], r['phase']))
            share = _share(r.get('ratio'), rb)
            out.append({'part': mix['parts'][0], 'check': r['check'], 'phase': r['phase'],
                        'ratio': r['ratio'], 'lo': r['lo'], 'hi': r['hi'], 'b_ratio': rb,
                        'share': share, 'status': r['status']})
    return out


def _stage(session, a_name, a, b, takes, prefix, only, select, cfg):
    envs = []
    for i, taken in enumerate(takes):
        env = stacks.mix(a, b, taken, f'gate-{"mix" if prefix == "A+" else "loo"}{i + 1}')
        packages = [p for p in taken if p.kind == 'spack']
        if packages:        # a Spack environment of its own, made by Spack (spack.py)
            env['extras'][spack.KEY] = spack.realise(
                packages, os.path.join(session.out, 'spack', env['name']), session.log)
        envs.append(env)
    session.add([a_name] + [e['name'] for e in envs], envs)
    for env in envs:
        session.warm(env['name'], (env.get('extras') or {}).get('gate_setup', []))
    effect = cfg.effect if getattr(cfg, 'sequential', False) else None

    def arms(got):
        return [judge.arm(got[0], got[i], cfg.tolerance, cfg.level, side=f'mix {i}', only=only,
                          effect=effect) for i in range(1, len(envs) + 1)]

    def until(got):         # the sequential rule: every mix decided on every check and phase
        return all(judge.decided(rows) for rows in arms(got))
    got = session.blocks([a_name] + [e['name'] for e in envs],
                         cfg.cap if effect else cfg.pairs, select, what=f'bisect {prefix}',
                         until=until if effect else None)
    mixes = []
    for i, (taken, env) in enumerate(zip(takes, envs), 1):
        label = (prefix + taken[0].name) if prefix == 'A+' else \
            'B-' + next(p.name for p in _all(takes) if p not in taken)
        mixes.append({'env': env['name'], 'label': label, 'parts': [p.name for p in taken],
                      'pairs': len(got[i]),
                      'results': judge.arm(got[0], got[i], cfg.tolerance, cfg.level,
                                           side=label, only=only, effect=effect)})
    return {'kind': prefix, 'mixes': mixes}


def _all(takes):
    seen = []
    for taken in takes:
        seen += [p for p in taken if p not in seen]
    return seen


def _share(ratio, b_ratio):
    """log(mix/A) / log(B/A): the part's share of B's change (None when either is unknown)."""
    if not ratio or not b_ratio or b_ratio == 1:
        return None
    return math.log(ratio) / math.log(b_ratio)
