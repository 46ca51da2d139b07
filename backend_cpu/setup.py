from setuptools import setup

setup(cffi_modules=["ember_backend_cpu/_build.py:ffibuilder"])
