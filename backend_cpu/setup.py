from setuptools import setup

setup(
    cffi_modules=[
        "ember_backend_cpu/_build.py:ffibuilder",
        "ember_backend_cpu/_build.py:held_builder",
    ]
)
