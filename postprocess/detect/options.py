"""The detector's settings (detect/suite.py explains each), in a module of their own so that the
command line and the report can read them without importing the statistics (scipy)."""

DEFAULTS = {'window': 14, 'min_nights': 3, 'alpha': 0.1, 'alpha_improvement': 0.005,
            'alpha_system': 0.02, 'alpha_continue': 0.01, 'alpha_confirm': 0.02,
            'min_effect': 0.05, 'pool_nights': 3, 'min_common': 3,
            'suspect_z': 1.0, 'empirical_null_min': 30, 'horizon': 60,
            'prior_nights': None, 'prior_vouch': 1.645, 'min_group': 3, 'alpha_fio': 0.05,
            'factor_seconds': 0.1, 'settle_nights': 5,
            'min_effect_level': 0.1, 'follow_rise': 1}
