"""What the I/O did differently, from real Darshan logs: iobench run twice under darshan-runtime
(IOR layout, 4 MiB per rank in 1 MiB then 16 KiB transfers: 64× the requests), then postprocess/why/darshan_io.py
on the two runs as a finding's last good and since nights would give them.

Needs libdarshan.so ($IOREGRESS_DARSHAN_LIB, else the darshan-runtime 3.5.0 that
ci/build_darshan.sh builds into ~/.cache/ioregress); skipped with that reason when absent."""
import datetime
import json
import os
import subprocess

import pytest

from iobench_lib import installed

pytest.importorskip('darshan')
LIB = installed.built_here().get('IOREGRESS_DARSHAN_LIB') or '/opt/darshan/lib/libdarshan.so'
pytestmark = pytest.mark.skipif(not os.path.isfile(LIB), reason=f'no darshan-runtime: {LIB} '
                                'missing (ci/build_darshan.sh, or set IOREGRESS_DARSHAN_LIB)')


def capture(iobench, tmp_path, name, transfer):
    out = tmp_path / name
    (out / 'data').mkdir(parents=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    cmd = ['mpirun', '--oversubscribe', '-np', '2', 'env', f'LD_PRELOAD={LIB}',
           f'DARSHAN_LOGFILE={out / "iobench.darshan"}', 'DARSHAN_DISABLE_SHARED_REDUCTION=1',
           iobench, '--backend', 'posix', '--mode', 'shared', '--pattern', 'ior', '--size', '4',
           '--repeat', '2',
           '--param', f'transfer={transfer}', '--dir', str(out / 'data'), '--json',
           str(out / 'result.json'), '--quiet']
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    prov = {'darshan': {'log': 'iobench.darshan'}, 'machine': {'outputdir': str(out)}}
    return {'time': datetime.datetime.now(datetime.timezone.utc), 'provenance': prov}


def test_sentence_and_insights_from_two_real_logs(iobench, tmp_path):
    from postprocess.why import darshan_io
    good, slow = capture(iobench, tmp_path, 'good', '1m'), capture(iobench, tmp_path, 'slow', '16k')
    got = darshan_io.explain([good], [slow])
    assert got['darshan_logs'] == [str(tmp_path / n / 'iobench.darshan') for n in ('good', 'slow')]
    # 4 MiB per rank, twice, in 1 MiB then 16 KiB transfers: 64 times the write calls (1024
    # small requests: past Drishti's count for P05/P06)
    assert got['io'].startswith('64× more write requests (16 → 1024), most 10K–100K bytes'), got
    assert '64× more read requests' in got['io']
    assert any(i.startswith('P06 (critical)') for i in got['insights_appeared']), got
    assert got['insights_vanished'] == []
    back = darshan_io.explain([slow], [good])
    assert back['io'].startswith('64× fewer write requests (1024 → 16)'), back
    assert any(i.startswith('P06') for i in back['insights_vanished'])
    json.dumps(got)          # goes into detect.json as it is
