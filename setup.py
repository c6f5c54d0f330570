"""Build script for the compiled twins of kleene's hot loops (Cython, optional).

Everything else is in pyproject.toml.  Each extension has a pure-Python original that stays the
readable reference: when an extension cannot be built (no C compiler) the install goes on without
it (``optional=True``) and kleene runs the Python code; ``KLEENE_PURE_PYTHON=1`` does the same on
purpose.  ``kleene.native.compiled()`` tells which are in use.
"""

from Cython.Build import cythonize
from setuptools import Extension, setup

EXTENSIONS = [
    Extension("kleene.runtime._step", ["src/kleene/runtime/_step.pyx"], optional=True),
    Extension("kleene.runtime._loop", ["src/kleene/runtime/_loop.pyx"], optional=True),
    Extension("kleene.runtime._walk", ["src/kleene/runtime/_walk.pyx"], optional=True),
    Extension("kleene.runtime._last", ["src/kleene/runtime/_last.pyx"], optional=True),
    Extension("kleene.runtime._nxt", ["src/kleene/runtime/_nxt.pyx"], optional=True),
    Extension("kleene.io._jsonl", ["src/kleene/io/_jsonl.pyx"], optional=True),
    Extension("kleene.registers._vectortree", ["src/kleene/registers/_vectortree.pyx"],
              depends=["src/kleene/registers/_limbs.pxd", "src/kleene/registers/_int64.pxd"],
              optional=True),
    Extension("kleene.runtime._mr_scan", ["src/kleene/runtime/_mr_scan.pyx"], language="c++",
              optional=True),
]

# include_path: the tree cimports kleene.registers._limbs and _int64 (.pxd files of inline C
# kernels), found under src/ also in pip's isolated build, where kleene itself is not importable.
setup(ext_modules=cythonize(EXTENSIONS, language_level=3, quiet=True, include_path=["src"]))
