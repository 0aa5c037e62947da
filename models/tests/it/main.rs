//! Integration tests of the models: one binary, one module per family.

mod consul;
mod etcd;
mod kubernetes;
mod leader;
mod postgres;
mod raft;
mod raft_host;
mod raft_safety;
mod redis;
mod redis_ha;
mod redlock;
mod support;
mod zookeeper;
