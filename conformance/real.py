"""The real side of the conformance suite: small local servers from Debian's packages, timed.

Each measure_* function starts what it needs under a private directory, returns a list of
samples in seconds, and leaves nothing running (every process it starts is registered with
Procs, which conformance/run's trap and this module's finally blocks stop). Every wait on a real
server has a deadline. docs/conformance.md says what each figure is and where it comes from.
"""

import os
import random
import re
import shutil
import signal
import socket
import subprocess
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
