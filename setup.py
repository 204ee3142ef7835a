"""Build of the one compiled piece: the ClassAd parser's C accelerator, ``sheaf.classad._cparse``.

Everything else is in pyproject.toml.  The extension is optional: where no C compiler or Python
headers are found, the build warns and goes on, and sheaf runs its pure-Python parser (the same
nodes, slower; ``SHEAF_PURE_PYTHON=1`` forces that path where the extension is built).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sheaf.classad._cparse",
            sources=[f"src/sheaf/classad/_cparse{part}.c"
                     for part in ("", "_scan", "_parse", "_load", "_eval")],
            depends=["src/sheaf/classad/_cparse.h"],
            optional=True,  # a failed compile warns; the pure-Python parser is then used
        ),
    ],
)
