"""Figures (matplotlib, Agg backend), each written atomically as a PNG.

* ``bandwidth_vs_ranks``: median bandwidth (min-max bars) vs ranks, one line per backend/mode;
* ``stripe_heatmap``: stripe count x stripe size, median bandwidth, one panel per backend/mode;
* ``history``: one check's repetitions night by night, its medians, the reference band from the
  perflog (ref, lower, upper) and the nights the detector flagged;
* ``library_bars``: min-median-max per backend/mode for one (ranks, size) point.

Every function returns the list of files written; with no data it writes nothing and returns
``[]`` and a message in ``notes`` (the caller reports it). Bandwidth is shown in MiB/s (2^20).
"""
import collections
import datetime
import math
import re

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from postprocess.common import atomic  # noqa: E402
from postprocess.common.units import value_unit  # noqa: E402
from postprocess.history.store import BASELINE_BACKEND  # noqa: E402
from postprocess.history.parse import parse_params  # noqa: E402
from postprocess.history.perflog import PHASES  # noqa: E402

_STRIPE = re.compile(r'^c(-?\d+)-S(\d+)([KMG]?)$', re.IGNORECASE)
_UNITS = {'': 1, 'K': 2 ** 10, 'M': 2 ** 20, 'G': 2 ** 30}


def parse_stripe(text):
    """'c4-S4M' -> (4, 4194304); 'default' or unknown -> None."""
    match = _STRIPE.match(text or '')
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)) * _UNITS[match.group(3).upper()]


def _safe(text):
    return re.sub(r'[^A-Za-z0-9_.=+-]+', '_', text)[:150]


def _latest_points(history):
    """{key_id: {phase: values of the latest night}} plus the key's parsed params."""
    out = {}
    for (kid, phase_id), nights in history.groups().items():
        out.setdefault(kid, {})[PHASES[phase_id]] = nights[-1][1]
    return out


def _series_label(params):
    return f'{params.get("backend", "?")}/{params.get("mode", "?")}'


def _save(fig, path, written, **margins):
    # tight_layout costs a full extra draw per figure; fixed margins keep 10^5-run reports fast.
    fig.subplots_adjust(**{'left': 0.1, 'right': 0.97, 'bottom': 0.17, 'top': 0.86,
                           'wspace': 0.25, **margins})
    # zlib level 1: a third of the encoding time for files ~1.3x larger
    atomic.save_figure(fig, path, dpi=100, pil_kwargs={'compress_level': 1})
    plt.close(fig)
    written.append(path)


def bandwidth_vs_ranks(history, outdir, notes):
    """One PNG per (system:partition, size, stripe): write and read panels, a line per
    backend/mode, median with min-max bars over the latest night's repetitions."""
    written = []
    figs = collections.defaultdict(lambda: collections.defaultdict(list))
    for kid, phases in _latest_points(history).items():
        system, partition, _, _, params_text = history.keys[kid]
        params = parse_params(params_text)
        if params.get('backend') == BASELINE_BACKEND or not params.get('ranks', '').isdigit():
            continue
        where = (f'{system}:{partition}', params.get('size', '?'), params.get('stripe', 'default'))
        for phase, vals in phases.items():
            figs[where][(phase, _series_label(params))].append((int(params['ranks']), vals))
    for (where, size, stripe), series in sorted(figs.items()):
        all_ranks = sorted({r for pts in series.values() for r, _ in pts})
        if len(all_ranks) < 2:
            continue            # one rank count: nothing to plot against ranks
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.3))
        for ax, phase in zip(axes, PHASES):
            for (ph, label), points in sorted(series.items()):
                if ph != phase:
                    continue
                points.sort(key=lambda p: p[0])
                med = np.array([np.median(p[1]) for p in points])
                lo = med - np.array([p[1].min() for p in points])
                hi = np.array([p[1].max() for p in points]) - med
                ax.errorbar([p[0] for p in points], med, yerr=[lo, hi], marker='o', capsize=3,
                            label=label)
            ax.set_xscale('log', base=2)
            ax.set_xticks(all_ranks, [str(r) for r in all_ranks])
            ax.minorticks_off()
            ax.set_xlabel('MPI ranks')
            ax.set_ylabel(f'{phase} bandwidth [MiB/s]')
            ax.set_title(f'{phase}', fontsize=10)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        fig.suptitle(f'Bandwidth vs ranks (latest night; median, min-max): {where}, size {size}, '
                     f'stripe {stripe}', fontsize=10)
        _save(fig, f'{outdir}/bw_vs_ranks_{_safe(where)}_size{_safe(size)}_{_safe(stripe)}.png',
              written)
    if not written:
        notes.append('bandwidth vs ranks: no series with two or more rank counts')
    return written


