"""The real side of the conformance suite: small local servers from Debian's packages, timed.

Each measure_* function starts what it needs under a private directory, returns a list of
samples in seconds, and leaves nothing running (every process it starts is registered with
Procs, which conformance/run's trap and this module's finally blocks stop). Every wait on a real
server has a deadline. docs/conformance.md says what each figure is and where it comes from.
"""

import errno
import os
import random
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time


class Procs:
    """Every process this run started, so that all of them are stopped on any exit."""

    def __init__(self):
        self.live = []
        # conformance/run's trap reads this file and stops every group in it, even if this
        # interpreter dies before its own cleanup.
        self.pidfile = os.environ.get("LOCKSTEP_CONFORMANCE_PIDS")

    def start(self, args, **kw):
        kw.setdefault("stdin", subprocess.DEVNULL)
        p = subprocess.Popen(args, start_new_session=True, **kw)
        self.live.append(p)
        if self.pidfile:
            with open(self.pidfile, "a") as f:
                f.write(f"{p.pid}\n")
        return p

    def stop(self, p, sig=signal.SIGKILL):
        if p.poll() is None:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if p in self.live:
            self.live.remove(p)

    def stop_all(self):
        for p in list(self.live):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            self.stop(p)


PROCS = Procs()

# Where the servers keep their files: conformance/run's own temporary directory.
BASE = os.environ.get("LOCKSTEP_CONFORMANCE_DIR", "/tmp/lockstep-conformance")


