"""Tests of ember.jit (IR, tracing, serialization, passes), ember.fx, ember.export, meta."""
