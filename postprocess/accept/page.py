"""Acceptances as the page shows them (report/templates/index.html, under the verdict)."""


def rows(acceptances, systems=None):
    """[{id, where, what, since, reason, by, at}] of the acceptances of ``systems`` (all: None)."""
    out = []
    for rec in acceptances:
        if systems is not None and rec['system'] not in systems:
            continue
        out.append({'id': rec['id'],
                    'where': rec['system'] + (f':{rec["partition"]}' if rec.get('partition')
                                              else ''),
                    'what': ' '.join(rec.get('checks') or []) or 'every series',
                    'since': rec['since'], 'reason': rec['reason'], 'by': rec.get('by', ''),
                    'at': (rec.get('at') or '')[:16].replace('T', ' ')})
    return out


def summary_lines(findings):
    """Terminal lines for the acceptances the findings carry (each once)."""
    seen, out = set(), []
    for f in findings:
        acc = f.get('accepted')
        if acc and acc['id'] not in seen:
            seen.add(acc['id'])
            out.append(f'accepted {acc["id"]} since {acc["since"]}: {acc["reason"]} '
                       f'(those series judged from that night; accept --undo {acc["id"]})')
    return out
