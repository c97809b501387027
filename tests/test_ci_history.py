"""The GitLab template keeps the whole history in branch mode: three real nightly pipelines, each in
a fresh project directory (as a GitLab job is), with an `accept` pipeline between the first and the
second, all carrying the history on a results branch of a local bare repository (ci/history.sh).
The third night's verdict must equal the verdict of the same nights in one results tree that never
left the machine (every pipeline's whole results tree merged: what a site path keeps).

The jobs' scripts are the template's own lines (ci/gitlab-ci.yml), run by bash with GitLab's
variables; the nightly is the real ci/nightly.sh (one BenchIO check of the quick suite on `local`).
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.reframe
BRANCH = 'ioregress-results'
ONE_CHECK = "--name 'BenchIO.*size=64.*ranks=1.*posix:fpp'"


def job_script(name):
    doc = yaml.safe_load((REPO / 'ci' / 'gitlab-ci.yml').read_text())
    return '\n'.join(doc[name]['script'])


def pipeline(tmp_path, n, job, origin, **variables):
    """One GitLab job of the template in a fresh project directory: (CompletedProcess, results)."""
    project = tmp_path / f'pipeline{n}'
    project.mkdir()
    doc = yaml.safe_load((REPO / 'ci' / 'gitlab-ci.yml').read_text())
    env = dict(os.environ, **{k: str(v) for k, v in doc['variables'].items()})
    env.update(CI_PROJECT_DIR=str(project), CI_PIPELINE_ID=str(n), CI_SERVER_HOST='localhost',
               CI_PROJECT_PATH='site/ioregress', IOREGRESS_SYSTEM='local', IOREGRESS_TAG='quick',
               IOREGRESS_RESULTS_BRANCH=BRANCH, IOREGRESS_PUSH_URL=f'file://{origin}',
               IOREGRESS_NIGHTLY_ARGS=ONE_CHECK, IOREGRESS_RESULTS_DB='off',
               OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    env.update({k: str(v) for k, v in variables.items()})
    proc = subprocess.run(['bash', '-c', job_script(job)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=1800)
    return proc, project / 'results'


def merge(src, machine):
    """What a results tree that never left the machine holds after this job."""
    if (machine / 'latest').is_symlink():
        (machine / 'latest').unlink()
    shutil.copytree(src, machine, symlinks=True, dirs_exist_ok=True)


def pp(*args):
    proc = subprocess.run([sys.executable, '-m', 'postprocess', *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode in (0, 3), proc.stderr[-2000:]
    return proc


def judged(results, run, out):
    """detect + verdict on a results tree for ``run``, as ci/nightly.sh judges it."""
    pp('detect', '--store', results / 'store', '--system', 'local', '--runs', results / 'runs',
       '--json', out / 'detect.json')
    pp('verdict', '--detect', out / 'detect.json', '--report', run / 'report.json',
       '--json', out / 'verdict.json', '--runs', results / 'runs')
    return comparable(out)


def comparable(post):
    """The findings of a detect.json and a verdict.json, without where they were written."""
    out = {}
    for name in ('detect.json', 'verdict.json'):
        doc = json.loads((post / name).read_text())
        findings = doc.get('findings', doc) if isinstance(doc, dict) else doc
        out[name] = sorted(json.dumps({k: v for k, v in f.items() if 'path' not in k and k != 'run'},
                                      sort_keys=True) for f in findings)
    return out


def test_three_gitlab_pipelines_lose_nothing(tmp_path):
    origin = tmp_path / 'origin.git'
    subprocess.run(['git', 'init', '-q', '--bare', str(origin)], check=True)
    machine = tmp_path / 'machine'
    today = subprocess.run(['date', '-u', '+%F'], capture_output=True, text=True).stdout.strip()

    proc, results = pipeline(tmp_path, 1, 'nightly', origin)
    assert proc.returncode in (0, 3), proc.stdout[-3000:] + proc.stderr[-2000:]
    merge(results, machine)

    proc, results = pipeline(tmp_path, 2, 'accept', origin, IOREGRESS_ACCEPT_SINCE=today,
                             IOREGRESS_ACCEPT_REASON='new MPI-IO stack', IOREGRESS_ACCEPT_CHECK='posix')
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    merge(results, machine)

    for n in (3, 4):
        proc, results = pipeline(tmp_path, n, 'nightly', origin)
        assert proc.returncode in (0, 3), proc.stdout[-3000:] + proc.stderr[-2000:]
        merge(results, machine)
    # the third nightly started from the branch alone: it saw the two nights and the acceptance
    assert 'restored 2 night file(s)' in proc.stdout, proc.stdout[-3000:]
    assert 'importing the history perflogs' not in proc.stdout
    third = results / 'latest'
    assert len(list((results / 'store').rglob('*.runs.parquet'))) == 3
    assert (results / 'accepted.jsonl').read_text().count('new MPI-IO stack') == 1
    tonight = comparable(third / 'post')
    assert any('"accepted"' in f for f in tonight['detect.json']), tonight

    out = tmp_path / 'never-left'
    out.mkdir()
    assert tonight == judged(machine, machine / 'runs' / third.resolve().name, out)

    # the comparison can fail: the same night judged without its history is another verdict
    alone = tmp_path / 'alone'
    (alone / 'runs').mkdir(parents=True)
    shutil.copytree(third.resolve(), alone / 'runs' / third.resolve().name, symlinks=True)
    shutil.copytree(results / 'store', alone / 'store')
    for f in sorted((alone / 'store').rglob('*.runs.parquet'))[:-1]:
        f.unlink()
        f.with_name(f.name.replace('.runs.', '.reps.')).unlink()
    (alone / 'post').mkdir()
    assert judged(alone, alone / 'runs' / third.resolve().name, alone / 'post') != tonight


@pytest.mark.parametrize('args, env, named', [
    (['frobnicate', 'results'], {'IOREGRESS_RESULTS_BRANCH': BRANCH}, "'frobnicate'"),
    (['save', 'results'], {'IOREGRESS_RESULTS_BRANCH': 'bad..name'}, "'bad..name'"),
    (['save', '/nonexistent/results'], {'IOREGRESS_RESULTS_BRANCH': BRANCH,
                                         'IOREGRESS_PUSH_URL': 'file:///nonexistent.git'},
     "'/nonexistent/results'"),
])
def test_history_bad_usage_is_one_line_exit_2(tmp_path, args, env, named):
    proc = subprocess.run(['bash', str(REPO / 'ci' / 'history.sh'), *args], cwd=tmp_path,
                          env=dict(os.environ, **env), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0] and lines[0].startswith('history.sh: error:')
