"""Interactive history (Bokeh, embedded inline: the page opens from file:// with no network).

One small figure per (key, phase): every repetition as a grey dot, the night medians as a line,
flagged nights circled, the perflog's reference band shaded; hover shows night, median and repetitions; drag to pan, wheel or box to
zoom. Only Bokeh's core library is inlined (1.2 MB; widgets, tables and MathJax are not used).
"""
import datetime

import numpy as np

from contract.perflog import PHASES
from postprocess.common.units import value_unit

# Bokeh is imported where used (~0.4 s): the report imports it after forking its PNG workers,
# so the import overlaps their drawing instead of delaying it.

FLAG_COLOR = {'regression': '#c62828', 'improvement': '#2e7d32', 'degraded': '#ef6c00',
              'noisy': '#9e9e9e'}


def resources_js():
    from bokeh.resources import Resources
    return Resources(mode='inline', components=['bokeh']).render_js()


def _figure(title, days, nights, flags, band=None, notes=None, scale=1.0, unit='MiB/s'):
    from bokeh.models import BoxAnnotation, ColumnDataSource, HoverTool, Label, Span
    from bokeh.plotting import figure
    nights = [(s, np.asarray(v) * scale) for s, v in nights]     # common/units.py
    band = band and tuple(None if b is None else b * scale for b in band)
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
                 title=title, y_axis_label=unit, toolbar_location='right')
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
    if band:
        low, high, ref = band      # no upper limit: the band is open upwards
        fig.add_layout(BoxAnnotation(bottom=low, top=high, fill_color='#2e7d32', fill_alpha=0.12,
                                     line_alpha=0))
        fig.add_layout(Span(location=ref, dimension='width', line_color='#2e7d32',
                            line_width=1))
        # on the line, not in the title: a check's title already fills a half-width figure
        fig.add_layout(Label(x=6, x_units='screen', y=ref, y_offset=2, text_font_size='10px',
                             text=f'reference {ref:.4g} {unit}', text_color='#2e7d32'))
    for day in days:        # site notes (ci/nightly.sh --note): a dashed line, the text beside
        text = (notes or {}).get(day.isoformat())
        if text:
            at = np.datetime64(day, 'ms').astype('int64').item()
            fig.add_layout(Span(location=at, dimension='height', line_color='#6a1b9a',
                                line_dash='dashed', line_width=1))
            fig.add_layout(Label(x=at, y=4, y_units='screen', x_offset=3, text=text[:60],
                                 text_font_size='9px', text_color='#6a1b9a', angle=1.5708))
    fig.add_tools(HoverTool(renderers=[dots, line], mode='vline', tooltips=[
        ('night', '@night'), ('median', '@median{0.0} ' + unit), ('min–max', '@lo{0.0}–@hi{0.0}'),
        ('repetitions', '@n'), ('flag', '@status')]))
    return fig


def drawable(history, series, value='bw_MiBps'):
    """The (key_id, phase_id) of ``series`` that get an interactive figure: two nights or more
    (one night is a dot, not a history; its numbers are in the table)."""
    groups = history.groups(value)
    return [s for s in series if len(groups.get(s) or ()) >= 2]


def history_figures(history, series, findings, value='bw_MiBps', last_nights=None,
                    site_notes=None):
    """({series: anchor id}, script, {anchor id: div}) for the drawable (key_id, phase_id) in
    ``series``."""
    series = drawable(history, series, value)
    if not series:
        return {}, '', {}
    groups = history.groups(value)
    bands = history.reference_bands() if value == 'bw_MiBps' else {}
    flags = {}
    for f in findings:
        flags.setdefault((f['system'], f['partition'], f['environ'], f['check'], f['params'],
                          f['phase']), {})[f['night']] = f['status']
    figs, anchors = {}, {}
    for kid, phase_id in series:
        nights = groups[(kid, phase_id)]
        nights = nights[-last_nights:] if last_nights else nights
        key = history.keys[kid]
        phase = PHASES[phase_id]
        days = [datetime.date.fromisoformat(history.sessions[s]['night']) for s, _ in nights]
        anchor = f'h-{kid}-{phase}'
        anchors[(kid, phase_id)] = anchor
        scale, unit = value_unit(key[4]) if value == 'bw_MiBps' else (1.0, value)
        figs[anchor] = _figure(f'{key[3]} · {phase}', days, nights, flags.get(key + (phase,), {}),
                               bands.get((kid, phase)), (site_notes or {}).get(key[:2]),
                               scale, unit)
    from bokeh.embed import components
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
