# Spack recipe for iobench, the MPI I/O benchmark of ioregress.
#
# There is no release tarball and no web page of its own: every environment builds the checkout's
# src/ with `spack develop` (see spack_env/systems/*/spack.yaml), so the version below is only a
# label, and the recipe names no homepage, url or maintainers (ioregress's README is the home).
from spack_repo.builtin.build_systems.cmake import CMakePackage

from spack.package import *

# variant name -> (CMake option in src/CMakeLists.txt, backend name in iobench-features.txt)
BACKEND_VARIANTS = {
    "hdf5": ("IOBENCH_WITH_HDF5", "hdf5"),
    "adios2": ("IOBENCH_WITH_ADIOS2", "adios2"),
    "sionlib": ("IOBENCH_WITH_SIONLIB", "sionlib"),
}


class Iobench(CMakePackage):
    """iobench: one MPI C benchmark for parallel I/O (POSIX, MPI-IO, HDF5, ADIOS2, SIONlib)
    with honest timing (data synced inside the timer, page cache defeated on reads).

    Variants (each adds an iobench --backend; POSIX and MPI-IO are always built):
      +hdf5     parallel HDF5 >= 1.10: H5Pset_all_coll_metadata_ops / H5Pset_coll_metadata_write
                (collective metadata, the MDDatasets check) appeared in 1.10.0
      +adios2   ADIOS2 >= 2.8 with MPI: the BP5 engine (adios2:bp5, the default nightly mode)
                appeared in 2.8.0; BP4 and the HDF5 engine are used as the ADIOS2 build has them
      +sionlib  SIONlib task-local containers (independent, collective, collectivemerge)
    The floors matter with `concretizer: reuse: true`: without them an older installed HDF5 or
    ADIOS2 would be reused and fail at build time (HDF5) or at run time (no BP5 engine).
    """

    license("BSD-3-Clause")  # the repository's LICENSE

    version("0.1.0")

    variant("hdf5", default=True, description="Parallel HDF5 backend (HDF5 >= 1.10, +mpi)")
    variant("adios2", default=False,
            description="ADIOS2 backend: BP5, BP4 and HDF5 engines (ADIOS2 >= 2.8, +mpi)")
    variant("sionlib", default=False, description="SIONlib backend (task-local containers)")

    depends_on("c", type="build")
    depends_on("cmake@3.18:", type="build")
    depends_on("mpi")
    depends_on("hdf5@1.10:+mpi", when="+hdf5")
    depends_on("adios2@2.8:+mpi", when="+adios2")
    depends_on("sionlib", when="+sionlib")

    def cmake_args(self):
        args = [self.define_from_variant(opt, name) for name, (opt, _) in BACKEND_VARIANTS.items()]
        if self.spec.satisfies("+sionlib"):
            # src/cmake/FindSIONlib.cmake looks for sionconfig under SIONLIB_ROOT.
            args.append(self.define("SIONLIB_ROOT", self.spec["sionlib"].prefix))
        return args

    @run_after("install")
    def check_backends_built(self):
        # CMake disables a backend quietly when its library is not found; a Spack build that
        # asked for it must fail instead of installing an iobench without it.
        features_file = join_path(self.prefix, "share", "iobench", "iobench-features.txt")
        with open(features_file) as f:
            built = f.read().split()
        for name, (_, backend) in BACKEND_VARIANTS.items():
            if self.spec.satisfies(f"+{name}") and backend not in built:
                raise InstallError(
                    f"iobench: +{name} requested but the {backend} backend was not built "
                    f"(features: {' '.join(built)})"
                )
