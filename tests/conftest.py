"""Shared fixtures: one iobench build per session (or $IOBENCH), and a helper that runs it under mpirun.

    def test_x(run_iobench, tmp_path):
        proc, doc = run_iobench(["--backend", "posix", "--dir", str(tmp_path)], np=2)

ReFrame runs share that build too: for tests marked `reframe`, $IOREGRESS_IOBENCH_DIR names its
directory, so the IOBenchBuild fixture (reframe_checks/iobench_lib/build.py) uses it instead of
compiling iobench again in every ReFrame run (the quick-suite test in test_reframe.py still builds
through ReFrame, as the README's command does).

In parallel (pytest-xdist, `-n auto` in pyproject's addopts): see "Running in parallel" below and
docs/operations.md#tests.
"""
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import ioregress_env
from iobench_lib import installed
from tests.support import delay
from tests.support.launch import run
from tests.support.preload import build_preload
from tests.support.quick_run import run_quick_suite

REPO = Path(__file__).resolve().parent.parent

# Open MPI refuses to start as root without these (CI containers run as root).
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
# No oversubscription warnings and no shared-memory segments in odd places on small CI boxes.
os.environ.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
# What ci/setup.sh built into ~/.cache/ioregress (SIONlib, IOR, Spack): the tests and the ReFrame
# runs they start use it, as ci/quick.sh does; a variable already set wins. Not Darshan: a
# libdarshan.so for every ReFrame run would change what all of them log; the Darshan tests take
# it from installed.built_here() themselves.
for _name, _value in installed.built_here().items():
    if _name != "IOREGRESS_DARSHAN_LIB":
        os.environ.setdefault(_name, _value)


def _optional_library_args() -> list:
    """-DCMAKE_PREFIX_PATH=<ADIOS2> when iobench_lib/installed.py finds one (ci/build_adios2.sh's
    install); SIONlib is found by CMake itself through $SIONLIB_ROOT or sionconfig on PATH."""
    prefix = installed.adios2_dir()
    return [f"-DCMAKE_PREFIX_PATH={prefix}"] if prefix else []


def _build_iobench(build_dir: Path) -> Path:
    cmake = shutil.which("cmake")
    if not cmake:
        pytest.fail("cmake not on PATH: cannot build iobench (set IOBENCH to a built binary)")
    for cmd in ([cmake, "-S", str(REPO / "src"), "-B", str(build_dir)] + _optional_library_args(),
                [cmake, "--build", str(build_dir), "-j2"]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.fail(f"building iobench failed: {' '.join(cmd)}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return build_dir / "iobench"


@pytest.fixture(scope="session")
def iobench(tmp_path_factory) -> str:
    """Path of the iobench binary: $IOBENCH if set, else built once per session in a temp dir
    (under xdist once for all workers: the first builds it under a lock, the others wait for it)."""
    env_path = os.environ.get("IOBENCH")
    if env_path:
        if not os.access(env_path, os.X_OK):
            pytest.fail(f"IOBENCH={env_path} is not an executable file")
        return env_path
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return str(_build_iobench(tmp_path_factory.mktemp("iobench-build")))
    shared = tmp_path_factory.getbasetemp().parent / "iobench-build"   # the run's dir, not a worker's
    with open(f"{shared}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = shared / "iobench.built"        # written after a successful build only
        if not done.exists():
            binary = _build_iobench(shared)
            done.write_text(str(binary))
        return done.read_text()


@pytest.fixture(autouse=True)
def _reframe_shares_the_iobench_build(request):
    """Tests marked `reframe`: their ReFrame runs use this session's iobench build."""
    if request.node.get_closest_marker("reframe") is not None and "IOREGRESS_IOBENCH_DIR" not in os.environ:
        build_dir = Path(request.getfixturevalue("iobench")).parent
        if (build_dir / "iobench-features.txt").exists():
            os.environ["IOREGRESS_IOBENCH_DIR"] = str(build_dir)
    yield


@pytest.fixture(scope="session")
def iobench_backends(iobench) -> dict:
    """Compiled-in backends and their modes, from `iobench --list`."""
    out = subprocess.run([iobench, "--list"], capture_output=True, text=True, check=True).stdout
    lines = out.split("\n\n", 1)[0].splitlines()   # backend lines come first, up to an empty line
    return {line.split()[0]: line.split()[1:] for line in lines if line.strip()}


@pytest.fixture
def run_iobench(iobench):
    """Callable: run_iobench(args, np=2, timeout=300) -> (CompletedProcess, JSON document or None)."""
    def _run(args, np=2, timeout=300, env=None):
        return run(iobench, args, np=np, timeout=timeout, env=env)
    return _run


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory):
    """(results dir, CompletedProcess) of the one real quick-suite run of this session
    (tests/support/quick_run.py). Its users share the xdist group `quick-run` (below), so under
    xdist too it runs once, on one worker."""
    out = tmp_path_factory.mktemp("quick")
    return out, run_quick_suite(out)


@pytest.fixture(scope="module")
def delay_shim(tmp_path_factory):
    """Path of the delay library (tests/support/delay.py): slow open/close on chosen ranks."""
    return build_preload(tmp_path_factory.mktemp("shim"), "delay", delay.SOURCE)


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium at 1280 px through selenium and Debian's chromedriver (nothing downloaded
    at run time); its console log is kept for the no-JavaScript-errors assertions."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium not installed (ci/setup.sh)")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not (chromium and driver):
        pytest.skip("apt-get install chromium chromium-driver (ci/setup.sh)")
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,900", "--disable-background-networking"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(driver), options=opts)
    yield drv
    drv.quit()


