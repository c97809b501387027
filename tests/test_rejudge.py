"""bench/rejudge_replay.py: detect options are checked by name and type, and a setting is given to
that judgement only (the next setting, or the defaults row, must not inherit it)."""
import argparse

import pytest

from bench import rejudge_replay
from postprocess.detect import options


def test_a_setting_is_a_known_option_with_its_type():
    assert rejudge_replay.parse_set('alpha_system=0.1') == {'alpha_system': 0.1}
    assert rejudge_replay.parse_set('window=10') == {'window': 10}
    for bad in ('alpha_sytem=0.1', 'alpha_system=', 'window'):
        with pytest.raises(argparse.ArgumentTypeError, match='not a detect option'):
            rejudge_replay.parse_set(bad)
    with pytest.raises(ValueError):
        rejudge_replay.parse_set('window=ten')


def test_a_setting_reaches_detect_and_never_its_defaults(tmp_path, monkeypatch):
    before = dict(options.DEFAULTS)
    seen = []
    monkeypatch.setattr(rejudge_replay.inputs, 'load_history', lambda args: 'history')

    def judge(history, unconfirmed=None, **opts):
        assert unconfirmed == {}                              # no run directories: none refuted
        seen.append(opts)
        assert options.DEFAULTS == before                     # the setting goes to this call only
        return [{'night': '2026-01-02', 'status': 'regression'}, {'night': '2026-01-01', 'status': 'ok'}]
    monkeypatch.setattr(rejudge_replay, 'detect', judge)
    flags = rejudge_replay.flags_by_night(tmp_path, {'alpha_system': 0.5})
    assert seen == [{'alpha_system': 0.5}]
    assert [(n, len(f)) for n, f in flags] == [('2026-01-01', 0), ('2026-01-02', 1)]
    assert options.DEFAULTS == before


def test_no_replay_directory_is_one_line_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        rejudge_replay.main([str(tmp_path)])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith(f"error: no run directories (run1, run2...) in '{tmp_path}'")
