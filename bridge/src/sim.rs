//! What the example client and the hosts need of a simulated runtime, and nothing more: TCP
//! to a host by name, a listener, a local task, sleeps and timeouts on the simulated clock,
//! and what happens at a mark. Each runtime's module implements it (`turmoil::Turmoil`,
//! `madsim::Madsim`); [`crate::client`] and [`crate::hosts`] are written once against it.
//!
//! Streams are tokio's `AsyncRead + AsyncWrite`, which both runtimes' TCP implement. A
//! writer flushes after each request: madsim's stream sends its bytes only on `flush`
//! (turmoil's flush does nothing).

use std::fmt::Debug;
use std::future::Future;
use std::io;
use std::ops::Add;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

use crate::marks::Marks;

/// A simulated runtime, as the client and the hosts use it. Every call is made from inside
/// the runtime's simulation, on one of its hosts.
pub trait Sim: Debug + 'static {
    /// A TCP stream.
    type Stream: AsyncRead + AsyncWrite + Unpin + Debug + 'static;
    /// A TCP listener.
    type Listener: 'static;
    /// A point on the host's monotonic clock.
    type Instant: Copy + Ord + Add<Duration, Output = Self::Instant>;

    /// Connects to `port` on the host named `host`.
    fn connect(host: &str, port: u16) -> impl Future<Output = io::Result<Self::Stream>>;
    /// Listens on `port` on every address of this host.
    fn bind(port: u16) -> impl Future<Output = io::Result<Self::Listener>>;
    /// The next connection, with the name of the host it came from when the runtime knows it.
    fn accept(
        listener: &Self::Listener,
    ) -> impl Future<Output = io::Result<(Self::Stream, Option<String>)>>;
    /// Runs `task` on this host beside the caller (it dies with the host).
    fn spawn_local(task: impl Future<Output = ()> + 'static);
    /// Sleeps `d` of simulated time.
    fn sleep(d: Duration) -> impl Future<Output = ()>;
    /// `f`'s output, or `None` when it takes longer than `d`.
    fn timeout<F: Future>(d: Duration, f: F) -> impl Future<Output = Option<F::Output>>;
    /// Now on this host's monotonic clock.
    fn now() -> Self::Instant;
    /// Now on this host's clock in milliseconds (the Redis host's expiry clock).
    fn host_ms() -> u64;
    /// `node` reached `mark`: whatever the plan placed there happens before this returns.
    fn reach(marks: &Marks, node: &str, mark: &str) -> impl Future<Output = ()>;
}
