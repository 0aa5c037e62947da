// The real-side ZooKeeper client of the conformance suite (docs/conformance.md).
//
// Connects to ZooKeeper with a requested session timeout, prints the negotiated timeout, then
// stays idle for a given time and closes. ClientCnxn's own DEBUG log ("Got ping response ...")
// shows each ping; conformance/run reads its timestamps. Every event the watcher sees is printed
// with System.nanoTime so the driver can time Disconnected against a partition.
//
// With `hold PATH` it first creates PATH as an ephemeral node of its session; with `watch PATH`
// it waits for PATH to exist, watches it and prints "DELETED <epoch ms>" when it is deleted, then
// exits.
//
// Usage: java -cp <packaged jars> ZkIdle HOST:PORT REQUESTED_TIMEOUT_MS IDLE_MS [hold|watch PATH]
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public final class ZkIdle {
    public static void main(String[] args) throws Exception {
        String connect = args[0];
        int requested = Integer.parseInt(args[1]);
        long idleMs = Long.parseLong(args[2]);
        CountDownLatch connected = new CountDownLatch(1);
        Watcher watcher = (WatchedEvent e) -> {
            System.out.println("EVENT " + System.currentTimeMillis() + " " + e.getState());
            System.out.flush();
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        };
        ZooKeeper zk = new ZooKeeper(connect, requested, watcher);
        if (!connected.await(20, TimeUnit.SECONDS)) {
            System.out.println("ERROR not connected within 20 s");
            System.exit(2);
        }
        System.out.println("NEGOTIATED " + zk.getSessionTimeout());
        System.out.flush();
        if (args.length == 5 && args[3].equals("hold")) {
            zk.create(args[4], new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
            System.out.println("CREATED " + System.currentTimeMillis());
            System.out.flush();
        } else if (args.length == 5 && args[3].equals("watch")) {
            CountDownLatch deleted = new CountDownLatch(1);
            Watcher onDelete = (WatchedEvent e) -> {
                if (e.getType() == Watcher.Event.EventType.NodeDeleted) {
                    System.out.println("DELETED " + System.currentTimeMillis());
                    System.out.flush();
                    deleted.countDown();
                }
            };
            long until = System.currentTimeMillis() + idleMs;
            while (zk.exists(args[4], onDelete) == null) {
                if (System.currentTimeMillis() > until) {
                    System.out.println("ERROR " + args[4] + " never existed");
                    System.exit(2);
                }
                Thread.sleep(20);
            }
            System.out.println("WATCHING " + System.currentTimeMillis());
            System.out.flush();
            deleted.await(idleMs, TimeUnit.MILLISECONDS);
            zk.close();
            return;
        }
        Thread.sleep(idleMs);
        zk.close();
        System.out.println("CLOSED " + System.currentTimeMillis());
    }
}
