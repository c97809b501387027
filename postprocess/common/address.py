"""The address of a run's report page as a person outside this machine opens it.

``IOREGRESS_REPORT_URL`` is where a site publishes its results tree (e.g. a web server's
https://ci.example.org/ioregress/ serving <results>/): the page is then that URL plus its path under
the results tree. Unset: the page's file:// URI.
"""
import os
import pathlib

import ioregress_env


def page_path(run_dir):
    return os.path.join(os.path.abspath(run_dir), 'post', 'report', 'index.html')


def page_address(run_dir, base=None):
    page = page_path(run_dir)
    base = ioregress_env.get('IOREGRESS_REPORT_URL') if base is None else base
    if base:
        results = os.path.dirname(os.path.dirname(os.path.abspath(run_dir)))   # <results>/runs/<run>
        return base.rstrip('/') + '/' + os.path.relpath(page, results).replace(os.sep, '/')
    return pathlib.Path(page).as_uri()
