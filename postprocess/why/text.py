"""How a finding's ``why`` (why/annotate.py) reads in the terminal and on the page."""


def terminal_lines(a, indent='      '):
    """Lines printed under a finding in the terminal summary (none without a ``why``)."""
    why = a.get('why')
    if not isinstance(why, dict):
        return []
    out = [indent + why.get('line', '')]
    if why.get('machine_text'):
        out.append(f'{indent}machine ({why["last_good"]} → {why["since"]}): {why["machine_text"]}')
    for note in why.get('notes') or []:
        out.append(f'{indent}note on {note["night"]}: {note["note"]}')
    if why.get('io'):
        out.append(f'{indent}I/O (Darshan): {why["io"]}')
    for key, label in (('insights_appeared', 'Drishti, new'), ('insights_vanished', 'Drishti, gone')):
        if why.get(key):
            out.append(f'{indent}{label}: ' + '; '.join(why[key]))
    if a.get('accepted'):
        acc = a['accepted']
        out.append(f'{indent}accepted since {acc["since"]}: {acc["reason"]}')
    return out


def page_lines(a):
    """[(label, text)] shown under a finding on the page."""
    why = a.get('why')
    out = []
    if isinstance(why, dict):
        out.append(('changed', why.get('line', '')))
        if why.get('machine_text'):
            out.append(('machine', f'{why["last_good"]} → {why["since"]}: {why["machine_text"]}'))
        for note in why.get('notes') or []:
            out.append(('note', f'{note["night"]}: {note["note"]}'))
        if why.get('io'):
            out.append(('I/O', why['io']))
        for key, label in (('insights_appeared', 'Drishti new'), ('insights_vanished',
                                                                   'Drishti gone')):
            if why.get(key):
                out.append((label, '; '.join(why[key])))
    if a.get('accepted'):
        acc = a['accepted']
        out.append(('accepted', f'since {acc["since"]}: {acc["reason"]}'))
    return out
