"""Shared fixtures: one iobench build per session (or $IOBENCH), and a helper that runs it under mpirun.

    def test_x(run_iobench, tmp_path):
        proc, doc = run_iobench(["--backend", "posix", "--dir", str(tmp_path)], np=2)

ReFrame runs share that build too: for tests marked `reframe`, $IOREGRESS_IOBENCH_DIR names its
directory, so the IOBenchBuild fixture (reframe_checks/iobench_lib/build.py) uses it instead of
compiling iobench again in every ReFrame run (the quick-suite test in test_reframe.py still builds
through ReFrame, as the README's command does).
"""
import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Open MPI refuses to start as root without these (CI containers run as root).
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
# No oversubscription warnings and no shared-memory segments in odd places on small CI boxes.
os.environ.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")


def _optional_library_args() -> list:
    """-DCMAKE_PREFIX_PATH=<ADIOS2> when configs/systems/_detect.py finds one (ci/build_adios2.sh's
    install); SIONlib is found by CMake itself through $SIONLIB_ROOT or sionconfig on PATH."""
    spec = importlib.util.spec_from_file_location("_detect", REPO / "configs" / "systems" / "_detect.py")
    detect = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(detect)
    prefix = detect.adios2_dir()
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
    """Path of the iobench binary: $IOBENCH if set, else built once per session in a temp dir."""
    env_path = os.environ.get("IOBENCH")
    if env_path:
        if not os.access(env_path, os.X_OK):
            pytest.fail(f"IOBENCH={env_path} is not an executable file")
        return env_path
    return str(_build_iobench(tmp_path_factory.mktemp("iobench-build")))


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


# For runs where every rank exits by itself at the same point (bad input: all parse, agree, print
# and finalize): once a rank exits non-zero, mpirun SIGTERMs the others and waits this long
# (default 1 s) before SIGKILL, though all have exited. Not for runs where ranks fail apart: 0
# kills a rank still writing (tests/test_iobench_errors.py::test_disk_full lost its JSON).
BAD_INPUT_ENV = {"OMPI_MCA_odls_base_sigkill_timeout": "0"}


def mpirun_cmd(np: int) -> list:
    return ["mpirun", "-np", str(np), "--oversubscribe"]


def run(iobench: str, args, np: int = 2, timeout: float = 300, env=None):
    """Run iobench under mpirun; returns (CompletedProcess, parsed JSON from stdout or None)."""
    cmd = mpirun_cmd(np) + [iobench] + [str(a) for a in args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))
    doc = None
    if proc.stdout.strip():
        try:
            doc = json.loads(proc.stdout)
        except json.JSONDecodeError:
            doc = None
    return proc, doc


@pytest.fixture
def run_iobench(iobench):
    """Callable: run_iobench(args, np=2, timeout=300) -> (CompletedProcess, JSON document or None)."""
    def _run(args, np=2, timeout=300, env=None):
        return run(iobench, args, np=np, timeout=timeout, env=env)
    return _run


def iobench_error_lines(stderr: str) -> list:
    """iobench's own stderr lines (mpirun adds its own banner when a rank exits non-zero)."""
    return [line for line in stderr.splitlines() if line.startswith("iobench")]


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