class Lines:
    """Reads a process's stdout in a thread, stamping each line with time.monotonic()."""

    def __init__(self, stream):
        self.lines = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream):
        for raw in iter(stream.readline, b""):
            now = time.monotonic()
            with self.cond:
                self.lines.append((now, raw.decode(errors="replace").rstrip("\n")))
                self.cond.notify_all()

    def wait_for(self, pattern, timeout, start=0):
        """The first (time, line) at index >= start whose line matches, or None at the deadline."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self.cond:
            i = start
            while True:
                while i < len(self.lines):
                    if rx.search(self.lines[i][1]):
                        return self.lines[i]
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)

    def matching(self, pattern):
        rx = re.compile(pattern)
        with self.cond:
            return [(t, s) for t, s in self.lines if rx.search(s)]


def wait_port(port, timeout, proc=None, host="127.0.0.1"):
    """Until something listens on host:port; with `proc`, that process must still be running
    (a server that could not bind, because another process holds the port, has exited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited ({proc.returncode}) before listening on {host}:{port}: is the port taken?")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                pass
            if proc is not None:
                # A server that cannot bind exits at once; another's listener answered.
                time.sleep(0.3)
                if proc.poll() is not None:
                    continue
            return True
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {host}:{port} after {timeout} s")


def resp(port, *args, timeout=2.0):
    """One Redis command over RESP; the raw reply text (read until the server goes quiet)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        out = f"*{len(args)}\r\n".encode()
        for a in args:
            a = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        s.sendall(out)
        data = s.recv(65536)
        s.settimeout(0.1)
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            data += chunk
        return data.decode(errors="replace")


# --- Redis Sentinel --------------------------------------------------------------------------

SENTINEL_PORTS = (26391, 26392, 26393)
PRIMARY_PORT, REPLICA_PORT = 16391, 16392


def _redis(workdir, port, extra=""):
    conf = os.path.join(workdir, f"redis-{port}.conf")
    with open(conf, "w") as f:
        f.write(f"port {port}\nbind 127.0.0.1\nsave \"\"\nappendonly no\ndir {workdir}\n{extra}")
    p = PROCS.start(["redis-server", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, 10, p)
    return p


def _sentinel(workdir, port, down_after_ms):
    conf = os.path.join(workdir, f"sentinel-{port}.conf")
    with open(conf, "w") as f:
        f.write(
            f"port {port}\nbind 127.0.0.1\ndir {workdir}\n"
            f"sentinel monitor m 127.0.0.1 {PRIMARY_PORT} 2\n"
            f"sentinel down-after-milliseconds m {down_after_ms}\n"
            "sentinel failover-timeout m 60000\n"
            "sentinel parallel-syncs m 1\n"
        )
    p = PROCS.start(["redis-sentinel", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, 10, p)
    return p


class _Events:
    """A PSUBSCRIBE * on one sentinel: its events (+sdown, +odown, +try-failover, ...) timed."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.sendall(b"*2\r\n$10\r\nPSUBSCRIBE\r\n$1\r\n*\r\n")
        self.events = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        buf = b""
        self.sock.settimeout(None)
        while True:
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            now = time.monotonic()
            buf += chunk
            for name in re.findall(rb"\$\d+\r\n([+-][a-z-]+)\r\n", buf):
                with self.lock:
                    self.events.append((now, name.decode()))
            buf = buf[buf.rfind(b"\r\n") + 2:] if b"\r\n" in buf else buf

    def first(self, name, after):
        with self.lock:
            for t, n in self.events:
                if n == name and t >= after:
                    return t
        return None

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def measure_sentinel(runs, how, down_after_ms=5000, log=print):
    """Seconds from a kill -9 (how='kill') or SIGSTOP (how='stop') of the primary to the first
    sentinel's +try-failover (the start of the failover), one sample per run."""
    samples = []
    for run in range(runs):
        workdir = os.path.join(BASE, f"sentinel-{run}")
        shutil.rmtree(workdir, ignore_errors=True)
        os.makedirs(workdir)
        started = []
        try:
            primary = _redis(workdir, PRIMARY_PORT)
            started.append(primary)
            started.append(_redis(workdir, REPLICA_PORT, f"replicaof 127.0.0.1 {PRIMARY_PORT}\n"))
            for port in SENTINEL_PORTS:
                started.append(_sentinel(workdir, port, down_after_ms))
            # Wait until every sentinel knows the replica and the other two sentinels.
            deadline = time.monotonic() + 30
            while True:
                ok = all(
                    re.search(r"slaves=1,sentinels=3", resp(p, "INFO", "sentinel"))
                    for p in SENTINEL_PORTS
                )
                if ok:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("sentinels did not discover the replica and each other in 30 s")
                time.sleep(0.2)
            watchers = [_Events(p) for p in SENTINEL_PORTS]
            # A random phase against the sentinels' 1 s ping and 100 ms timer.
            time.sleep(1.0 + random.random() * 1.5)
            t0 = time.monotonic()
            if how == "kill":
                os.kill(primary.pid, signal.SIGKILL)
            else:
                os.kill(primary.pid, signal.SIGSTOP)
            deadline = t0 + down_after_ms / 1000 + 20
            t = None
            while time.monotonic() < deadline:
                firsts = [w.first("+try-failover", t0) for w in watchers]
                firsts = [x for x in firsts if x is not None]
                if firsts:
                    t = min(firsts)
                    break
                time.sleep(0.01)
            for w in watchers:
                w.close()
            if t is None:
                raise RuntimeError(f"no +try-failover within {down_after_ms / 1000 + 20} s of the {how}")
            samples.append(t - t0)
            log(f"  sentinel {how} run {run + 1}/{runs}: +try-failover {t - t0:.3f} s after the {how}")
        finally:
            for p in started:
                PROCS.stop(p)
            shutil.rmtree(workdir, ignore_errors=True)
    return samples


# --- etcd ------------------------------------------------------------------------------------

ETCD_CLIENT, ETCD_PEER = 23791, 23801


def _etcd(workdir):
    endpoint = f"http://127.0.0.1:{ETCD_CLIENT}"
    p = PROCS.start(
        [
            "etcd",
            "--name", "conf-1",
            "--data-dir", os.path.join(workdir, "data"),
            "--listen-client-urls", endpoint,
            "--advertise-client-urls", endpoint,
            "--listen-peer-urls", f"http://127.0.0.1:{ETCD_PEER}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{ETCD_PEER}",
            "--initial-cluster", f"conf-1=http://127.0.0.1:{ETCD_PEER}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_port(ETCD_CLIENT, 15, p)
    return p, endpoint


def _etcdctl(endpoint, *args, timeout=10):
    out = subprocess.run(
        ["etcdctl", "--endpoints", endpoint, *args],
        capture_output=True, timeout=timeout, env={**os.environ, "ETCDCTL_API": "3"},
    )
    if out.returncode != 0:
        raise RuntimeError(f"etcdctl {' '.join(args)}: {out.stderr.decode().strip()}")
    return out.stdout.decode()


def measure_etcd_lease(runs, ttl_s=2, log=print):
    """Seconds from the last keepalive response (etcdctl lease keep-alive, clientv3) to the
    key's deletion seen by a watcher, for a TTL-2 s lease whose keepalives stop; one sample per
    run, on one single-member etcd started for the measurement."""
    workdir = os.path.join(BASE, "etcd")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    env = {**os.environ, "ETCDCTL_API": "3"}
    samples = []
    server = None
    try:
        server, endpoint = _etcd(workdir)
        deadline = time.monotonic() + 15
        while True:
            try:
                _etcdctl(endpoint, "endpoint", "health", timeout=5)
                break
            except (RuntimeError, subprocess.TimeoutExpired):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        for run in range(runs):
            key = f"conformance-{run}"
            lease = re.search(r"lease ([0-9a-f]+) granted", _etcdctl(endpoint, "lease", "grant", str(ttl_s))).group(1)
            _etcdctl(endpoint, "put", key, "v", f"--lease={lease}")
            watch = PROCS.start(["etcdctl", "--endpoints", endpoint, "watch", key], env=env, stdout=subprocess.PIPE)
            wl = Lines(watch.stdout)
            # A random phase of the keepalive loop against the lessor's 500 ms ticker: without
            # it, each run starts a fixed time after the previous deletion, which the lessor's
            # tick timed, and every run lands at the same phase.
            time.sleep(random.random())
            keep = PROCS.start(["etcdctl", "--endpoints", endpoint, "lease", "keep-alive", lease], env=env, stdout=subprocess.PIPE)
            kl = Lines(keep.stdout)
            if kl.wait_for("keepalived", 10) is None:
                raise RuntimeError("etcdctl lease keep-alive got no response in 10 s")
            # Keep the lease alive for a random while, so the last keepalive falls anywhere
            # against the lessor's 500 ms tick.
            time.sleep(1.5 + random.random() * 1.5)
            PROCS.stop(keep)
            last = kl.matching("keepalived")[-1][0]
            deleted = wl.wait_for(r"^DELETE", ttl_s + 10)
            PROCS.stop(watch)
            if deleted is None:
                raise RuntimeError(f"the key was not deleted within {ttl_s + 10} s of the last keepalive")
            samples.append(deleted[0] - last)
            log(f"  etcd lease run {run + 1}/{runs}: deleted {deleted[0] - last:.3f} s after the last keepalive")
    finally:
        if server is not None:
            PROCS.stop(server)
        shutil.rmtree(workdir, ignore_errors=True)
    return samples


# --- ZooKeeper -------------------------------------------------------------------------------

ZK_PORT = 21891
ZK_JARS = ["zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-simple.jar"]


def zk_classpath():
    return ":".join(os.path.join("/usr/share/java", j) for j in ZK_JARS)


def _zk_server(workdir, tick_ms=2000):
    os.makedirs(os.path.join(workdir, "data"), exist_ok=True)
    cfg = os.path.join(workdir, "zoo.cfg")
    with open(cfg, "w") as f:
        f.write(
            f"tickTime={tick_ms}\ndataDir={workdir}/data\nclientPort={ZK_PORT}\n"
            "clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
        )
    p = PROCS.start(
        ["java", "-cp", zk_classpath(), "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    wait_port(ZK_PORT, 30, p)
    return p


def compile_zk_client(src_dir, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    subprocess.run(
        ["javac", "-cp", zk_classpath(), "-d", out_dir, os.path.join(src_dir, "ZkIdle.java")],
        check=True, timeout=120,
    )


_PING = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d\d\d) .*Got ping response")


def measure_zk_ping(client_dir, timeouts_ms, pings, log=print):
    """For each requested session timeout T: the negotiated timeout and the intervals between
    the Java client's (ClientCnxn, ZooKeeper 3.8 from Debian) ping responses on an idle session,
    read from ClientCnxn's DEBUG log. Returns {T: (negotiated_ms, [interval seconds])}."""
    workdir = os.path.join(BASE, "zk")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    out = {}
    server = None
    try:
        server = _zk_server(workdir)
        for t_ms in timeouts_ms:
            # pings + 1 responses give `pings` intervals; the first comes T/3 after connecting.
            idle_ms = int((pings + 1.5) * t_ms / 3)
            args = [
                "java",
                "-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.ClientCnxn=debug",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                "-Dorg.slf4j.simpleLogger.logFile=System.out",
                "-cp", zk_classpath() + ":" + client_dir,
                "ZkIdle", f"127.0.0.1:{ZK_PORT}", str(t_ms), str(idle_ms),
            ]
            res = subprocess.run(args, capture_output=True, timeout=idle_ms / 1000 + 60)
            text = res.stdout.decode(errors="replace")
            m = re.search(r"NEGOTIATED (\d+)", text)
            if res.returncode != 0 or not m:
                raise RuntimeError(f"ZooKeeper client at T={t_ms}: exit {res.returncode}: {text[-500:]}")
            stamps = []
            for line in text.splitlines():
                p = _PING.match(line)
                if p:
                    h, mi, s, ms = (int(x) for x in p.groups())
                    stamps.append(h * 3600 + mi * 60 + s + ms / 1000)
            intervals = [b - a if b >= a else b + 86400 - a for a, b in zip(stamps, stamps[1:])]
            if not intervals:
                raise RuntimeError(f"ZooKeeper client at T={t_ms}: fewer than two pings seen")
            out[t_ms] = (int(m.group(1)), intervals)
            log(
                f"  zk T={t_ms / 1000:g} s: negotiated {int(m.group(1))} ms, ping intervals "
                + ", ".join(f"{x:.3f}" for x in intervals)
            )
    finally:
        if server is not None:
            PROCS.stop(server)
        shutil.rmtree(workdir, ignore_errors=True)
    return out


def measure_zk_negotiation(client_dir, requested_ms, log=print):
    """The session timeout (seconds) the server grants a client that asks for each of
    `requested_ms`, on one ZooKeeper server with tickTime 2 s and the default bounds."""
    workdir = os.path.join(BASE, "zk-negotiate")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    out = {}
    server = None
    try:
        server = _zk_server(workdir)
        for t_ms in requested_ms:
            args = ["java", "-cp", zk_classpath() + ":" + client_dir, "ZkIdle", f"127.0.0.1:{ZK_PORT}", str(t_ms), "0"]
            res = subprocess.run(args, capture_output=True, timeout=60)
            m = re.search(r"NEGOTIATED (\d+)", res.stdout.decode(errors="replace"))
            if res.returncode != 0 or not m:
                raise RuntimeError(f"ZooKeeper client asking for {t_ms} ms: exit {res.returncode}")
            out[t_ms] = int(m.group(1)) / 1000
            log(f"  zk asked {t_ms} ms: negotiated {m.group(1)} ms")
    finally:
        if server is not None:
            PROCS.stop(server)
        shutil.rmtree(workdir, ignore_errors=True)
    return out


_PING_FULL = re.compile(r"^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\.(\d\d\d) .*Got ping response")


def measure_zk_session_expiry(client_dir, runs, t_ms=4000, log=print):
    """Seconds from the last ping response a client got to the deletion of its ephemeral node
    (seen by a second client's watch) when the client is stopped (SIGSTOP), for a session of
    t_ms on one ZooKeeper server with tickTime 2 s; one sample per run."""
    import calendar

    workdir = os.path.join(BASE, "zk-expiry")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    samples = []
    server = None
    try:
        server = _zk_server(workdir)
        for run in range(runs):
            path = f"/conformance-{run}"
            base = ["java", "-Duser.timezone=UTC", "-cp", zk_classpath() + ":" + client_dir, "ZkIdle", f"127.0.0.1:{ZK_PORT}"]
            holder = PROCS.start(
                base[:1] + [
                    "-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.ClientCnxn=debug",
                    "-Dorg.slf4j.simpleLogger.showDateTime=true",
                    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss.SSS",
                    "-Dorg.slf4j.simpleLogger.logFile=System.out",
                ] + base[1:] + [str(t_ms), "60000", "hold", path],
                stdout=subprocess.PIPE,
            )
            hl = Lines(holder.stdout)
            watcher = PROCS.start(base + ["40000", "60000", "watch", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            wl = Lines(watcher.stdout)
            if hl.wait_for("^CREATED", 30) is None or wl.wait_for("^WATCHING", 30) is None:
                raise RuntimeError("ZooKeeper clients did not create and watch the node in 30 s")
            # Let the holder ping a few times, then stop it at a random phase of its pings.
            time.sleep(2 * t_ms / 1000 + random.random() * 2)
            os.kill(holder.pid, signal.SIGSTOP)
            stopped = time.time()
            deleted = wl.wait_for("^DELETED", t_ms / 1000 + 15)
            PROCS.stop(watcher)
            PROCS.stop(holder)
            if deleted is None:
                raise RuntimeError(f"the ephemeral node was not deleted within {t_ms / 1000 + 15} s of the stop")
            deleted_s = int(deleted[1].split()[1]) / 1000
            pings = []
            for _t, line in hl.matching("Got ping response"):
                m = _PING_FULL.match(line)
                if m:
                    y, mo, d, h, mi, s, ms = (int(x) for x in m.groups())
                    pings.append(calendar.timegm((y, mo, d, h, mi, s)) + ms / 1000)
            pings = [p for p in pings if p <= stopped]
            if not pings:
                raise RuntimeError("no ping response seen before the stop")
            samples.append(deleted_s - pings[-1])
            log(f"  zk session T={t_ms / 1000:g} s run {run + 1}/{runs}: deleted {deleted_s - pings[-1]:.3f} s after the last ping response")
    finally:
        if server is not None:
            PROCS.stop(server)
        shutil.rmtree(workdir, ignore_errors=True)
    return samples


# --- Redis under a wall-clock step -----------------------------------------------------------

CLOCK_PORT = 16393


class _Conn:
    """One RESP connection kept open (a client's), for simple replies."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=2)
        self.buf = b""

    def call(self, *args):
        out = f"*{len(args)}\r\n".encode()
        for a in args:
            a = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError("redis-server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode()

    def close(self):
        self.sock.close()


def measure_redis_clock_step(shim, runs, step_s, ttl_ms=10_000, log=print):
    """A key set with PX ttl_ms on a redis-server whose wall clock (only) is stepped by step_s
    seconds 1-2 s later, through the LD_PRELOAD shim: seconds from the SET's reply to the first
    SET NX of a second client (every 10 ms) that succeeds; one sample per run."""
    import struct

    workdir = os.path.join(BASE, "redis-clock")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    offset_file = os.path.join(workdir, "offset")
    with open(offset_file, "wb") as f:
        f.write(struct.pack("<q", 0))
    conf = os.path.join(workdir, "redis.conf")
    with open(conf, "w") as f:
        f.write(f"port {CLOCK_PORT}\nbind 127.0.0.1\nsave \"\"\nappendonly no\ndir {workdir}\n")
    env = {**os.environ, "LD_PRELOAD": shim, "LOCKSTEP_CLOCK_OFFSET_FILE": offset_file}
    server = PROCS.start(["redis-server", conf], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples = []
    offset_ns = 0
    try:
        wait_port(CLOCK_PORT, 10, server)
        for run in range(runs):
            key = f"conformance-{run}"
            holder, waiter = _Conn(CLOCK_PORT), _Conn(CLOCK_PORT)
            if holder.call("SET", key, "holder", "NX", "PX", ttl_ms) != "+OK":
                raise RuntimeError("the first SET NX was refused")
            t0 = time.monotonic()
            time.sleep(1 + random.random())
            offset_ns += int(step_s * 1e9)
            with open(offset_file, "r+b") as f:
                f.write(struct.pack("<q", offset_ns))
            deadline = t0 + ttl_ms / 1000 + abs(step_s) + 10
            got = None
            while time.monotonic() < deadline:
                if waiter.call("SET", key, "waiter", "NX", "PX", ttl_ms) == "+OK":
                    got = time.monotonic()
                    break
                time.sleep(0.01)
            holder.close()
            waiter.close()
            if got is None:
                raise RuntimeError(f"the key outlived {deadline - t0:.0f} s")
            samples.append(got - t0)
            log(f"  redis wall step {step_s:+g} s run {run + 1}/{runs}: key gone {got - t0:.3f} s after the SET")
    finally:
        PROCS.stop(server)
        shutil.rmtree(workdir, ignore_errors=True)
    return samples


# --- ZooKeeper client under a partition (network namespace + iptables) ----------------------

NETNS = "lsconf-zk"
VETH_HOST, VETH_NS = "lsconf0", "lsconf1"
HOST_IP, NS_IP = "10.231.0.1", "10.231.0.2"
ZK_NS_PORT = 21892


def _sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, timeout=20)


def _netns_up():
    _netns_down()
    netns_file = os.environ.get("LOCKSTEP_CONFORMANCE_NETNS")
    if netns_file:
        with open(netns_file, "a") as f:
            f.write(f"{NETNS}\n")
    _sh("ip", "netns", "add", NETNS)
    _sh("ip", "link", "add", VETH_HOST, "type", "veth", "peer", "name", VETH_NS)
    _sh("ip", "link", "set", VETH_NS, "netns", NETNS)
    _sh("ip", "addr", "add", f"{HOST_IP}/30", "dev", VETH_HOST)
    _sh("ip", "link", "set", VETH_HOST, "up")
    _sh("ip", "netns", "exec", NETNS, "ip", "addr", "add", f"{NS_IP}/30", "dev", VETH_NS)
    _sh("ip", "netns", "exec", NETNS, "ip", "link", "set", VETH_NS, "up")
    _sh("ip", "netns", "exec", NETNS, "ip", "link", "set", "lo", "up")


def _netns_down():
    # Deleting the namespace deletes its end of the veth pair, the other end and its rules.
    _sh("ip", "netns", "del", NETNS, check=False)
    _sh("ip", "link", "del", VETH_HOST, check=False)


def measure_zk_disconnected(client_dir, runs, t_ms=6000, log=print):
    """Seconds from the last ping response a client got to its Disconnected event, when
    iptables in the client's network namespace starts dropping everything to and from the
    server; session t_ms, one ZooKeeper server with tickTime 2 s; one sample per run."""
    import calendar

    workdir = os.path.join(BASE, "zk-partition")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(os.path.join(workdir, "data"))
    samples = []
    server = None
    try:
        _netns_up()
        cfg = os.path.join(workdir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write(
                f"tickTime=2000\ndataDir={workdir}/data\nclientPort={ZK_NS_PORT}\n"
                f"clientPortAddress={HOST_IP}\nadmin.enableServer=false\n"
            )
        server = PROCS.start(
            ["java", "-cp", zk_classpath(), "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        wait_port(ZK_NS_PORT, 30, server, host=HOST_IP)
        for run in range(runs):
            client = PROCS.start(
                [
                    "ip", "netns", "exec", NETNS, "java", "-Duser.timezone=UTC",
                    "-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.ClientCnxn=debug",
                    "-Dorg.slf4j.simpleLogger.showDateTime=true",
                    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss.SSS",
                    "-Dorg.slf4j.simpleLogger.logFile=System.out",
                    "-cp", zk_classpath() + ":" + client_dir,
                    "ZkIdle", f"{HOST_IP}:{ZK_NS_PORT}", str(t_ms), "60000",
                ],
                stdout=subprocess.PIPE,
            )
            cl = Lines(client.stdout)
            if cl.wait_for("^NEGOTIATED", 30) is None:
                raise RuntimeError("the ZooKeeper client in the namespace did not connect in 30 s")
            time.sleep(t_ms / 1000 + random.random() * 2)
            for chain, flag in (("OUTPUT", "-d"), ("INPUT", "-s")):
                _sh("ip", "netns", "exec", NETNS, "iptables", "-A", chain, flag, HOST_IP, "-j", "DROP")
            cut = time.time()
            event = cl.wait_for(r"^EVENT \d+ Disconnected", t_ms / 1000 + 15)
            PROCS.stop(client)
            for chain, flag in (("OUTPUT", "-d"), ("INPUT", "-s")):
                _sh("ip", "netns", "exec", NETNS, "iptables", "-D", chain, flag, HOST_IP, "-j", "DROP")
            if event is None:
                raise RuntimeError(f"no Disconnected within {t_ms / 1000 + 15} s of the partition")
            disconnected = int(event[1].split()[1]) / 1000
            pings = []
            for _t, line in cl.matching("Got ping response"):
                m = _PING_FULL.match(line)
                if m:
                    y, mo, d, h, mi, s, ms = (int(x) for x in m.groups())
                    pings.append(calendar.timegm((y, mo, d, h, mi, s)) + ms / 1000)
            pings = [p for p in pings if p <= cut]
            if not pings:
                raise RuntimeError("no ping response seen before the partition")
            samples.append(disconnected - pings[-1])
            log(f"  zk partition T={t_ms / 1000:g} s run {run + 1}/{runs}: Disconnected {disconnected - pings[-1]:.3f} s after the last ping response")
    finally:
        if server is not None:
            PROCS.stop(server)
        _netns_down()
        shutil.rmtree(workdir, ignore_errors=True)
    return samples


# --- TCP on loopback: a partition's bytes, and retries running out ---------------------------
#
# Every iptables rule the suite inserts carries the comment IPT_TAG, so that ipt_clear() here
# and conformance/run's cleanup delete exactly those rules and no one else's. A network
# namespace is written to LOCKSTEP_CONFORMANCE_NETNS before it is made, for the same reason.

TCP_PORT = 16401
IPT_TAG = "lsconf"
TCP_NETNS = "lsconf-tcp"


def _ipt(op, chain, *match, ns=None, check=True):
    """Insert (-I) or delete (-D) one DROP rule tagged IPT_TAG, in the host's filter table or in
    network namespace `ns`'s."""
    pre = ("ip", "netns", "exec", ns) if ns else ()
    _sh(*pre, "iptables", "-w", "5", op, chain, *match, "-m", "comment", "--comment", IPT_TAG, "-j", "DROP", check=check)


def ipt_clear():
    """Delete every rule of the host's filter table tagged IPT_TAG (none when all went well)."""
    out = subprocess.run(["iptables", "-w", "5", "-S"], capture_output=True, timeout=20)
    for line in out.stdout.decode().splitlines():
        words = line.split()
        if words[:1] == ["-A"] and "--comment" in words and words[words.index("--comment") + 1:][:1] == [IPT_TAG]:
            _sh("iptables", "-w", "5", "-D", *words[1:], check=False)


def _register_netns(name):
    netns_file = os.environ.get("LOCKSTEP_CONFORMANCE_NETNS")
    if netns_file:
        with open(netns_file, "a") as f:
            f.write(f"{name}\n")


def _tcp_info(sock):
    """From getsockopt(TCP_INFO): (icsk retransmits, backoff, rto ms, total retransmissions,
    ms since the last data was sent)."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    u8 = struct.unpack_from("8B", raw, 0)
    u32 = struct.unpack_from("24I", raw, 8)
    return u8[2], u8[4], u32[0] / 1000, u32[23], u32[9]


class _Retrans:
    """Samples a client socket's TCP_INFO every 10 ms in a thread: the time of each
    retransmission (tail loss probes included) and the RTO and back-off after it."""

    def __init__(self, sock):
        self.sock, self.events, self.stopped = sock, [], False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        seen = None
        while not self.stopped:
            try:
                retransmits, backoff, rto, total, since_ms = _tcp_info(self.sock)
            except OSError:
                return
            now = time.monotonic()
            if seen is not None and total != seen:
                self.events.append((now - since_ms / 1000, retransmits, backoff, rto))
            seen = total
            time.sleep(0.01)

    def stop(self):
        self.stopped = True
        self.thread.join(2)

    def text(self, t0):
        return ", ".join(f"{t - t0:.3f}" + ("" if k else " (TLP)") for t, k, _b, _r in self.events)


class _StampServer:
    """A TCP server on host:port in a thread. It answers a connection's first chunk with "ok\\n"
    (so that the client has an RTT sample) and stamps every chunk after it with
    time.monotonic() as it is read."""

    def __init__(self, port, host="127.0.0.1"):
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, port))
        self.listener.listen(4)
        self.chunks = []
        self.cond = threading.Condition()
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        first = True
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            now = time.monotonic()
            if not data:
                return
            if first:
                first = False
                conn.sendall(b"ok\n")
                continue
            with self.cond:
                self.chunks.append((now, data))
                self.cond.notify_all()

    def wait_chunk(self, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not self.chunks:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)
            return self.chunks[0]

    def close(self):
        # shutdown() first: it wakes the threads blocked in accept() and recv(), which would
        # otherwise keep the sockets (and the port) open after close().
        for s in [self.listener] + self.conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def _tcp_client(port, host="127.0.0.1"):
    """A connected client that has exchanged one message with a _StampServer."""
    c = socket.create_connection((host, port), timeout=5)
    c.sendall(b"hello\n")
    if c.recv(16) != b"ok\n":
        raise RuntimeError("the TCP test server did not answer the first message")
    return c


def measure_tcp_partition(runs, partition_s, log=print):
    """A message written on an established loopback connection just after an iptables DROP of
    the server's port is inserted (INPUT, lo); the rule is deleted partition_s seconds after the
    write. Per run: (write to arrival at the server, heal to arrival) in seconds."""
    samples = []
    for run in range(runs):
        server = client = watch = None
        try:
            server = _StampServer(TCP_PORT)
            client = _tcp_client(TCP_PORT)
            # A random phase against the kernel's timer wheel (HZ-granular, coarser for long
            # timeouts); the delayed ACK of the exchange has long gone out by then.
            time.sleep(0.5 + random.random())
            _ipt("-I", "INPUT", "-i", "lo", "-p", "tcp", "--dport", str(TCP_PORT))
            watch = _Retrans(client)
            t_write = time.monotonic()
            client.sendall(b"written during the partition\n")
            time.sleep(max(0.0, t_write + partition_s - time.monotonic()))
            _ipt("-D", "INPUT", "-i", "lo", "-p", "tcp", "--dport", str(TCP_PORT))
            t_heal = time.monotonic()
            got = server.wait_chunk(125 + 5)  # TCP_RTO_MAX, the longest back-off
            watch.stop()
            if got is None:
                raise RuntimeError(f"the message did not arrive within 130 s of the heal ({partition_s} s partition)")
            samples.append((got[0] - t_write, got[0] - t_heal))
            log(
                f"  tcp partition {partition_s:g} s run {run + 1}/{runs}: arrived {got[0] - t_write:.3f} s after the write, "
                f"{got[0] - t_heal:.3f} s after the heal (heal {t_heal - t_write:.3f} s after the write); "
                f"sent at {watch.text(t_write)} s after the write"
            )
        finally:
            if watch is not None:
                watch.stop()
            ipt_clear()
            for s in (client, server):
                if s is not None:
                    s.close()
    return samples


def _tcp_reset_child(port, timeout_s):
    """In a network namespace: a _StampServer and a client on its lo; after "GO" on stdin
    (the driver has dropped the server's port by then), the client writes one message and
    waits for its socket's error. Prints READY, then RESET <seconds after the write> <errno
    name> <retransmission times>."""
    server = _StampServer(port)
    client = _tcp_client(port)
    print("READY", flush=True)
    if sys.stdin.readline().strip() != "GO":
        return
    watch = _Retrans(client)
    t_write = time.monotonic()
    client.sendall(b"written into the void\n")
    poll = select.poll()
    poll.register(client, select.POLLERR | select.POLLHUP)
    events = poll.poll(timeout_s * 1000)
    now = time.monotonic()
    watch.stop()
    if not events:
        print(f"NORESET {now - t_write:.6f}", flush=True)
        return
    err = client.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    print(f"RESET {now - t_write:.6f} {errno.errorcode.get(err, err)} {watch.text(t_write) or '-'}", flush=True)
    client.close()
    server.close()


def measure_tcp_retries_reset(runs, retries2, log=print):
    """In network namespace lsconf-tcp with net.ipv4.tcp_retries2 = retries2: a message written
    on an established loopback connection whose server port iptables drops for good; seconds
    from the write to the client socket's error (ETIMEDOUT), one sample per run."""
    expected = ((2 << retries2) - 1) * 0.2
    samples = []
    try:
        _register_netns(TCP_NETNS)
        _sh("ip", "netns", "del", TCP_NETNS, check=False)
        _sh("ip", "netns", "add", TCP_NETNS)
        _sh("ip", "netns", "exec", TCP_NETNS, "ip", "link", "set", "lo", "up")
        _sh("ip", "netns", "exec", TCP_NETNS, "sysctl", "-q", "-w", f"net.ipv4.tcp_retries2={retries2}")
        inside = _sh("ip", "netns", "exec", TCP_NETNS, "sysctl", "-n", "net.ipv4.tcp_retries2").stdout.decode().strip()
        outside = _sh("sysctl", "-n", "net.ipv4.tcp_retries2").stdout.decode().strip()
        if inside != str(retries2):
            raise RuntimeError(f"net.ipv4.tcp_retries2 reads {inside} in the namespace after setting {retries2}")
        log(f"  tcp_retries2: {inside} in {TCP_NETNS}, {outside} outside it")
        for run in range(runs):
            time.sleep(random.random())
            child = PROCS.start(
                ["ip", "netns", "exec", TCP_NETNS, sys.executable, os.path.abspath(__file__),
                 "tcp-reset", str(TCP_PORT), str(int(expected * 2 + 130))],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            )
            try:
                out = Lines(child.stdout)
                if out.wait_for("^READY", 10) is None:
                    raise RuntimeError("the TCP client in the namespace did not connect in 10 s")
                time.sleep(0.5 + random.random())
                _ipt("-I", "INPUT", "-i", "lo", "-p", "tcp", "--dport", str(TCP_PORT), ns=TCP_NETNS)
                child.stdin.write(b"GO\n")
                child.stdin.flush()
                line = out.wait_for("^(RESET|NORESET)", expected * 2 + 140)
                if line is None or line[1].startswith("NORESET"):
                    raise RuntimeError(f"no error on the client socket within {expected * 2 + 130:.0f} s of the write")
                words = line[1].split(maxsplit=3)
                samples.append(float(words[1]))
                log(
                    f"  tcp retries2={retries2} run {run + 1}/{runs}: {words[2]} {float(words[1]):.3f} s after the write "
                    f"(tcp_model_timeout {expected:.1f} s); sent at {words[3]} s after the write"
                )
            finally:
                PROCS.stop(child)
                _ipt("-D", "INPUT", "-i", "lo", "-p", "tcp", "--dport", str(TCP_PORT), ns=TCP_NETNS, check=False)
    finally:
        _sh("ip", "netns", "del", TCP_NETNS, check=False)
    return samples


# --- PostgreSQL 15 advisory locks: TCP keepalive, a paused holder, pgbouncer ------------------

PG_BIN = "/usr/lib/postgresql/15/bin"
PG_PORT, PGBOUNCER_PORT = 15433, 16432
PG_USER = "postgres"  # the system user the packages make; postgres and pgbouncer refuse root


class _PgError(RuntimeError):
    pass


class _PgTimeout(RuntimeError):
    pass


class _Pg:
    """A minimal client of PostgreSQL's v3 protocol: trust authentication, simple queries. It
    owns its socket, so its local port is known (for iptables) and every reply is stamped with
    time.monotonic() as it is read; a wait for a reply that times out can be resumed."""

    def __init__(self, port, timeout=10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.port = self.sock.getsockname()[1]
        self.buf = b""
        body = f"user\0{PG_USER}\0database\0postgres\0\0".encode()
        self.sock.sendall(struct.pack("!ii", len(body) + 8, 196608) + body)
        self.reply(timeout)

    def _message(self, deadline):
        while len(self.buf) < 5 or len(self.buf) < 1 + struct.unpack("!i", self.buf[1:5])[0]:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _PgTimeout("no reply before the deadline")
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                raise _PgTimeout("no reply before the deadline") from None
            if not chunk:
                raise _PgError("the server closed the connection")
            self.buf += chunk
        n = struct.unpack("!i", self.buf[1:5])[0]
        kind, body, self.buf = self.buf[:1], self.buf[5:1 + n], self.buf[1 + n:]
        return kind, body

    def reply(self, timeout):
        """The rows of the pending query's reply and the time its end (ReadyForQuery) was read;
        _PgTimeout if it has not come within `timeout` s (call again to keep waiting)."""
        deadline = time.monotonic() + timeout
        rows, error = [], None
        while True:
            kind, body = self._message(deadline)
            if kind == b"R" and struct.unpack("!i", body[:4])[0] != 0:
                raise _PgError("the server asks for a password: trust authentication expected")
            if kind == b"E":
                fields = dict((f[:1], f[1:].decode(errors="replace")) for f in body.split(b"\0") if f)
                error = f"{fields.get(b'S', 'ERROR')}: {fields.get(b'M', '?')}"
            elif kind == b"D":
                (ncols,), pos, row = struct.unpack_from("!h", body), 2, []
                for _ in range(ncols):
                    (size,) = struct.unpack_from("!i", body, pos)
                    pos += 4
                    row.append(None if size < 0 else body[pos:pos + size].decode())
                    pos += max(size, 0)
                rows.append(row)
            elif kind == b"Z":
                now = time.monotonic()
                if error:
                    raise _PgError(error)
                return rows, now

    def send(self, sql):
        self.sock.sendall(b"Q" + struct.pack("!i", len(sql.encode()) + 5) + sql.encode() + b"\0")

    def query(self, sql, timeout=10):
        self.send(sql)
        return self.reply(timeout)

    def close(self):
        try:
            self.sock.sendall(b"X\0\0\0\4")
        except OSError:
            pass
        self.sock.close()


def _as_pg_user():
    return {"user": PG_USER, "group": PG_USER, "extra_groups": []}


def _pg_workdir(name):
    """A directory under BASE that the unprivileged postgres user owns and can reach."""
    workdir = os.path.join(BASE, name)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    # conformance/run's mktemp directory is 0700 (root): let the postgres user traverse it
    # (search only; nothing in it becomes readable).
    for d in (BASE, os.path.dirname(BASE)):
        mode = os.stat(d).st_mode
        if os.stat(d).st_uid == os.getuid() and mode & 0o011 != 0o011 and d != "/tmp":
            os.chmod(d, (mode | 0o011) & 0o7777)
    shutil.chown(workdir, PG_USER, PG_USER)
    return workdir


def _pg_server(workdir):
    """A private PostgreSQL 15 cluster in workdir/data on 127.0.0.1:PG_PORT, run as the postgres
    user, with TCP keepalive idle 5 s, interval 2 s, 3 probes on every client connection."""
    data = os.path.join(workdir, "data")
    res = subprocess.run(
        [f"{PG_BIN}/initdb", "-D", data, "-U", PG_USER, "--auth=trust", "-E", "UTF8", "--no-sync"],
        capture_output=True, timeout=180, cwd=workdir, **_as_pg_user(),
    )
    if res.returncode != 0:
        raise RuntimeError(f"initdb: exit {res.returncode}: {res.stderr.decode()[-400:]}")
    with open(os.path.join(data, "postgresql.conf"), "a") as f:
        f.write(
            f"listen_addresses = '127.0.0.1'\nport = {PG_PORT}\nunix_socket_directories = ''\n"
            "tcp_keepalives_idle = 5\ntcp_keepalives_interval = 2\ntcp_keepalives_count = 3\n"
            "max_connections = 20\nshared_buffers = 16MB\nfsync = off\n"
            "log_connections = on\nlog_disconnections = on\nlog_line_prefix = '%m [%p] '\n"
        )
    log_file = open(os.path.join(workdir, "postgres.log"), "ab")
    p = PROCS.start([f"{PG_BIN}/postgres", "-D", data], stdout=log_file, stderr=log_file, cwd=workdir, **_as_pg_user())
    log_file.close()
    wait_port(PG_PORT, 30, p)
    deadline = time.monotonic() + 30
    while True:
        try:
            c = _Pg(PG_PORT)
            c.query("SELECT 1")
            c.close()
            return p
        except (_PgError, _PgTimeout, OSError):  # "the database system is starting up"
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _pg_stop(p):
    """A fast shutdown (SIGINT: the backends are ended, then the postmaster exits); SIGKILL
    after 15 s. The backends set their own sessions, so they are not in the postmaster's group:
    a SIGKILLed postmaster's backends exit on their own when they see it gone."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    PROCS.stop(p)


def _pg_log_tail(workdir, pattern):
    try:
        with open(os.path.join(workdir, "postgres.log"), errors="replace") as f:
            return [line.rstrip() for line in f if re.search(pattern, line)]
    except OSError:
        return []


def _pg_holder(key, port=PG_PORT, idle_s=300):
    """A separate process (so it can be stopped) that takes pg_advisory_lock(key) on a session
    and stays idle: (process, port of its connection, time its lock query's reply was read)."""
    holder = PROCS.start(
        [sys.executable, os.path.abspath(__file__), "pg-hold", str(port), str(key), str(idle_s)],
        stdout=subprocess.PIPE,
    )
    out = Lines(holder.stdout)
    line = out.wait_for("^(LOCKED|FAILED)", 15)
    if line is None or line[1].startswith("FAILED"):
        PROCS.stop(holder)
        raise RuntimeError(f"the holder did not take the lock in 15 s: {line[1] if line else 'no answer'}")
    _, local_port, t_reply = line[1].split()
    return holder, int(local_port), float(t_reply)


def _pg_hold_child(port, key, idle_s):
    try:
        c = _Pg(port)
        _rows, t_reply = c.query(f"SELECT pg_advisory_lock({key})")
    except (_PgError, _PgTimeout, OSError) as e:
        print(f"FAILED {e}", flush=True)
        return
    print(f"LOCKED {c.port} {t_reply:.6f}", flush=True)
    time.sleep(idle_s)


def _keepalive_timer(client_port):
    """The timer of the server's side of the connection from client_port and its count of
    unanswered probes, from `ss -o` ("timer:(keepalive,<left>,<probes>)"; iproute2 6.1 prints
    the time left in seconds with an "ms" suffix, so it is left out)."""
    out = subprocess.run(
        ["ss", "-tnoH", "state", "established", f"( sport = :{PG_PORT} and dport = :{client_port} )"],
        capture_output=True, timeout=10,
    ).stdout.decode()
    m = re.search(r"timer:\((\w+),[^,]*,(\d+)\)", out)
    return f"{m.group(1)} timer, {m.group(2)} probes unanswered" if m else "no timer"


def _pg_drop_rules(op, port, check=True):
    # Both directions of one connection on lo: the client's segments to the server and the
    # server's (keepalive probes included) to the client.
    _ipt(op, "INPUT", "-i", "lo", "-p", "tcp", "--sport", str(port), "--dport", str(PG_PORT), check=check)
    _ipt(op, "INPUT", "-i", "lo", "-p", "tcp", "--sport", str(PG_PORT), "--dport", str(port), check=check)


def measure_pg_keepalive_drop(runs, log=print):
    """Client A takes pg_advisory_lock(k) and goes idle; 0.5-3 s after the reply, iptables drops
    every packet of A's connection in both directions, so the server's keepalive probes go
    unanswered; client B waits in pg_advisory_lock(k). Seconds from A's reply (the last the
    server heard from A, give or take A's ACK) to B's grant, one sample per run."""
    workdir = _pg_workdir("pg-keepalive")
    samples = []
    server = None
    try:
        server = _pg_server(workdir)
        for run in range(runs):
            key = 100 + run
            time.sleep(random.random())
            holder, a_port, t_last = _pg_holder(key)
            waiter = None
            try:
                waiter = _Pg(PG_PORT)
                waiter.send(f"SELECT pg_advisory_lock({key})")
                time.sleep(max(0.0, t_last + 0.5 + random.random() * 2.5 - time.monotonic()))
                _pg_drop_rules("-I", a_port)
                t_drop = time.monotonic()
                try:
                    _rows, t_grant = waiter.reply(5 + 3 * 2 + 20)
                except _PgTimeout:
                    raise RuntimeError(f"B was not granted the lock within {t_drop - t_last + 31:.0f} s of A's last reply") from None
                samples.append(t_grant - t_last)
                seen = _pg_log_tail(workdir, "could not receive data from client|connection to client lost")
                log(
                    f"  pg keepalive drop run {run + 1}/{runs}: B granted {t_grant - t_last:.3f} s after A's last reply "
                    f"(drop {t_drop - t_last:.3f} s after it); server log: {seen[-1].split('] ', 1)[-1] if seen else '-'}"
                )
            finally:
                _pg_drop_rules("-D", a_port, check=False)
                if waiter is not None:
                    waiter.close()
                PROCS.stop(holder)
    finally:
        ipt_clear()
        if server is not None:
            _pg_stop(server)
        shutil.rmtree(workdir, ignore_errors=True)
    return samples


def measure_pg_keepalive_sigstop(runs, hold_s, log=print):
    """Client A takes pg_advisory_lock(k), goes idle and is stopped with SIGSTOP 0.5-3 s after
    its reply (its kernel still answers the server's keepalive probes); client B tries
    pg_try_advisory_lock(k) every 100 ms. Per run: the seconds from A's reply to B's first
    success, or hold_s when B never succeeded within hold_s of A's reply (censored). A is then
    killed, and the time its lock takes to free is logged."""
    workdir = _pg_workdir("pg-sigstop")
    samples = []
    server = None
    try:
        server = _pg_server(workdir)
        for run in range(runs):
            key = 200 + run
            time.sleep(random.random())
            holder, a_port, t_last = _pg_holder(key, idle_s=hold_s + 120)
            waiter = None
            try:
                waiter = _Pg(PG_PORT)
                time.sleep(max(0.0, t_last + 0.5 + random.random() * 2.5 - time.monotonic()))
                os.kill(holder.pid, signal.SIGSTOP)
                t_stop = time.monotonic()
                got = None
                while time.monotonic() < t_last + hold_s:
                    rows, t = waiter.query(f"SELECT pg_try_advisory_lock({key})")
                    if rows[0][0] == "t":
                        got = t
                        break
                    time.sleep(0.1)
                held = hold_s if got is None else min(hold_s, got - t_last)
                samples.append(held)
                timer = _keepalive_timer(a_port)
                os.kill(holder.pid, signal.SIGKILL)
                t_kill = time.monotonic()
                freed = None
                while got is None and time.monotonic() < t_kill + 10:
                    rows, t = waiter.query(f"SELECT pg_try_advisory_lock({key})")
                    if rows[0][0] == "t":
                        freed = t
                        break
                    time.sleep(0.01)
                log(
                    f"  pg keepalive sigstop run {run + 1}/{runs}: "
                    + (f"B got the lock {got - t_last:.3f} s after A's last reply" if got is not None
                       else f"lock still held {hold_s:g} s after A's last reply (stopped {t_stop - t_last:.3f} s after it; "
                            f"the server's socket to A: {timer})")
                    + ("" if got is not None else
                       f"; freed {freed - t_kill:.3f} s after A's kill -9" if freed is not None else "; not freed 10 s after A's kill -9")
                )
            finally:
                if waiter is not None:
                    waiter.close()
                PROCS.stop(holder)
    finally:
        if server is not None:
            _pg_stop(server)
        shutil.rmtree(workdir, ignore_errors=True)
    return samples


def _pgbouncer(workdir, mode):
    """pgbouncer 1.18 on 127.0.0.1:PGBOUNCER_PORT in front of the cluster, pool_mode `mode`,
    one server connection, trust authentication, run as the postgres user."""
    users = os.path.join(workdir, "userlist.txt")
    with open(users, "w") as f:
        f.write(f'"{PG_USER}" ""\n')
    ini = os.path.join(workdir, "pgbouncer.ini")
    with open(ini, "w") as f:
        f.write(
            f"[databases]\npostgres = host=127.0.0.1 port={PG_PORT} dbname=postgres user={PG_USER}\n\n"
            f"[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {PGBOUNCER_PORT}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {users}\npool_mode = {mode}\n"
            "default_pool_size = 1\nmin_pool_size = 0\nreserve_pool_size = 0\nmax_db_connections = 1\n"
            "max_client_conn = 20\nserver_reset_query = DISCARD ALL\n"
        )
    for path in (users, ini):
        shutil.chown(path, PG_USER, PG_USER)
    log_file = open(os.path.join(workdir, f"pgbouncer-{mode}.log"), "ab")
    p = PROCS.start(["pgbouncer", ini], stdout=log_file, stderr=log_file, cwd=workdir, **_as_pg_user())
    log_file.close()
    wait_port(PGBOUNCER_PORT, 15, p)
    return p


def measure_pgbouncer_leak(mode, runs=4, log=print):
    """Two clients through pgbouncer (pool_mode `mode`, one server connection) each call
    SELECT pg_advisory_lock(1), the second after the first's reply. Per run: the number of
    double grants, 1 when the second client is granted the lock while the first still holds it
    (re-entrant on the one shared backend: transaction pooling), 0 when it waits. Also logs
    whether the lock outlives the first client's disconnect (a leak: transaction pooling never
    runs the reset query) and, for a waiting client, when it gets the lock."""
    workdir = _pg_workdir(f"pgbouncer-{mode}")
    samples = []
    server = None
    try:
        server = _pg_server(workdir)
        direct = _Pg(PG_PORT)
        held_q = "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = 1 AND granted"

        def holders():
            return ",".join(r[0] for r in direct.query(held_q)[0]) or "nobody"

        for run in range(runs):
            bouncer = _pgbouncer(workdir, mode)
            c1 = c2 = None
            try:
                if holders() != "nobody":
                    raise RuntimeError("advisory lock 1 is held before the run")
                time.sleep(random.random() * 0.5)
                c1, c2 = _Pg(PGBOUNCER_PORT), _Pg(PGBOUNCER_PORT)
                rows1, t1 = c1.query("SELECT pg_advisory_lock(1), pg_backend_pid()")
                c2.send("SELECT pg_advisory_lock(1), pg_backend_pid()")
                try:
                    rows2, t2 = c2.reply(3)
                except _PgTimeout:
                    rows2 = t2 = None
                double = 1 if rows2 is not None else 0
                samples.append(double)
                what = (
                    f"client 2 granted too, {t2 - t1:.3f} s later, on backend {rows2[0][1]} (double grant)" if double
                    else "client 2 still waiting 3 s later (no double grant)"
                )
                c1.close()
                c1 = None
                t_close = time.monotonic()
                if rows2 is None:
                    try:
                        rows2, t2 = c2.reply(10)
                        what += f", granted {t2 - t_close:.3f} s after client 1 disconnected, on backend {rows2[0][1]}"
                    except _PgTimeout:
                        what += ", still waiting 10 s after client 1 disconnected"
                time.sleep(0.5)
                what += f"; the lock's holder after client 1 left: {holders()}"
                c2.close()
                c2 = None
                time.sleep(0.5)
                after = holders()
                what += f"; after both left: {after}" + (" (leaked)" if after != "nobody" else "")
                log(f"  pgbouncer {mode} run {run + 1}/{runs}: client 1 granted on backend {rows1[0][1]}; {what}")
            finally:
                for c in (c1, c2):
                    if c is not None:
                        c.close()
                PROCS.stop(bouncer)
                # pgbouncer's server connection goes with it, and its backend with the lock.
                deadline = time.monotonic() + 10
                while holders() != "nobody" and time.monotonic() < deadline:
                    time.sleep(0.1)
        direct.close()
    finally:
        if server is not None:
            _pg_stop(server)
        shutil.rmtree(workdir, ignore_errors=True)
    return samples


if __name__ == "__main__":
    # The helpers that must run as their own processes (in a network namespace, or to be
    # stopped with SIGSTOP): started by the measure_* functions above, never by hand.
    if sys.argv[1] == "tcp-reset":
        _tcp_reset_child(int(sys.argv[2]), float(sys.argv[3]))
    elif sys.argv[1] == "pg-hold":
        _pg_hold_child(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(f"real.py: unknown helper {sys.argv[1]}")
