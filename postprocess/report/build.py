"""Assemble the report: history → findings → verdict → figures → one page."""
import os

import numpy as np

from contract.perflog import PHASES
from postprocess.history import inputs
from postprocess.report import html, interactive, parallel, plots, verdict


def _medians(history, value='bw_MiBps', last=html.SPARK_NIGHTS):
    """{(key..., phase): [night median, ...]} oldest first, the last ``last`` nights (what the
    sparklines show)."""
    return {history.keys[kid] + (PHASES[ph],): [float(np.median(v)) for _, v in nights[-last:]]
            for (kid, ph), nights in history.groups(value).items()}


def flags_from_findings(findings, history, shown):
    """Findings that circle nights in the history figures of the ``shown`` series, from a findings
    file (ci/nightly.sh's detect.json: each series' latest night): its own flagged nights, and for a
    change that persists (``since``), every night since it began, as detection judged them."""
    nights = {history.keys[kid] + (PHASES[ph],): [history.sessions[s]['night'] for s, _ in lst]
              for (kid, ph), lst in history.groups().items()}
    out, seen = [], set()
    for f in findings:
        sk = (f['system'], f['partition'], f['environ'], f['check'], f['params'], f['phase'])
        if sk not in shown or f['status'] not in interactive.FLAG_COLOR:
            continue
        out.append(f)
        seen.add(sk + (f['night'],))
        if f.get('since'):
            during = [n for n in nights.get(sk, []) if f['since'] <= n < f['night']
                      and sk + (n,) not in seen]
            out += [dict(f, night=n) for n in during]
            seen.update(sk + (n,) for n in during)
    return out


def history_window(args):
    """Nights of history the report needs: the figures' --history-nights (the sparklines' 30 at
    least), and when it detects itself, what detection judges them with (postprocess/detect/
    suite.py, ``last_nights``)."""
    shown = max(args.history_nights, html.SPARK_NIGHTS)
    if args.findings:
        return shown
    from postprocess.detect.options import DEFAULTS
    from postprocess.detect.rules import lookback
    return shown + lookback(DEFAULTS)


def ior_section(history):
    """iobench/IOR ratios per API and size (postprocess/report/ior_ratio.py), when the history
    holds the IOR comparison check; [] otherwise (the page then has no such section)."""
    # in-tree: an import that fails is a bug to see, never a page section silently dropped
    from postprocess.report.ior_ratio import HIGH, LOW, ior_ratios
    rows = []
    for r in ior_ratios(history):
        rows.append({'flag': r['finding'], 'cells': {
            'where': f'{r["system"]}:{r["partition"]}', 'API/mode': f'{r["api"]}/{r["mode"]}',
            'block': r['block'] or r['size'] or '', 'transfer': r['transfer'] or '',
            'ranks': r['ranks'], 'phase': r['phase'], 'iobench MiB/s': f'{r["iobench_MiBps"]:.4g}',
            'IOR MiB/s': f'{r["ior_MiBps"]:.4g}', 'iobench/IOR': f'{r["ratio"]:.2f}',
            'pairs': r['pairs'], 'night': r['night']}})
    if not rows:
        return []
    flagged = sum(r['flag'] for r in rows)
    return [{'id': 'ior', 'heading': f'iobench vs IOR: {flagged} of {len(rows)} ratios outside '
                                     f'{LOW:.2f}–{HIGH:.2f}',
             'text': 'Same parameters, same job, alternating runs (reframe_checks/ior_compare.py);'
                     ' a ratio outside the band means the library path costs something the '
                     'access pattern does not explain.',
             'columns': list(rows[0]['cells']), 'rows': rows}]


INTERACTIVE_MAX = 12


def failed_steps(path):
    """[(step, reason)] from ci/nightly.sh's post/failed-steps.tsv (one ``step<TAB>reason`` a line)."""
    if not path:
        return []
    with open(path, encoding='utf-8', errors='replace') as fh:
        return [tuple((line.rstrip('\n').split('\t', 1) + [''])[:2]) for line in fh if line.strip()]


def what_ran(history, cases, darshan_rows):
    """One sentence for a newcomer: what this run measured, with which libraries, beside what."""
    if not len(history):
        return ''
    checks, backends = {}, set()
    for _, _, _, check, params in history.keys:
        name = verdict.check_class(check)
        checks[name] = checks.get(name, 0) + 1
        p = dict(item.partition('=')[::2] for item in str(params).split(',') if '=' in item)
        backends.add('IOR' if p.get('tool') == 'ior' else p.get('backend', ''))
    where = sorted({f'{k[0]}:{k[1]}' for k in history.keys})
    parts = [f'{name} ({n} series)' for name, n in sorted(checks.items())]
    text = f'Measured on {", ".join(where)}: {", ".join(parts)}'
    libs = sorted(b for b in backends if b and b != plots.BASELINE_BACKEND)
    if libs:
        text += f'; libraries: {", ".join(libs)}'
    if plots.BASELINE_BACKEND in backends:
        text += f'; {plots.BASELINE_BACKEND} as the file system baseline'
    if cases is not None:
        text += f'; {len(cases)} test cases'
    if darshan_rows:
        text += f'; {len(darshan_rows)} iobench runs captured by Darshan (index linked above)'
    return text + '.'


