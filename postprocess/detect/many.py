"""The tests about many series of one system (detect/factors.py does the statistics): per
partition and phase the iobench checks' common factor, the groups (one library, one check
family), and each phase's factor against the other phase's (the contrast); their findings."""
import math

from postprocess.detect import factors
from postprocess.detect.factors import SYSTEM_CHECK, is_baseline_params
from postprocess.history.perflog import PHASES


def contrast_key(phase_id):
    """The ``params`` of a contrast finding: the phase it is judged against."""
    return f'against={PHASES[1 - phase_id]}'


def _pct(est):
    return None if est is None else math.expm1(est)


class Many:
    """The factor and group tracks of one system, and their findings night by night."""

    def __init__(self, groups, history, opt):
        self.history, self.opt = history, opt
        self.keys_of = lambda tr: history.keys[tr.kid]
        # judged on their own level, never after the common factor nor shaping it: fio (the
        # filesystem's reading) and the operation rates of empty files (factors.is_rate_params)
        self.rates = {tr for members in groups.values() for tr in members
                      if factors.is_rate_params(self.keys_of(tr)[4])}
        self.fio = {tr for members in groups.values() for tr in members
                    if is_baseline_params(self.keys_of(tr)[4])} - self.rates
        self.baseline = self.rates | self.fio
        self.factor = {g: factors.new_track(*g) for g in groups}
        self.plans = {g: factors.plan_groups([tr for tr in members if tr not in self.baseline],
                                             self.keys_of, opt['min_group'])
                      for g, members in groups.items()}
        self.group_track = {(g, k): factors.new_track(g[0], g[1], k)
                            for g, plan in self.plans.items() for k in plan}
        # one phase's factor against the other's (params ``against=<other phase>``)
        self.contrast_track = {g: factors.new_track(g[0], g[1], contrast_key(g[1]))
                               for g in groups}
        self.tonight = {}       # (partition, phase_id): tonight's factor levels, basis, test

    def kinds(self, present):
        """The series of one partition and phase by kind, each moderated among its own (a
        rate's noise is not a bandwidth's, nor fio's whole level a check's residual; a kind of
        fewer than five keeps its own evidence)."""
        rates = [tr for tr in present if tr in self.rates]
        fio = [tr for tr in present if tr in self.fio]
        rest = [tr for tr in present if tr not in self.baseline]
        return [kind for kind in (rates, fio, rest) if kind]

    def common_factor(self, members, span, nights, carry):
        """The common factor of one partition and phase: (c, nights it was estimated on)."""
        checks = [tr for tr in members if tr not in self.baseline]
        return factors.polish_factor(checks, span, nights, self.opt, carry)

    def judge(self, g, members, present, t, span, nights, night, carry, c, sys_levels):
        """Tonight's factor and group tests of one partition and phase (after night_spread)."""
        opt, tests = self.opt, []
        checks = [tr for tr in members if tr not in self.baseline]
        basis, bound = factors.measurable(checks, opt, opt['min_common'])
        if bound is not None:       # the factor's finding: on the bandwidth-bound checks
            _, sys_levels = factors.polish_factor(basis, span, nights, opt, carry)
        basis_now = [tr for tr in basis if t in tr.y]
        if t in sys_levels:
            ft = self.factor[g]
            ft.t_now = t
            x = factors.judge(ft, t, sys_levels, night, basis_now, opt)
            x.update(where=g, kind='factor', present=present, basis=len(basis_now), bound=bound)
            tests.append(x)
            self.tonight[g] = (sys_levels, basis_now, x)
        for key, trs in self.plans[g].items():
            use, use_bound = factors.measurable(trs, opt, opt['min_group'])
            now = [tr for tr in use if t in tr.y]
            if len(now) < opt['min_group']:
                continue
            mine = set(trs)
            others, _ = factors.measurable([tr for tr in checks if tr not in mine], opt,
                                           opt['min_common'])
            c_lgo, _ = factors.polish_factor(others, span, nights, opt, carry)
            gt = self.group_track[(g, key)]
            gt.t_now = t
            x = factors.judge(gt, t, factors.group_levels(use, c_lgo, span), night, now, opt,
                              tester=factors.group_tester(now, others, c_lgo))
            x.update(where=g, kind='group', key=key, trs=now, c=c_lgo, present=present,
                     basis=len(now), bound=use_bound)
            if x['est'] is not None:
                x['moved'] = factors.members_moved(now, c_lgo, t, x['hist'], math.expm1(x['est']))
            tests.append(x)
        return tests

    def contrasts(self, t, night):
        """Tonight's contrast tests: per partition, each phase's factor against the other's. The
        machine's own state (a faster VM tonight, a burst) moves both phases together: their
        difference wanders 2-4 % between nights where each factor wanders 4-9 % (runs 16-19), so
        a stack slower at writes only is seen against the reads of the same night."""
        tests, tonight, self.tonight = [], self.tonight, {}
        for (partition, phase_id), (levels, basis, raw) in tonight.items():
            other = tonight.get((partition, 1 - phase_id))
            if other is None:
                continue
            o_levels, o_basis, o_raw = other
            ct = self.contrast_track[(partition, phase_id)]
            ct.t_now = t
            x = factors.judge(ct, t, factors.contrast_levels(levels, o_levels), night, None,
                              self.opt, tester=factors.contrast_tester(basis, o_basis))
            x.update(where=(partition, phase_id), kind='contrast', present=raw['present'],
                     basis=raw['basis'], bound=raw['bound'], raw_est=raw['est'],
                     against_est=o_raw['est'])
            tests.append(x)
        return tests

    def findings(self, tests, system, nights):
        out = []
        # a phase's own factor flagged tonight says it first; its contrast would repeat it
        fallen = {x['where'] for x in tests if x['kind'] == 'factor'
                  and x['status'] == 'regression'}
        for x in tests:
            # nor does a contrast without history: the factors' own findings say so
            if x['kind'] == 'contrast' and (x['where'] in fallen
                                            or x['status'] == 'insufficient history'):
                continue
            partition, phase_id = x['where']
            present = x['present']
            sid = self.history.sessions[present[0].sid[x['track'].t_now]]['id']
            change = None if x['est'] is None else math.expm1(x['est'])
            if x['kind'] in ('factor', 'contrast'):
                fio, fio_p = factors.baseline_change(present, self.keys_of, x['track'].t_now,
                                                     x['hist'])
                # fio moved with the checks: by half their change, or by a change of its own
                # (10 %), beyond its own night-to-night spread -- the filesystem then has a part
                # in it, whatever the stack adds
                moved_too = (fio is not None and change is not None and fio * change > 0
                             and abs(fio) >= min(abs(change) / 2.0, 0.1)
                             and fio_p < self.opt['alpha_fio'])
                scope = 'system' if fio is None or moved_too else 'stack'
                extra = {'fio_change': fio}
                n = len(present)
                if x['kind'] == 'contrast':
                    extra.update(params=contrast_key(phase_id), against=PHASES[1 - phase_id],
                                 phase_change=_pct(x['raw_est']),
                                 against_change=_pct(x['against_est']))
            else:
                scope, n = 'group', len(x['trs'])
                extra = {'params': x['key'], 'members': n, 'moved': x.get('moved')}
            # what the level was read on: how many series, and their least phase time (None: all)
            extra.update(factor_series=x['basis'], factor_min_seconds=x['bound'])
            out.append(factors.finding(x, system, partition, PHASES[phase_id], nights, sid, n,
                                       scope, extra))
        return out

    def mark_refuted(self, system, index, unconfirmed):
        """Earlier nights' refuted flags of the factors, groups and contrasts (detect --runs)."""
        # a partition-wide flag its re-run refuted: the whole partition was in a burst that night
        # (the re-run ran every phase of its checks again), so no phase's factor keeps that night
        # in its history nor pools it (run 16.1: a 184 s night, write -19 % refuted, read -13 %
        # unflagged, widened the write history so the next nights' stack fault was `ok`, and made
        # the read fault's `since` that night). Not for series: one series' refuted flag is mostly
        # a tail draw of its own noise, and dropping it reads its spread low (run 16.1 rejudged:
        # MDEmptyFiles without its refuted night 8 flagged a -9 % on clean night 11)
        # -- except a phase whose own factor flag the re-run reproduced that night: a change and
        # a burst can meet (run 27.2, night 13: the stack's writes -26 % confirmed, its reads
        # -19 % refuted; judged again, the confirmed write change read `unconfirmed`). Taken for
        # a burst, a change that goes on is dated a night late (tests/test_verdicts_burst.py)
        burst, confirmed = {}, getattr(unconfirmed, 'confirmed', {})
        # a flag whose re-run still read half its change its way is no burst: undecided, its
        # night stays in the history and is pooled with the next (evidence.fresh_evidence)
        undecided = getattr(unconfirmed, 'undecided', {})

        def nights(key, among):
            return {index[n] for n in among.get(key, ()) if n in index}

        key = {(partition, phase_id): (system, partition, SYSTEM_CHECK, SYSTEM_CHECK, '',
                                       PHASES[phase_id]) for (partition, phase_id) in self.factor}
        refuted = {g: nights(key[g], unconfirmed) for g in self.factor}
        open_ = {g: nights(key[g], undecided) for g in self.factor}
        for g in self.factor:
            burst.setdefault(g[0], set()).update(refuted[g] - open_[g])
        for g, ft in self.factor.items():
            kept = nights(key[g], confirmed)
            ft.unconfirmed.update((burst[g[0]] | refuted[g]) - kept)
            ft.excluded.update(burst[g[0]] - kept)     # a burst, not a level: out of the history
            ft.undecided.update(open_[g] - burst[g[0]])
        tracks_by_key = [((g, gkey), gt) for (g, gkey), gt in self.group_track.items()]
        tracks_by_key += [((g, contrast_key(g[1])), ct) for g, ct in self.contrast_track.items()]
        for ((partition, phase_id), gkey), gt in tracks_by_key:
            k = (system, partition, SYSTEM_CHECK, SYSTEM_CHECK, gkey, PHASES[phase_id])
            gt.unconfirmed.update(nights(k, unconfirmed))
            gt.undecided.update(nights(k, undecided))
            gt.excluded.update(gt.unconfirmed - gt.undecided)
