"""Tests of ember.jit (graph IR, tracing, serialization, passes), ember.fx, ember.export and the meta device."""
