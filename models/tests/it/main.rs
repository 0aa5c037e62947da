//! Integration tests of the models: one binary, one module per family.

mod redis;
mod redlock;
mod support;
