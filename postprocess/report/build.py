"""Assemble the report: history → findings → verdict → figures → one page."""
import os

import numpy as np

from postprocess.detect.suite import detect
from postprocess.history import inputs
from postprocess.history.perflog import PHASES
from postprocess.report import html, interactive, plots, verdict


def _medians(history, value='bw_MiBps'):
    """{(key..., phase): [night median, ...]} oldest first, for the sparklines."""
    return {history.keys[kid] + (PHASES[ph],): [float(np.median(v)) for _, v in nights]
            for (kid, ph), nights in history.groups(value).items()}


def ior_section(history):
    """iobench/IOR ratios per API and size (postprocess/report/ior_ratio.py), when the history
    holds the IOR comparison check; [] otherwise (the page then has no such section)."""
    try:
        from postprocess.report.ior_ratio import HIGH, LOW, ior_ratios
    except ImportError:
        return []
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


def build_report(args, progress=lambda items, *_: items):
    """Write args.output/index.html and figures/; returns (page, number of figures, notes)."""
    outdir = args.output
    figdir = os.path.join(outdir, 'figures')
    # every input is read before anything is written: bad input leaves no partial output
    cases = verdict.load_cases(args.reframe_report) if args.reframe_report else None
    given = verdict.load_findings(args.findings) if args.findings else None
    tonight = verdict.load_verdict(args.verdict) if getattr(args, 'verdict', None) else None
    darshan_rows = verdict.load_darshan_rows(args.darshan_json) if args.darshan_json else []
    history = inputs.load_history(args)
    os.makedirs(figdir, exist_ok=True)
    notes, sections = [], []
    # One detection pass (the slow part at 10^5 runs): the nights the history figures show, whose
    # latest night per series is also tonight's finding (detection is causal).
    recent = detect(history, value=args.value, last_nights=args.history_nights)
    findings = verdict.latest_per_series(given if given is not None else recent)
    chosen = plots.history_series(history, findings, args.max_history_plots)
    shown = {history.keys[kid] + (PHASES[ph],) for kid, ph in chosen}
    night_flags = [f for f in recent if (f['system'], f['partition'], f['environ'], f['check'],
                                         f['params'], f['phase']) in shown]
    steps = [('Bandwidth vs ranks', lambda: plots.bandwidth_vs_ranks(history, figdir, notes)),
             ('Stripe count x stripe size', lambda: plots.stripe_heatmap(history, figdir, notes)),
             ('Library comparison (latest night)', lambda: plots.library_bars(history, figdir,
                                                                              notes)),
             ('History per check (PNG)', lambda: plots.history(
                 history, night_flags, figdir, notes, chosen, args.history_nights,
                 progress=lambda s: progress(s, 'history figures', 'figure'))),
             ('interactive', None)]
    anchors, script, divs = {}, '', {}
    for heading, step in progress(steps):
        if step is None:
            # interactive figures cost ~0.4 s each (Bokeh): the flagged series first, at most
            # INTERACTIVE_MAX; every chosen series still gets its PNG
            anchors, script, divs = interactive.history_figures(
                history, chosen[:INTERACTIVE_MAX], night_flags, args.value, args.history_nights)
        else:
            sections.append((heading, step()))
    keys = {(kid, ph): history.keys[kid] + (PHASES[ph],) for kid, ph in chosen}
    info = html.SeriesInfo(
        medians=_medians(history),
        anchors={keys[s]: a for s, a in anchors.items()},
        pngs={keys[s]: os.path.relpath(os.path.join(figdir, plots.history_png_name(
            history.keys[s[0]], PHASES[s[1]], s[0])), outdir).replace(os.sep, '/')
            for s in chosen})
    plot_list = [(a, '', divs[a]) for s, a in anchors.items()]
    darshan = None
    if args.darshan_json:
        darshan = verdict.DarshanLinks(darshan_rows, args.darshan_json, os.path.abspath(outdir))
    efficiency = {history.keys[kid] + (PHASES[ph],): float(np.median(nights[-1][1]))
                  for (kid, ph), nights in history.groups('efficiency').items()}
    result = verdict.build(findings, cases, verdict.skip_reasons(args.reframe_out)
                           if getattr(args, 'reframe_out', None) else None, tonight)
    page = html.write_report(os.path.join(outdir, 'index.html'), sections, findings, notes,
                             args.darshan_index, efficiency=efficiency, verdict=result, info=info,
                             darshan_links=darshan,
                             interactive=(interactive.resources_js() if plot_list else '', script,
                                          plot_list),
                             extra_sections=ior_section(history))
    return page, sum(len(f) for _, f in sections), notes
