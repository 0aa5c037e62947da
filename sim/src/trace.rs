//! The trace: every event the world handles, folded into a stable 64-bit hash and, when asked,
//! kept as readable lines.
//!
//! The hash is the determinism check and the golden value of tests: any change to what a run
//! does (a message, a timer, a fault, a history event, their times) changes it. It is a plain
//! multiply-rotate mix over the `Hash` impls of the traced values, fixed in this file, so it is
//! the same on every platform and build.

use std::hash::Hasher;

use crate::time::Time;
use crate::world::NodeId;

/// A stable, fast, non-cryptographic 64-bit hasher for traces.
#[derive(Clone, Debug)]
pub struct TraceHasher {
    state: u64,
}

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl TraceHasher {
    /// A hasher in its initial state.
    pub fn new() -> TraceHasher {
        TraceHasher {
            state: 0x6c6f_636b_7374_6570,
        } // "lockstep"
    }

    #[inline]
    fn mix(&mut self, x: u64) {
        self.state = (self.state ^ x).wrapping_mul(K).rotate_left(29);
    }
}

impl Default for TraceHasher {
    fn default() -> TraceHasher {
        TraceHasher::new()
    }
}

impl Hasher for TraceHasher {
    fn finish(&self) -> u64 {
        // A final avalanche so that nearby states give unrelated hashes.
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.mix(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            self.mix(tail(rest) ^ ((rest.len() as u64) << 56));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.mix(u64::from(i));
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.mix(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.mix(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.mix(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.mix(i as u64);
    }
    #[inline]
    fn write_i64(&mut self, i: i64) {
        self.mix(i as u64);
    }
    #[inline]
    fn write_isize(&mut self, i: isize) {
        self.mix(i as u64);
    }
}

/// The 1 to 7 bytes of `rest` as a little-endian `u64`, zero above them: the value
/// `u64::from_le_bytes` gives of them copied into a zeroed `[u8; 8]`. Read as two overlapping
/// loads instead, because the copy (a `memcpy` call of a variable length, then an 8-byte load
/// of what it stored byte by byte) stalled on store forwarding: three quarters of the time of
/// `write`, which hashes every key and value string of every traced message.
#[inline]
fn tail(rest: &[u8]) -> u64 {
    let n = rest.len();
    debug_assert!((1..8).contains(&n));
    let le32 = |at: usize| u64::from(u32::from_le_bytes(rest[at..at + 4].try_into().unwrap()));
    let le16 = |at: usize| u64::from(u16::from_le_bytes(rest[at..at + 2].try_into().unwrap()));
    // The two reads overlap when `n` is not a power of two; the overlapping bytes land on the
    // same bits from both, so or-ing them is exact.
    if n >= 4 {
        le32(0) | (le32(n - 4) << (8 * (n - 4)))
    } else if n >= 2 {
        le16(0) | (le16(n - 2) << (8 * (n - 2)))
    } else {
        u64::from(rest[0])
    }
}

/// What kind of event a trace line records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceKind {
    /// A message was handed to its receiver.
    Deliver,
    /// A message was lost: link loss, a partition in drop mode, a crashed receiver.
    Drop,
    /// A message arrived at a blocked link in hold mode and waits for the heal.
    Hold,
    /// A message arrived at a paused receiver and waits for the resume.
    Defer,
    /// A timer fired.
    Timer,
    /// The world applied a fault.
    Fault,
    /// A process reached a named mark.
    Mark,
    /// A process recorded a history event.
    Record,
    /// A process started or restarted.
    Start,
    /// A connection was reset: the peer learns it (a FIN or RST from a dead process's host,
    /// a refused connect), or the sender's retransmissions ran out.
    Reset,
    /// A TCP segment got no acknowledgement (a partition, the link's loss, a frozen host):
    /// it waits for its sender's retransmission.
    Stall,
    /// A sender's kernel retransmitted what waited on a link.
    Retransmit,
}

/// One readable trace line (kept only when tracing is on).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEntry {
    /// True time of the event.
    pub time: Time,
    /// The kind of event.
    pub kind: TraceKind,
    /// The node the event happened at.
    pub node: NodeId,
    /// A description: the message, the timer, the fault.
    pub text: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hash;

    fn hash_of<T: Hash>(v: &T) -> u64 {
        let mut h = TraceHasher::new();
        v.hash(&mut h);
        h.finish()
    }

    #[test]
    fn a_tail_reads_as_its_zero_padded_bytes() {
        let bytes: Vec<u8> = (1..=8).map(|i| 0x10 * i + i).collect();
        for n in 1..8 {
            let mut buf = [0u8; 8];
            buf[..n].copy_from_slice(&bytes[..n]);
            assert_eq!(tail(&bytes[..n]), u64::from_le_bytes(buf), "{n} bytes");
        }
    }

    #[test]
    fn hash_is_pinned() {
        // Golden values: a change here changes every golden trace hash.
        assert_eq!(hash_of(&(1u64, "ping", -3i64)), 0x703b_996c_8e31_a601);
        assert_eq!(hash_of(&()), 0x8574_94ab_d8fd_accc);
    }

    #[test]
    fn byte_strings_of_different_lengths_differ() {
        assert_ne!(hash_of(&"ab"), hash_of(&"ab\0"));
    }
}