def build_report(args, query):
    """Write args.output/index.html and figures/ of the history of ``query`` (a HistoryQuery);
    returns (page, number of figures, notes, warnings about the input)."""
    outdir = args.output
    figdir = os.path.join(outdir, 'figures')
    # every input is read before anything is written: bad input leaves no partial output
    cases = verdict.load_cases(args.reframe_report) if args.reframe_report else None
    given = verdict.load_findings(args.findings) if args.findings else None
    tonight = verdict.load_verdict(args.verdict) if getattr(args, 'verdict', None) else None
    darshan_rows = verdict.load_darshan_rows(args.darshan_json) if args.darshan_json else []
    # only the nights shown (and judged): years of history are not read into memory
    history, warnings = inputs.load_history(query, last_nights=history_window(args))
    from postprocess.accept import apply as accepted, page as accepted_page   # postprocess/accept/
    acceptances = accepted.for_query(query)
    from postprocess.why import notes as site_notes     # markers on every history plot
    night_notes = site_notes.for_history(history)
    os.makedirs(figdir, exist_ok=True)
    notes = []
    if given is None:
        # One detection pass over the nights the figures show: every series' latest night there
        # (tonight's finding: detection is causal), and every night of the series drawn, to
        # circle (the others' earlier nights are not judged: most of a cold report's time).
        # Imported here: scipy.stats alone costs 0.8 s of a report that reuses detect's findings.
        from postprocess.detect import judging
        nights = sorted({s['night'] for s in history.sessions})

        def drawn(latest):
            return {history.keys[kid] + (PHASES[ph],) for kid, ph in plots.history_series(
                history, verdict.latest_per_series(latest), args.max_history_plots)}
        # the history table's machine column: the state of each series' latest night
        recent, findings = judging.judge(
            history, acceptances, value=args.value, every_night=drawn,
            nights_from=nights[-args.history_nights] if len(nights) >= args.history_nights
            else None, show=verdict.latest_per_series, state=True)
    else:
        # the nightly's detect.json: no second detection (the slow part of a warm report)
        findings = verdict.latest_per_series(given)
    chosen = plots.history_series(history, findings, args.max_history_plots)
    shown = {history.keys[kid] + (PHASES[ph],) for kid, ph in chosen}
    if given is None:
        night_flags = [f for f in recent if (f['system'], f['partition'], f['environ'],
                                             f['check'], f['params'], f['phase']) in shown]
    else:
        night_flags = flags_from_findings(given, history, shown)
    # every chosen series is drawn once: interactive (Bokeh, the flagged first, at most
    # INTERACTIVE_MAX; ~0.1 s each, drawn here while the workers draw the PNGs), else as a PNG
    live = interactive.drawable(history, chosen[:INTERACTIVE_MAX], args.value)
    live_set = set(live)
    as_png = [s for s in chosen if s not in live_set]
    halves = (as_png[0::2], as_png[1::2])     # history figures on two workers, alike in cost
    tasks = [lambda n: plots.bandwidth_vs_ranks(history, figdir, n),
             lambda n: plots.stripe_heatmap(history, figdir, n),
             lambda n: plots.library_bars(history, figdir, n)] + \
        [lambda n, part=part: plots.history(history, night_flags, figdir, n, part,
                                            args.history_nights, summary=False,
                                            site_notes=night_notes)
         for part in halves if part]
    results, (anchors, script, divs) = parallel.run(
        tasks, parallel.workers(), lambda: interactive.history_figures(
            history, live, night_flags, args.value, args.history_nights, night_notes))
    for _, task_notes in results:
        notes.extend(task_notes)
    drawn = {os.path.basename(f) for files, _ in results[3:] for f in files}
    history_files = [os.path.join(figdir, plots.history_png_name(history.keys[kid], PHASES[ph], kid))
                     for kid, ph in as_png]
    history_files = [f for f in history_files if os.path.basename(f) in drawn]
    plots.history_notes(len(history.groups()), len(chosen), history_files + list(anchors), notes)
    sections = [('Bandwidth vs ranks', results[0][0]), ('Stripe count x stripe size', results[1][0]),
                ('Library comparison (latest night)', results[2][0]),
                ('History per check (PNG)', history_files)]
    keys = {(kid, ph): history.keys[kid] + (PHASES[ph],) for kid, ph in chosen}
    info = html.SeriesInfo(
        medians=_medians(history),
        anchors={keys[s]: a for s, a in anchors.items()},
        pngs={keys[s]: os.path.relpath(os.path.join(figdir, plots.history_png_name(
            history.keys[s[0]], PHASES[s[1]], s[0])), outdir).replace(os.sep, '/')
            for s in as_png})
    plot_list = [(a, '', divs[a]) for s, a in anchors.items()]
    darshan = None
    if args.darshan_json:
        darshan = verdict.DarshanLinks(darshan_rows, args.darshan_json, os.path.abspath(outdir))
    # efficiency is shown only where a baseline of the run's shape (rank count) exists
    matched = set(np.unique(history.col['key'][history.col['shape_matched']]).tolist()) \
        if len(history) else set()
    efficiency = {history.keys[kid] + (PHASES[ph],): float(np.median(nights[-1][1]))
                  for (kid, ph), nights in history.groups('efficiency').items() if kid in matched}
    result = verdict.build(findings, cases, verdict.skip_reasons(args.reframe_out)
                           if getattr(args, 'reframe_out', None) else None, tonight)
    steps = failed_steps(getattr(args, 'failed_steps', None))
    page = html.write_report(os.path.join(outdir, 'index.html'), sections, findings, notes,
                             args.darshan_index, efficiency=efficiency, verdict=result, info=info,
                             darshan_links=darshan,
                             interactive=(interactive.resources_js() if plot_list else '', script,
                                          plot_list),
                             extra_sections=ior_section(history),
                             accepted=accepted_page.rows(acceptances, {k[0] for k in history.keys}),
                             failed_steps=steps, what_ran=what_ran(history, cases, darshan_rows))
    return page, sum(len(f) for _, f in sections), notes, warnings
