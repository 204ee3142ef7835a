"""Build of sheaf's compiled pieces, all optional: the ClassAd parser's C accelerator
(``sheaf.classad._cparse``), the local backend's spawner thread (``sheaf.backends.local._cspawn``) and
``sheaf-cluster-c``, the compiled seqexec runner.

Everything else is in pyproject.toml.  Where no C compiler (or no Python headers) is found, the build
warns and goes on, and sheaf runs its pure-Python code (``SHEAF_PURE_PYTHON=1`` forces that where
the compiled pieces are built).  ``sheaf-cluster-c`` is a program, not an extension module: it is
compiled by the same ``build_ext`` step into ``sheaf/jobtools/_bin/`` -- in the source tree for an
editable install, in the build tree (and so the wheel) otherwise -- and codegen names it as a
clustered job's executable when it is there (``sheaf.codegen._write``).
"""

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CLUSTER_SOURCES = [f"src/sheaf/jobtools/_cluster{part}.c" for part in ("", "_read")]
CLUSTER_PROGRAM = "sheaf-cluster-c"


class BuildExtAndCluster(build_ext):
    """``build_ext``, then the seqexec runner, linked as an executable beside the package's code."""

    def run(self):
        super().run()
        try:
            self._build_cluster()
        except Exception as exc:  # noqa: BLE001 -- optional, as the extension: warn, keep Python's
            self.warn(f"{CLUSTER_PROGRAM} not built ({exc}); clustered jobs run the Python sheaf-cluster")

    def _cluster_dir(self):
        return os.path.dirname(self.get_ext_fullpath("sheaf.jobtools._bin.program"))

    def _build_cluster(self):
        from setuptools._distutils.ccompiler import new_compiler
        from setuptools._distutils.sysconfig import customize_compiler

        compiler = new_compiler()
        customize_compiler(compiler)
        out_dir = self._cluster_dir()
        os.makedirs(out_dir, exist_ok=True)
        objects = compiler.compile(CLUSTER_SOURCES, output_dir=self.build_temp,
                                   depends=["src/sheaf/jobtools/_cluster.h"],
                                   extra_postargs=["-O2", "-std=gnu11"])
        compiler.link_executable(objects, CLUSTER_PROGRAM, output_dir=out_dir)

    def get_outputs(self):
        return [*super().get_outputs(), os.path.join(self._cluster_dir(), CLUSTER_PROGRAM)]


setup(
    cmdclass={"build_ext": BuildExtAndCluster},
    ext_modules=[
        Extension(
            "sheaf.classad._cparse",
            sources=[f"src/sheaf/classad/_cparse{part}.c"
                     for part in ("", "_scan", "_parse", "_load", "_eval")],
            depends=["src/sheaf/classad/_cparse.h"],
            optional=True,  # a failed compile warns; the pure-Python parser is then used
        ),
        Extension(
            "sheaf.backends.local._cspawn",
            sources=["src/sheaf/backends/local/_cspawn.c"],
            optional=True,  # without it the local backend spawns in the engine's thread (_spawn.spawn)
        ),
    ],
)
