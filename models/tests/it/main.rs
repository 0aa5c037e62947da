//! Integration tests of the models: one binary, one module per family.

mod redis;
mod redis_ha;
mod redlock;
mod support;