# ---- Running in parallel ---------------------------------------------------------------------------
# pyproject's addopts say `-n auto --dist loadgroup`: tests go one by one to whichever worker is free,
# except those in a group, whose tests run on one worker in collection order. Groups:
#   slurm:  every test using the Slurm daemons (fixtures `slurm`, `cluster`): test_slurm.py stops and
#           restarts them, so no other Slurm test may run meanwhile; they also hold the machine's
#           Slurm lock (below) against other users of this Slurm.
#   quick-run: every test reading the session's one real quick-suite run (fixture `quick_run`).
#   <module>: the tests of a module that share a module-scoped fixture (a browser,
#           a Darshan index...), so that fixture runs once, not once per worker.
# Marked as xdist_group, but pytest-xdist 3.8.0 reads the mark into the node id, which pytest 9.2
# ignores (pytest-xdist issue 1386: the groups are silently dropped): so the workers write their
# groups to a directory the controller made and the scheduler below reads them from there.
SLURM_FIXTURES = {"slurm", "cluster"}
SLURM_LOCK = "/tmp/ioregress-slurm.lock"   # the machine's convention (docs/ior.md): flock(1) on it
SLURM_LOCK_WAIT_S = 1800
GROUPS_DIR_ENV = "IOREGRESS_XDIST_GROUPS"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: 4 workers (measured on the 2-core VM, docs/operations.md#tests: the tests mostly
    wait on MPI launches and ReFrame); $PYTEST_XDIST_AUTO_NUM_WORKERS overrides. Serial (0) when the
    selection includes `slow` or `long` tests: they are long because they measure (real nightly
    sequences, time limits, 2.8 GiB blocks, the gate's pairs) and stay alone on the machine."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    from _pytest.mark.expression import Expression
    markexpr = config.option.markexpr
    if markexpr and any(Expression.compile(markexpr).evaluate(lambda name, m=m, **kw: name == m)
                       for m in ("slow", "long")):
        return 0
    return 4


def pytest_configure(config):
    if getattr(config.option, "numprocesses", None) and not os.environ.get("PYTEST_XDIST_WORKER"):
        groups_dir = tempfile.mkdtemp(prefix="ioregress-xdist-groups-")
        os.environ[GROUPS_DIR_ENV] = groups_dir          # before the workers start: they inherit it
        config.add_cleanup(lambda: shutil.rmtree(groups_dir, ignore_errors=True))


def _module_scoped_fixtures(item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    return bool(info) and any(defs[-1].scope == "module" for name, defs in info.name2fixturedefs.items()
                              if name in item.fixturenames and defs)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        if SLURM_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.xdist_group("slurm"))
        elif "quick_run" in item.fixturenames:
            item.add_marker(pytest.mark.xdist_group("quick-run"))
        elif _module_scoped_fixtures(item):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


@pytest.hookimpl(tryfirst=True)      # before the worker reports its collection to the controller
def pytest_collection_finish(session):
    worker, groups_dir = os.environ.get("PYTEST_XDIST_WORKER"), ioregress_env.get(GROUPS_DIR_ENV)
    if worker and groups_dir:
        groups = {item.nodeid: item.get_closest_marker("xdist_group").args[0]
                  for item in session.items if item.get_closest_marker("xdist_group")}
        tmp = Path(groups_dir, f".{worker}.json")
        tmp.write_text(json.dumps(groups))
        tmp.rename(Path(groups_dir, f"{worker}.json"))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    groups_dir = ioregress_env.get(GROUPS_DIR_ENV)
    if config.getvalue("dist") != "loadgroup" or not groups_dir:
        return None
    from xdist.scheduler import LoadGroupScheduling

    class WrittenGroups(LoadGroupScheduling):
        """loadgroup with the groups the workers wrote (all collected the same tests, or xdist stops).
        Called once every worker has sent its collection, so every file is there. The longest
        groups start first (the quick suite's real run, ~3 min quiet and 7 beside the other tests;
        then the Slurm group, ~3 min): xdist's own order, by count of tests, would start them after
        larger groups of short tests and leave them last; then xdist's largest-first order."""
        groups = None
        FIRST = ("quick-run", "slurm")

        def _assign_work_unit(self, node):
            for scope in reversed(self.FIRST):
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

        def _split_scope(self, nodeid):
            if self.groups is None:
                self.groups = {}
                for path in Path(groups_dir).glob("gw*.json"):
                    self.groups.update(json.loads(path.read_text()))
            return self.groups.get(nodeid) or super()._split_scope(nodeid)

    return WrittenGroups(config, log)


@pytest.fixture(scope="module")
def slurm_lock():
    """Hold /tmp/ioregress-slurm.lock while a module uses Slurm (its fixture starts, stops and uses the
    daemons), so nobody else's `flock /tmp/ioregress-slurm.lock ...` runs meanwhile."""
    with open(SLURM_LOCK, "a") as lock:
        deadline = time.monotonic() + SLURM_LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pytest.fail(f"{SLURM_LOCK} still held by another Slurm user after {SLURM_LOCK_WAIT_S} s")
                time.sleep(1)
        yield
