//! The Redlock family: one lock over independent Redis instances named `redis-1`,
//! `redis-2`, ... (docs/scenarios.md, `redlock`).

use lockstep_sim::{ClockKind, Dur, Distribution, NodeId};
use serde::Deserialize;

use super::{Flavour, RedlockClient, RedlockConfig};
use crate::family::{numbered, Family, Fencing, MarkSite, Role, Tokens};
use crate::keys::{Check, ClockName, DistSpec, MAX_MS, NoKeys, out_of_range};
use crate::lock::NoResource;
use crate::redis::family::{
    MAX_TRIES,
    CrashLosesName, PersistenceName, RenewSpec, ServerKeys, default_drift_factor, describe_server,
    drift_factor_ppm,
};
use crate::redis::{Msg, RedisNode, RedisServer, RedisServerConfig, Timer};

/// The Redlock family's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redlock {
    /// Every instance's settings.
    pub server: RedisServerConfig,
    /// How many instances.
    pub instances: u32,
    /// Every client's settings (`servers` is overwritten with the instances).
    pub client: RedlockConfig,
}

/// The `[model]` keys of `kind = "redlock"`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedlockKeys {
    kind: String,
    ttl_ms: f64,
    instances: Option<u32>,
    flavour: Option<FlavourName>,
    clock: Option<ClockName>,
    elapsed_check: Option<bool>,
    #[serde(default)]
    renew: RenewSpec,
    #[serde(default)]
    fencing: RedlockFencing,
    #[serde(default)]
    expiry_clock: ClockName,
    request_timeout_ms: Option<f64>,
    retry_delay_ms: Option<DistSpec>,
    acquire_tries: Option<u32>,
    #[serde(default = "default_drift_factor")]
    drift_factor: f64,
    #[serde(default)]
    persistence: PersistenceName,
    save: Option<Vec<[f64; 2]>>,
    #[serde(default)]
    crash_loses: CrashLosesName,
    #[serde(default)]
    restart_delay_ms: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum FlavourName {
    #[default]
    Antirez,
    Redsync,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum RedlockFencing {
    #[default]
    None,
    Value,
}

/// A whole-millisecond uniform range `lo..hi`: Redlock's clients draw their retry delay in
/// whole milliseconds.
fn whole_ms_range(check: &mut Check, path: &str, spec: DistSpec) -> (u64, u64) {
    let (lo, hi) = match spec {
        DistSpec::Constant(c) => (c, c),
        DistSpec::Uniform(lo, hi) => (lo, hi),
        _ => {
            check.problems.push(
                path,
                "Redlock draws whole milliseconds: give a number or { uniform = [lo, hi] }",
            );
            return (0, 0);
        }
    };
    let whole = |v: f64| v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= MAX_MS;
    if !whole(lo) || !whole(hi) || lo > hi {
        check.problems.push(
            path,
            format!("must be whole milliseconds from 0 to {MAX_MS} with lo <= hi, not [{lo}, {hi}]"),
        );
        return (0, 0);
    }
    (lo as u64, hi as u64)
}

impl Family for Redlock {
    const KIND: &'static str = "redlock";
    const NAME: &'static str = "Redlock";
    const FENCING: &'static [Fencing] = &[Fencing {
        name: "value",
        what: "its random value, for compare-and-set storage",
        ordered: false,
    }];

    type Msg = Msg;
    type Timer = Timer;
    type Node = RedisNode;
    type Lock = RedlockClient;
    type Keys = RedlockKeys;
    type ResourceKeys = NoKeys;

    fn resolve(k: &RedlockKeys, check: &mut Check) -> Redlock {
        debug_assert_eq!(k.kind, Self::KIND);
        let ttl = check.positive_ms("model.ttl_ms", k.ttl_ms);
        let drift_factor_ppm = drift_factor_ppm(check, k.drift_factor);
        let server = ServerKeys {
            persistence: k.persistence,
            save: k.save.as_deref(),
            crash_loses: k.crash_loses,
            restart_delay_ms: k.restart_delay_ms,
        }
        .resolve(check, k.expiry_clock, Distribution::ZERO);
        let instances = k.instances.unwrap_or(5);
        if !(1..=99).contains(&instances) {
            check.problems.push(
                "model.instances",
                format!("must be between 1 and 99, not {instances}"),
            );
        }
        let mut client = match k.flavour.unwrap_or_default() {
            FlavourName::Antirez => RedlockConfig::antirez(Vec::new(), ttl),
            FlavourName::Redsync => RedlockConfig::redsync(Vec::new(), ttl),
        };
        if let Some(c) = k.clock {
            client.clock = c.kind();
        }
        if let Some(t) = k.request_timeout_ms {
            client.timeout = check.positive_ms("model.request_timeout_ms", t);
        }
        if let Some(d) = k.retry_delay_ms {
            client.retry_delay_ms = whole_ms_range(check, "model.retry_delay_ms", d);
        }
        if let Some(tries) = k.acquire_tries {
            if tries == 0 {
                check.problems.push(
                    "model.acquire_tries",
                    format!("Redlock needs at least 1 try (expected 1 to {MAX_TRIES})"),
                );
            } else if tries > MAX_TRIES {
                check
                    .problems
                    .push("model.acquire_tries", out_of_range(tries, 1, MAX_TRIES));
            }
            client.tries = tries.clamp(1, MAX_TRIES);
        }
        client.drift_factor_ppm = drift_factor_ppm;
        client.elapsed_check = k.elapsed_check.unwrap_or(true);
        client.extend = match k.renew {
            RenewSpec::Bool(extend) => extend,
            RenewSpec::Mode(_) => {
                check.problems.push(
                    "model.renew",
                    "the renewal modes are Redis's; Redlock takes true or false",
                );
                false
            }
        };
        client.value_as_token = k.fencing == RedlockFencing::Value;
        Redlock {
            server,
            instances: instances.clamp(1, 99),
            client,
        }
    }

    fn resource(_: &NoKeys, _: &mut Check) -> Option<NoResource> {
        None
    }

    fn layout(&self) -> Vec<(String, Role)> {
        numbered("redis", self.instances, Role::Server)
    }

    fn build(&self, _: Option<&NoResource>) -> (Vec<RedisNode>, RedlockClient) {
        let nodes = (0..self.instances)
            .map(|_| RedisNode::Server(RedisServer::new(self.server.clone())))
            .collect();
        let client = RedlockClient::new(RedlockConfig {
            servers: (0..self.instances).map(NodeId).collect(),
            ..self.client.clone()
        });
        (nodes, client)
    }

    fn marks(&self) -> &'static [(&'static str, MarkSite)] {
        &[("acquire-sent", MarkSite::Client)]
    }

    fn tokens(&self) -> Tokens {
        // Random values, not ordered at all (K7 in docs/catalogue.md).
        if self.client.value_as_token {
            Tokens::Random
        } else {
            Tokens::None
        }
    }

    fn ttl(&self) -> Dur {
        self.client.ttl
    }

    /// One round over the instances (`acquire_tries = 1`).
    fn lapses(&self) -> Option<&'static str> {
        (!self.client.extend).then_some(
            "its keys expire ttl_ms after the grant, as nothing extends them: set model.renew = \
             true (extended every ttl_ms / 3 while a quorum agrees)",
        )
    }

    fn try_once(&mut self) -> bool {
        self.client.tries = 1;
        true
    }

    fn count_requests(&mut self) -> bool {
        self.client.count_requests = true;
        true
    }

    /// Lock `n` is the key `lock:n` on every instance.
    fn many_locks(&self) -> bool {
        true
    }

    fn expiry_wall_clocks(&self) -> &'static [Role] {
        // A key's deadline is on its server's `expiry_clock` (`mstime()` by default).
        match self.server.expiry_clock {
            ClockKind::Wall => &[Role::Server],
            ClockKind::Mono => &[],
        }
    }

    fn describe(&self) -> Vec<String> {
        let client = &self.client;
        let flavour = match client.flavour {
            Flavour::Antirez => "antirez",
            Flavour::Redsync => "redsync",
        };
        let mut p = vec![
            format!("redlock {flavour} ×{}", self.instances),
            format!("ttl {}", client.ttl),
        ];
        if !client.elapsed_check {
            p.push("no elapsed check".to_string());
        }
        if client.extend {
            p.push("extended".to_string());
        }
        if client.value_as_token {
            p.push("value as token".to_string());
        }
        p.extend(describe_server(&self.server));
        p
    }

    fn describe_resource(resource: &NoResource) -> String {
        match *resource {}
    }
}
