# shellcheck shell=bash
# Sourced, not run:  source OUT/env.sh
# Points a build and a run of Tandem at the Debian libraries that
# tools/gpu/bundle_debs.sh unpacked into OUT/root (docs/gpu.md). It changes
# only the shell that sources it. bundle_debs.sh copies it into OUT; it
# finds the bundle from its own location, so OUT may be moved.
tandem_bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export TANDEM_DEB_ROOT=$tandem_bundle/root
# Debian's multiarch folder name (x86_64-linux-gnu), as the bundle has it.
TANDEM_DEB_ARCH=$(find "$TANDEM_DEB_ROOT/usr/lib" -mindepth 1 -maxdepth 1 -type d -name '*-linux-gnu*' -printf '%f\n' | head -n 1)
export TANDEM_DEB_ARCH
tandem_lib=$TANDEM_DEB_ROOT/usr/lib/$TANDEM_DEB_ARCH

# CMake: the packages' config files (yaml-cpp, GTest, benchmark, Boost,
# nlohmann_json, CLI11), headers and libraries. The second prefix covers hosts
# whose compiler reports no multiarch folder (not Debian or Ubuntu).
export CMAKE_PREFIX_PATH=$TANDEM_DEB_ROOT/usr:$tandem_lib${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
export CMAKE_INCLUDE_PATH=$TANDEM_DEB_ROOT/usr/include${CMAKE_INCLUDE_PATH:+:$CMAKE_INCLUDE_PATH}
export CMAKE_LIBRARY_PATH=$tandem_lib${CMAKE_LIBRARY_PATH:+:$CMAKE_LIBRARY_PATH}

# pkg-config (OpenBLAS for OpenMP, pcre2): only the bundle's .pc files. They
# say /usr/...; the sysroot maps that into the bundle.
export PKG_CONFIG_LIBDIR=$tandem_lib/openblas-openmp/pkgconfig:$tandem_lib/pkgconfig:$TANDEM_DEB_ROOT/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$TANDEM_DEB_ROOT

# Open MPI and its PMIx were built for /usr; these relocate them (compiler
# wrappers, mpirun, their plugins and help files) into the bundle.
export OPAL_PREFIX=$TANDEM_DEB_ROOT/usr
export PMIX_INSTALL_PREFIX=$tandem_lib/pmix2
export PMIX_PKGLIBDIR=$tandem_lib/pmix2/lib/pmix
export PMIX_PKGDATADIR=$tandem_lib/pmix2/share/pmix
# Debian's MCA defaults live in /etc/openmpi, which OPAL_PREFIX does not
# move. They turn off UCX and OFI; without them Open MPI picks UCX, and
# Tandem's point-to-point messages were seen never to arrive.
export OMPI_MCA_mca_base_param_files=$TANDEM_DEB_ROOT/etc/openmpi/openmpi-mca-params.conf
export PATH=$TANDEM_DEB_ROOT/usr/bin:$PATH

# The dynamic linker, at run time: the bundle's libraries and the ones they
# load in turn (CMake's RPATH covers only the libraries linked directly).
export LD_LIBRARY_PATH=$tandem_lib:$tandem_lib/openblas-openmp:$tandem_lib/openmpi/lib:$tandem_lib/pmix2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

unset tandem_bundle tandem_lib