def stripe_heatmap(history, outdir, notes):
    """One PNG per (phase, system:partition, size) at the largest rank count measured with
    stripes: a stripe count x stripe size heatmap of the median bandwidth per backend/mode."""
    written = []
    cells = collections.defaultdict(lambda: collections.defaultdict(list))
    for kid, phases in _latest_points(history).items():
        system, partition, _, _, params_text = history.keys[kid]
        params = parse_params(params_text)
        stripe = parse_stripe(params.get('stripe'))
        if stripe is None or not params.get('ranks', '').isdigit():
            continue
        for phase, vals in phases.items():
            cells[(phase, f'{system}:{partition}', params.get('size', '?'))][
                (int(params['ranks']), _series_label(params), stripe)].extend(vals)
    for (phase, where, size), grid in sorted(cells.items()):
        ranks = max(r for r, _, _ in grid)
        labels = sorted({lab for r, lab, _ in grid if r == ranks})
        counts = sorted({st[0] for r, _, st in grid if r == ranks}, key=lambda c: (c < 0, c))
        sizes = sorted({st[1] for r, _, st in grid if r == ranks})
        fig, axes = plt.subplots(1, len(labels), squeeze=False,
                                 figsize=(max(4.8, 1.2 + 2.6 * len(labels)),
                                          2.2 + 0.6 * len(counts)))
        for ax, label in zip(axes[0], labels):
            data = np.full((len(counts), len(sizes)), np.nan)
            for (r, lab, (c, sz)), vals in grid.items():
                if r == ranks and lab == label:
                    data[counts.index(c), sizes.index(sz)] = np.median(vals)
            ax.imshow(data, cmap='viridis', aspect='auto', origin='lower')
            for i in range(len(counts)):
                for j in range(len(sizes)):
                    if np.isfinite(data[i, j]):
                        bright = data[i, j] > np.nanmin(data) + 0.6 * np.ptp(data[np.isfinite(data)])
                        ax.text(j, i, f'{data[i, j]:.0f}', ha='center', va='center', fontsize=8,
                                color='k' if bright else 'w')
            ax.set_xticks(range(len(sizes)), [f'{sz / 2 ** 20:g}M' for sz in sizes])
            ax.set_yticks(range(len(counts)), ['all' if c == -1 else str(c) for c in counts])
            ax.set_xlabel('stripe size')
            ax.set_title(label, fontsize=9)
        axes[0][0].set_ylabel('stripe count')
        fig.suptitle(f'{phase}: median MiB/s by stripe (latest night)\n{where}, {ranks} ranks, '
                     f'size {size}', fontsize=9)
        _save(fig, f'{outdir}/stripes_{phase}_{_safe(where)}_s{_safe(size)}.png', written,
              left=0.15, top=0.76, bottom=0.2)
    if not written:
        notes.append("stripe heatmap: no runs with a stripe setting other than 'default'. It "
                     'would show write and read MiB/s per Lustre stripe count x stripe size at the '
                     'largest rank count, from the nightly BenchIO, HaccMPIIO, NektarLarge and '
                     "scaling checks on a +lustre partition with a stripe menu (extras 'stripes', "
                     'e.g. archer2:compute); this machine has no Lustre (docs/site.md)')
    return written


def history_series(history, findings, max_plots=40):
    """The (key_id, phase_id) series to plot, at most ``max_plots``: flagged ones first, then
    those that moved most tonight (|z| of their finding), so a calm night still shows the
    series nearest to a flag rather than an arbitrary few."""
    flagged, moved = set(), {}
    for f in findings:
        key = (f['system'], f['partition'], f['environ'], f['check'], f['params'], f['phase'])
        if f['status'] in ('regression', 'improvement'):
            flagged.add(key)
        if isinstance(f.get('z'), (int, float)) and math.isfinite(f['z']):
            moved[key] = abs(f['z'])

    def priority(series):
        kid, phase_id = series
        key = history.keys[kid] + (PHASES[phase_id],)
        return (key not in flagged, -moved.get(key, 0.0), kid, phase_id)

    return sorted(history.groups(), key=priority)[:max(0, max_plots)]


def history_png_name(key, phase, kid):
    """File name of a series' history figure (the page links it)."""
    return f'history_{phase}_{_safe(key[3])}_{kid}.png'


