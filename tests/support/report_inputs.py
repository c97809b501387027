"""What the report tests feed postprocess: real detect findings of the synthetic perflog history,
a ReFrame report (the 4.10 layout) of their checks, and a run directory holding both."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SYNTH = REPO / 'tests' / 'fixtures' / 'perflogs' / 'synthetic'
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')


def pp(*args):
    return subprocess.run([sys.executable, '-m', 'postprocess', *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, env=ENV)


def synthetic_findings(tmp_path):
    """Real detection on the synthetic history (its last night holds a 35 % write drop)."""
    out = tmp_path / 'detect.json'
    proc = pp('detect', '--perflogs', SYNTH, '--json', out)
    assert proc.returncode == 1, proc.stderr          # 1: a regression is shown
    return json.loads(out.read_text())


def cases_for(findings, fail=None, skip=()):
    """A ReFrame report.json (the 4.10 layout) whose test cases are the findings' checks."""
    cases, seen = [], set()
    for f in findings:
        name = f['check']
        if name in seen or f.get('scope', 'series') != 'series':
            continue
        seen.add(name)
        result = 'fail' if name == fail else 'skip' if name in skip else 'pass'
        cases.append({'system': f['system'], 'partition': f['partition'], 'environ': f['environ'],
                      'display_name': name, 'name': name, 'result': result, 'fixture': False,
                      'iob_params': f['params'],
                      'fail_phase': 'sanity' if result == 'fail' else None,
                      'fail_reason': 'sanity error: rank 1: verification failed at element 17'
                      if result == 'fail' else None})
    return {'session_info': {'num_cases': len(cases)}, 'runs': [{'testcases': cases}]}


def make_run(tmp_path, findings, report):
    run = tmp_path / 'run'
    (run / 'post').mkdir(parents=True)
    (run / 'post' / 'detect.json').write_text(json.dumps(findings))
    (run / 'report.json').write_text(json.dumps(report))
    return run
