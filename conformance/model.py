"""The model side of the conformance suite: lockstep's own scenarios under conformance/scenarios/,
run over seeds with the release binary, each figure read from the run's trace
(`lockstep run FILE --seed S --trace --format json`): true time, node, kind, text per line.
"""

import json
import re
import subprocess

_LINE = re.compile(r"^\s*(\d+\.\d+)s\s+(\S+)\s+(\S+)\s+(.*)$")


def trace(binary, scenario, seed):
    """The parsed trace of one seed: [(seconds, node, kind, text)]."""
    out = subprocess.run(
        [binary, "run", scenario, "--seed", str(seed), "--trace", "--format", "json"],
        capture_output=True, timeout=300,
    )
    if out.returncode not in (0, 1):
        raise RuntimeError(f"lockstep run {scenario} --seed {seed}: exit {out.returncode}: {out.stderr.decode()[-400:]}")
    doc = json.loads(out.stdout)
    if doc.get("miss"):
        raise RuntimeError(f"{scenario} seed {seed}: the scenario missed its expectation: {doc.get('unmet')}")
    lines = []
    for raw in doc["trace"]:
        m = _LINE.match(raw)
        if m:
            lines.append((float(m.group(1)), m.group(2), m.group(3), m.group(4)))
    return lines


def _dur_ms(number, unit):
    """Whole milliseconds of a trace's `Dur(...)`: exact, in its largest unit (docs/trace.md)."""
    scale = {"s": 1000, "ms": 1, "µs": 0.001, "ns": 0.000001}[unit]
    return int(float(number) * scale)


def _fault_time(lines, words):
    for t, _node, kind, text in lines:
        if kind == "FAULT" and text.startswith(words):
            return t
    raise RuntimeError(f"no fault '{words}' in the trace")


def sentinel_failover_start(binary, scenario, seeds, fault):
    """Per seed: the first vote request (IsMasterDown with a candidate) delivered between
    sentinels after the fault, less the fault's time ('crash redis-1' or 'pause redis-1')."""
    out = []
    for seed in seeds:
        lines = trace(binary, scenario, seed)
        t0 = _fault_time(lines, fault)
        start = next(
            t for t, _n, kind, text in lines
            if t >= t0 and kind == "recv" and "IsMasterDown" in text and "candidate: Some" in text
        )
        out.append(start - t0)
    return out


def etcd_lease_expiry(binary, scenario, seeds):
    """Per seed: the watch event telling client-2 its predecessor's key is deleted, less the
    last keepalive response delivered to client-1 before its pause."""
    out = []
    for seed in seeds:
        lines = trace(binary, scenario, seed)
        t0 = _fault_time(lines, "pause client-1")
        last = max(
            t for t, node, kind, text in lines
            if t <= t0 and node == "client-1" and kind == "recv" and "reply: KeepAlive" in text
        )
        deleted = next(
            t for t, node, kind, text in lines
            if t > t0 and node == "client-2" and kind == "recv" and "WatchEvent" in text and "kind: Delete" in text
        )
        out.append(deleted - last)
    return out


def zk_ping_intervals(binary, scenario, seeds, pings):
    """Per seed: the first `pings` intervals between ping responses (Pong) delivered to
    client-1; and per seed the session timeout client-1's first Connected reply negotiated (ms)."""
    out, negotiated = [], []
    for seed in seeds:
        lines = trace(binary, scenario, seed)
        pongs = [t for t, node, kind, text in lines if node == "client-1" and kind == "recv" and "reply: Pong" in text]
        for _t, node, kind, text in lines:
            m = re.search(r"Connected \{ session: \d+, timeout: Dur\(([\d.]+)(s|ms|µs|ns)\)", text)
            if node == "client-1" and m:
                negotiated.append(_dur_ms(m.group(1), m.group(2)))
                break
        out.extend(b - a for a, b in list(zip(pongs, pongs[1:]))[:pings])
    return out, negotiated


def zk_session_expiry(binary, scenario, seeds):
    """Per seed: the NodeDeleted watch notification delivered to client-2, less the last ping
    response delivered to client-1 before its pause."""
    out = []
    for seed in seeds:
        lines = trace(binary, scenario, seed)
        t0 = _fault_time(lines, "pause client-1")
        last = max(
            t for t, node, kind, text in lines
            if t <= t0 and node == "client-1" and kind == "recv" and "reply: Pong" in text
        )
        deleted = next(
            t for t, node, kind, text in lines
            if t > t0 and node == "client-2" and kind == "recv" and "kind: NodeDeleted" in text
        )
        out.append(deleted - last)
    return out


def redis_key_life(binary, scenario, seeds):
    """Per seed: client-2's first successful SET (an Ok reply from the server), less
    client-1's."""
    out = []
    for seed in seeds:
        lines = trace(binary, scenario, seed)
        first = {}
        for t, node, kind, text in lines:
            if kind == "recv" and "redis -> " in text and "reply: Ok" in text and node not in first:
                first[node] = t
        out.append(first["client-2"] - first["client-1"])
    return out