def history(history, findings, outdir, notes, series=None, last_nights=None, progress=iter,
            summary=True, site_notes=None):
    """One PNG per (key, phase) in ``series`` (default all): repetitions per night, medians,
    reference band, flagged nights. ``progress`` wraps the loop (e.g. a tqdm bar); ``summary``:
    add the notes about series left out (off when drawing a part of the series)."""
    written = []
    flags = {(f['system'], f['partition'], f['environ'], f['check'], f['params'], f['phase'],
              f['night']): f['status'] for f in findings}
    groups = history.groups()
    series = list(groups) if series is None else series
    bands = history.reference_bands() if series else {}
    for kid, phase_id in progress(series):
        nights = groups[(kid, phase_id)][-last_nights:] if last_nights else groups[(kid, phase_id)]
        phase = PHASES[phase_id]
        key = history.keys[kid]
        days = [datetime.date.fromisoformat(history.sessions[s]['night']) for s, _ in nights]
        scale, unit = value_unit(key[4])                  # empty files: operations/s
        nights = [(s, np.asarray(v) * scale) for s, v in nights]
        fig, ax = plt.subplots(figsize=(8, 4.2))
        # one scatter for all repetitions: one artist per night makes long histories slow to draw
        ax.scatter(np.repeat(np.array(days, dtype='datetime64[D]'), [len(v) for _, v in nights]),
                   np.concatenate([v for _, v in nights]), s=9, color='0.55', zorder=2,
                   label='repetitions')
        ax.plot(days, [np.median(v) for _, v in nights], '-o', color='C0', ms=4, zorder=3,
                label='night median')
        band = bands.get((kid, phase))
        if band:
            low, high, ref = (None if b is None else b * scale for b in band)
            top = high if high is not None else max(np.max(v) for _, v in nights) * 1.1
            ax.axhspan(low, top, color='C2', alpha=0.12, label='reference band')
            ax.axhline(ref, color='C2', lw=1, label=f'reference {ref:.4g}')
        for status, color in (('regression', 'red'), ('improvement', 'green')):
            hit = [(d, np.median(v)) for d, (s, v) in zip(days, nights)
                   if flags.get(key + (phase, history.sessions[s]['night'])) == status]
            if hit:
                ax.scatter(*zip(*hit), s=110, facecolors='none', edgecolors=color, lw=2,
                           zorder=4, label=status)
        _note_markers(ax, days, (site_notes or {}).get(key[:2], {}))
        ax.set_ylabel(f'{phase} bandwidth [MiB/s]' if unit == 'MiB/s' else f'{phase} [{unit}]')
        ax.set_title(f'{key[3]}\n[{key[4]}]\n{key[0]}:{key[1]}+{key[2]} {phase}', fontsize=8)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc='best')
        fig.autofmt_xdate()
        _save(fig, f'{outdir}/{history_png_name(key, phase, kid)}', written, top=0.8,
              bottom=0.2)
    if summary:
        history_notes(len(groups), len(series), written, notes)
    return written


def _note_markers(ax, days, notes):
    """Site notes (ci/nightly.sh --note; postprocess/why/notes.py) as dashed lines, text beside."""
    shown = [d for d in days if d.isoformat() in notes]
    for i, day in enumerate(shown):
        ax.axvline(day, color='#6a1b9a', ls='--', lw=1, zorder=1,
                   label='site note' if i == 0 else None)
        ax.annotate(notes[day.isoformat()][:60], (day, 1), xycoords=('data', 'axes fraction'),
                    xytext=(3, -3), textcoords='offset points', rotation=90, va='top',
                    fontsize=6, color='#6a1b9a')


def history_notes(nseries, nplotted, written, notes):
    if nplotted < nseries:
        notes.append(f'history: {nseries} series, {nplotted} plotted (flagged ones first;'
                     f' raise --max-history-plots for more)')
    if not written:
        notes.append('history: no runs')


def library_bars(history, outdir, notes):
    """One PNG per (system:partition, size, stripe) at its largest rank count: bars per
    backend/mode and phase, median with min-max whiskers over the latest night."""
    written = []
    points = collections.defaultdict(dict)
    for kid, phases in _latest_points(history).items():
        system, partition, _, _, params_text = history.keys[kid]
        params = parse_params(params_text)
        if params.get('backend') == BASELINE_BACKEND:
            continue
        where = (f'{system}:{partition}', params.get('size', '?'), params.get('stripe', 'default'))
        points[where].setdefault(params.get('ranks', '?'), {})[_series_label(params)] = phases
    chosen = {}
    for (where, size, stripe), by_ranks in points.items():
        ranks = max(by_ranks, key=lambda r: (len(by_ranks[r]), int(r) if r.isdigit() else 0))
        chosen[(where, ranks, size, stripe)] = by_ranks[ranks]
    points = chosen
    # the figure comparing the most libraries first: the one a first-night page shows on top
    for (where, ranks, size, stripe), libs in sorted(points.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        labels = sorted(libs)
        if len(labels) < 2:
            continue            # one library: nothing to compare
        fig, ax = plt.subplots(figsize=(1.5 + 0.9 * len(labels), 4.5))
        width = 0.38
        for i, phase in enumerate(PHASES):
            vals = [libs[lab].get(phase) for lab in labels]
            med = np.array([np.median(v) if v is not None else np.nan for v in vals])
            lo = np.array([med[j] - v.min() if v is not None else 0 for j, v in enumerate(vals)])
            hi = np.array([v.max() - med[j] if v is not None else 0 for j, v in enumerate(vals)])
            xs = np.arange(len(labels)) + (i - 0.5) * width
            ax.bar(xs, med, width, yerr=[lo, hi], capsize=3, label=phase)
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha='right')
        ax.set_ylabel('bandwidth [MiB/s] (bar median, whiskers min-max)')
        ax.set_title(f'{where}: {ranks} ranks, size {size}, stripe {stripe}', fontsize=9)
        ax.legend(fontsize=8)
        ax.grid(True, axis='y', alpha=0.3)
        _save(fig, f'{outdir}/libraries_{_safe(where)}_r{_safe(ranks)}_s{_safe(size)}_'
                   f'{_safe(stripe)}.png', written, left=0.6 / (1.5 + 0.9 * len(labels)) + 0.08,
              bottom=0.25)
    if not written:
        notes.append('library comparison: no point measured with two or more libraries')
    return written
