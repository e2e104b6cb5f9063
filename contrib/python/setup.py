"""Build options only; the package is described in pyproject.toml.

setuptools builds in the source folder by default: `pip install
./contrib/python` would leave build/ and gradwatch.egg-info/ in the
checkout.  Here both go to a temporary folder, removed when the build
process exits, so installing never writes into the source tree.  (setup.py
is run by exec, so no __pycache__ appears for it either.)
"""
import atexit
import shutil
import tempfile

from setuptools import setup

_tmp = tempfile.mkdtemp(prefix='gradwatch-build-')
atexit.register(shutil.rmtree, _tmp, True)

setup(options={'build': {'build_base': _tmp + '/build'},
               'egg_info': {'egg_base': _tmp}})
