"""Real local servers for the export and notify tests, all on loopback, each stopped at the end:
Debian's victoria-metrics, an aiosmtpd SMTP server, and a webhook receiver (http.server)."""
import contextlib
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class VictoriaMetrics:
    def __init__(self, url):
        self.url = url

    def flush(self):
        urllib.request.urlopen(self.url + '/internal/force_flush', timeout=10).read()

    def export(self, match, expect=None, wait=15.0):
        """Raw samples of the series matching a PromQL selector: [(labels, values, stamps ms)].

        ``expect``: poll (up to ``wait`` s) until that many series are there. New series become
        searchable only once VictoriaMetrics has written them to its per-day index, which it does
        in the background even after /internal/force_flush: in CI a check's series sent seconds
        earlier were missing from an export that already had a later check's."""
        deadline = time.monotonic() + wait
        while True:
            self.flush()
            q = urllib.parse.urlencode({'match[]': match})
            with urllib.request.urlopen(f'{self.url}/api/v1/export?{q}', timeout=10) as r:
                rows = [json.loads(ln) for ln in r.read().decode().splitlines() if ln.strip()]
            if expect is None or len(rows) >= expect or time.monotonic() > deadline:
                return [(r['metric'], r['values'], r['timestamps']) for r in rows]
            time.sleep(0.5)

    def query(self, promql, at):
        """PromQL instant query at unix time ``at``: [(labels, value)]."""
        self.flush()
        q = urllib.parse.urlencode({'query': promql, 'time': at, 'nocache': 1})
        with urllib.request.urlopen(f'{self.url}/api/v1/query?{q}', timeout=10) as r:
            doc = json.load(r)
        assert doc['status'] == 'success', doc
        return [(x['metric'], float(x['value'][1])) for x in doc['data']['result']]

    def query_range(self, promql, start, end, step):
        """PromQL range query (what Grafana sends for a panel or an annotation): the raw matrix,
        [{'metric': labels, 'values': [[unix time, 'value'], ...]}]."""
        self.flush()
        q = urllib.parse.urlencode({'query': promql, 'start': start, 'end': end, 'step': step, 'nocache': 1})
        with urllib.request.urlopen(f'{self.url}/api/v1/query_range?{q}', timeout=10) as r:
            doc = json.load(r)
        assert doc['status'] == 'success', doc
        return doc['data']['result']


@contextlib.contextmanager
def victoria_metrics(tmp_path):
    exe = shutil.which('victoria-metrics')
    if not exe:
        pytest.skip('victoria-metrics not installed (ci/setup.sh: apt-get install victoria-metrics)')
    port = free_port()
    log = open(tmp_path / 'vm.log', 'w')
    # 100y retention: the tests' re-dated nights lie months back (the default keeps one month)
    proc = subprocess.Popen([exe, f'-httpListenAddr=127.0.0.1:{port}',
                             f'-storageDataPath={tmp_path / "vm-data"}', '-retentionPeriod=100y',
                             '-search.latencyOffset=0s', '-search.disableCache'],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f'http://127.0.0.1:{port}'
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(url + '/health', timeout=1).read()
                break
            except OSError:
                assert proc.poll() is None, (tmp_path / 'vm.log').read_text()[-2000:]
                time.sleep(0.1)
        else:
            raise AssertionError('victoria-metrics did not start')
        yield VictoriaMetrics(url)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


class Received(list):
    def __init__(self):
        super().__init__()
        self.headers = []


class _Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get('Content-Length', 0)))
        self.server.received.append((self.path, body.decode('utf-8', 'replace')))
        self.server.received.headers.append(dict(self.headers))
        self.send_response(self.server.status)
        self.end_headers()

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def webhook(status=200):
    """An HTTP server on loopback that keeps every POST and answers ``status``: yields
    (port, received): received is [(path, body)], and received.headers each request's headers."""
    server = ThreadingHTTPServer(('127.0.0.1', 0), _Hook)
    server.received, server.status = Received(), status
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], server.received
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def smtp_server():
    """aiosmtpd on loopback keeping every message: yields (port, [email.message.Message])."""
    aiosmtpd = pytest.importorskip('aiosmtpd.controller')
    from aiosmtpd.handlers import Message

    class Keep(Message):
        def __init__(self):
            super().__init__()
            self.messages = []

        def handle_message(self, message):
            self.messages.append(message)

    handler = Keep()
    port = free_port()
    ctl = aiosmtpd.Controller(handler, hostname='127.0.0.1', port=port)
    ctl.start()
    try:
        yield port, handler.messages
    finally:
        ctl.stop()


def wait_for(predicate, seconds=10):
    end = time.time() + seconds
    while time.time() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()