def zk_disconnected(binary, scenario, seeds):
    """Per seed: client-1's `suspended` mark (Disconnected) less the last ping response
    delivered to it before the partition."""
    out = []
    for seed in seeds:
        lines = trace(binary, scenario, seed)
        t0 = _fault_time(lines, "partition")
        last = max(
            t for t, node, kind, text in lines
            if t <= t0 and node == "client-1" and kind == "recv" and "reply: Pong" in text
        )
        mark = next(
            t for t, node, kind, text in lines
            if t > t0 and node == "client-1" and kind == "mark" and text == "suspended"
        )
        out.append(mark - last)
    return out


def _report(binary, scenario, seed):
    """The JSON report of one seed, untraced (`lockstep run FILE --seed S --format json`)."""
    out = subprocess.run(
        [binary, "run", scenario, "--seed", str(seed), "--format", "json"],
        capture_output=True, timeout=300,
    )
    if out.returncode not in (0, 1):
        raise RuntimeError(f"lockstep run {scenario} --seed {seed}: exit {out.returncode}: {out.stderr.decode()[-400:]}")
    doc = json.loads(out.stdout)
    if doc.get("miss"):
        raise RuntimeError(f"{scenario} seed {seed}: the scenario missed its expectation: {doc.get('unmet')}")
    return doc


def tcp_partition_arrival(binary, scenario, seeds):
    """Per seed: the write client-1 sent into the one-way partition client-1 -> storage,
    delivered at storage by the first retransmission through, less the heal (the partition's
    timed end): the real side's `iptables -D` to the server's read."""
    out = []
    for seed in seeds:
        lines = trace(binary, scenario, seed)
        t0 = _fault_time(lines, "partition")
        heal = _fault_time(lines, "heal")
        arrived = next(
            t for t, node, kind, text in lines
            if t >= heal and node == "storage" and kind == "recv" and text.startswith("client-1 -> storage:")
        )
        stalled = [t for t, node, kind, _text in lines if t0 <= t < heal and node == "storage" and kind == "stall"]
        if not stalled:
            raise RuntimeError(f"{scenario} seed {seed}: nothing was written into the partition")
        out.append(arrived - heal)
    return out


def tcp_retries_reset(binary, scenario, seeds):
    """Per seed: client-1's abort of its connection to storage (its `reset` line: the
    retransmissions ran out), less the permanent partition it wrote into at once (the real
    side's write to the socket's ETIMEDOUT)."""
    out = []
    for seed in seeds:
        lines = trace(binary, scenario, seed)
        t0 = _fault_time(lines, "partition")
        reset = next(
            t for t, node, kind, text in lines
            if t >= t0 and node == "client-1" and kind == "reset" and "retransmissions ran out" in text
        )
        out.append(reset - t0)
    return out


def pg_keepalive_freed(binary, scenario, seeds):
    """Per seed: client-2's grant (the reply to its blocked pg_advisory_lock), less the last
    message `postgres` received from client-1 before the partition cut it off both ways (the
    real side's A's reply, followed within a millisecond by A's ACK, the last segment the
    server hears from it)."""
    out = []
    for seed in seeds:
        lines = trace(binary, scenario, seed)
        t0 = _fault_time(lines, "partition")
        last = max(
            t for t, node, kind, text in lines
            if t <= t0 and node == "postgres" and kind == "recv" and text.startswith("client-1 -> postgres:")
        )
        granted = next(
            t for t, node, kind, text in lines
            if t > t0 and node == "client-2" and kind == "history" and text.startswith("Grant {")
        )
        out.append(granted - last)
    return out


def pg_paused_holder_kept(binary, scenario, seeds, censor_s=60.0):
    """Per seed: client-2's first grant (a successful pg_try_advisory_lock) less client-1's
    grant (the reply to its lock query), or `censor_s` when client-2 was not granted within
    `censor_s` of it (the real side's censoring at 60 s)."""
    out = []
    for seed in seeds:
        lines = trace(binary, scenario, seed)
        t0 = _fault_time(lines, "pause client-1")
        reply = max(
            t for t, node, kind, text in lines
            if t <= t0 and node == "client-1" and kind == "history" and text.startswith("Grant {")
        )
        granted = next(
            (t for t, node, kind, text in lines
             if node == "client-2" and kind == "history" and text.startswith("Grant {")),
            None,
        )
        out.append(censor_s if granted is None else min(censor_s, granted - reply))
    return out


def pgbouncer_double_grants(binary, scenario, seeds, mode):
    """Per seed: the run's `double_holders` (pairs of critical sections of different clients
    that overlapped): with one client-1 grant and one client-2 request, 1 when client-2 was
    granted while client-1 held the lock, else 0. `mode` is the pool mode the scenario file
    must set (its `[model] pooler`), checked."""
    with open(scenario) as f:
        if not re.search(rf'^\s*pooler\s*=\s*"{mode}"', f.read(), re.M):
            raise RuntimeError(f"{scenario}: not pooler = \"{mode}\"")
    return [_report(binary, scenario, seed)["double_holders"] for seed in seeds]
