"""Interactive history (Bokeh, embedded inline: the page opens from file:// with no network).

One small figure per (key, phase): every repetition as a grey dot, the night medians as a line,
flagged nights circled; hover shows night, median and repetitions; drag to pan, wheel or box to
zoom. Only Bokeh's core library is inlined (1.2 MB; widgets, tables and MathJax are not used).
"""
import datetime

import numpy as np
from bokeh.embed import components
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.plotting import figure
from bokeh.resources import Resources

from postprocess.history.perflog import PHASES

FLAG_COLOR = {'regression': '#c62828', 'improvement': '#2e7d32', 'unconfirmed': '#ef6c00'}


def resources_js():
    return Resources(mode='inline', components=['bokeh']).render_js()


def _figure(title, days, nights, flags):
    medians = [float(np.median(v)) for _, v in nights]
    when = np.array(days, dtype='datetime64[D]').astype('datetime64[ms]')  # Bokeh wants ms times
    night_src = ColumnDataSource({
        'day': when, 'median': medians, 'night': [d.isoformat() for d in days],
        'n': [len(v) for _, v in nights],
        'lo': [float(np.min(v)) for _, v in nights], 'hi': [float(np.max(v)) for _, v in nights],
        'status': [flags.get(d.isoformat(), '') for d in days]})
    rep_days = np.repeat(when, [len(v) for _, v in nights])
    fig = figure(height=230, sizing_mode='stretch_width', x_axis_type='datetime',
                 tools='pan,wheel_zoom,box_zoom,reset,save', active_drag='box_zoom',
                 title=title, y_axis_label='MiB/s', toolbar_location='right')
    fig.title.text_font_size = '11px'
    fig.scatter(rep_days, np.concatenate([v for _, v in nights]), size=4, color='#9e9e9e',
                alpha=0.7)
    line = fig.line('day', 'median', source=night_src, color='#1565c0', line_width=2)
    dots = fig.scatter('day', 'median', source=night_src, size=6, color='#1565c0')
    for status, color in FLAG_COLOR.items():
        hit = [i for i, s in enumerate(night_src.data['status']) if s == status]
        if hit:
            fig.scatter(when[hit], [medians[i] for i in hit], size=14,
                        fill_alpha=0, line_color=color, line_width=2, legend_label=status)
    if fig.legend:
        fig.legend.location = 'top_left'
        fig.legend.background_fill_alpha = 0.6
        fig.legend.label_text_font_size = '10px'
    fig.add_tools(HoverTool(renderers=[dots, line], mode='vline', tooltips=[
        ('night', '@night'), ('median', '@median{0.0} MiB/s'), ('min–max', '@lo{0.0}–@hi{0.0}'),
        ('repetitions', '@n'), ('flag', '@status')]))
    return fig


def history_figures(history, series, findings, value='bw_MiBps', last_nights=None):
    """({series: anchor id}, script, {anchor id: div}) for the (key_id, phase_id) in ``series``."""
    if not series:
        return {}, '', {}
    groups = history.groups(value)
    flags = {}
    for f in findings:
        flags.setdefault((f['system'], f['partition'], f['environ'], f['check'], f['params'],
                          f['phase']), {})[f['night']] = f['status']
    figs, anchors = {}, {}
    for kid, phase_id in series:
        nights = groups.get((kid, phase_id))
        if not nights or len(nights) < 2:
            continue            # one night is a dot, not a history (its numbers are in the table)
        nights = nights[-last_nights:] if last_nights else nights
        key = history.keys[kid]
        phase = PHASES[phase_id]
        days = [datetime.date.fromisoformat(history.sessions[s]['night']) for s, _ in nights]
        anchor = f'h-{kid}-{phase}'
        anchors[(kid, phase_id)] = anchor
        figs[anchor] = _figure(f'{key[3]} · {phase}', days, nights, flags.get(key + (phase,), {}))
    if not figs:
        return {}, '', {}
    script, divs = components(figs)
    return anchors, script, divs


def sparkline(values, flagged_last=False, width=120, height=22):
    """A tiny inline SVG of the night medians (newest right); '' with fewer than 2 nights."""
    if len(values) < 2:
        return ''
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    step = (width - 4) / (len(values) - 1)
    pts = [(2 + i * step, height - 3 - (v - lo) / span * (height - 6))
           for i, v in enumerate(values)]
    path = ' '.join(f'{x:.1f},{y:.1f}' for x, y in pts)
    x, y = pts[-1]
    color = '#c62828' if flagged_last else '#1565c0'
    return (f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="history of night medians, {len(values)} nights">'
            f'<polyline fill="none" stroke="#78909c" stroke-width="1.2" points="{path}"/>'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.6" fill="{color}"/></svg>')
