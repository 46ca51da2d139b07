from setuptools import setup

setup(cffi_modules=["ember_op_example/_build.py:ffibuilder"])
