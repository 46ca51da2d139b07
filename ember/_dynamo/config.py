"""``ember._dynamo.config`` is ``ember.compiler.config`` (one module: settings made through
either name are seen by both)."""

import sys

from ember.compiler import config as _config

sys.modules[__name__] = _config
