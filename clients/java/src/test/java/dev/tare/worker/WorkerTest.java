package dev.tare.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedInputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tests with a fake master. The JDK cannot make a socketpair nor pass a descriptor above 2 to a
 * child, so the test listens on a Unix-domain socket and starts the worker JVM through a
 * three-line python3 launcher that connects, puts the connected stream socket on fd 3 and execs
 * the worker with TARE_WORKER_FD=3: the worker inherits a Unix stream socket exactly as from
 * tare, and the test drives the protocol on the accepted end.
 */
class WorkerTest {
    static final String LAUNCHER = String.join("\n",
            "import os, socket, sys",
            "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(sys.argv[1])",
            "fd = s.detach()",
            "if fd != 3: os.dup2(fd, 3); os.close(fd)",
            "os.set_inheritable(3, True)",
            "os.environ['TARE_WORKER_FD'] = '3'",
            "os.execvp(sys.argv[2], sys.argv[2:])");

    @TempDir Path tmp;
    final List<Process> started = new ArrayList<>();

    @AfterEach
    void killAll() {
        for (Process p : started) p.destroyForcibly();
    }

    static String java() {
        return Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    }

    static String dirOf(Class<?> c) throws Exception {
        return Paths.get(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    }

    static String classpath() throws Exception {
        return dirOf(Worker.class) + File.pathSeparator + dirOf(TestWorkerMain.class);
    }

    /** The fake tare: the accepted socket and the worker process. */
    final class Master {
        final Process proc;
        final InputStream in;
        final OutputStream out;

        Master(Process proc, SocketChannel ch) {
            this.proc = proc;
            this.in = new BufferedInputStream(Channels.newInputStream(ch));
            this.out = Channels.newOutputStream(ch);
        }

        void send(String line) throws IOException {
            out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
        }

        Protocol.Message recv() throws Exception {
            String line = Protocol.readLine(in);
            assertNotNull(line, "worker closed the connection");
            assertTrue(!line.contains("\r"), line);
            return Protocol.decode(line);
        }

        Protocol.Message expect(String verb) throws Exception {
            Protocol.Message m = recv();
            assertEquals(verb, m.verb, () -> "got " + m.verb + " " + m.fields);
            return m;
        }

        Map<String, Map<String, String>> handshake(String lang) throws Exception {
            Protocol.Message hello = expect("hello");
            assertEquals("1", hello.get("protocol"));
            assertEquals(lang, hello.get("lang"));
            assertEquals(Worker.VERSION, hello.get("version"));
            Map<String, Map<String, String>> kernels = new HashMap<>();
            while (true) {
                Protocol.Message m = recv();
                switch (m.verb) {
                    case "kernel": {
                        kernels.put(m.get("name"), new HashMap<>());
                        if (m.get("threads") != null) kernels.get(m.get("name")).put("(threads)", m.get("threads"));
                        break;
                    }
                    case "param": kernels.get(m.get("kernel")).put(m.get("name"), m.get("default")); break;
                    case "ready": return kernels;
                    default: throw new AssertionError("unexpected " + m.verb);
                }
            }
        }

        void exit() throws Exception {
            send("exit");
            expect("bye");
            assertTrue(proc.waitFor(60, TimeUnit.SECONDS), "worker did not exit");
            assertEquals(0, proc.exitValue());
        }
    }

    /** Starts {@code command} as a worker on a fresh socket; env entries are added to its environment. */
    Master start(List<String> command, boolean viaFd) throws Exception {
        Path sock = tmp.resolve("m" + started.size() + ".sock");
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(sock));
        List<String> cmd = new ArrayList<>();
        if (viaFd) {
            cmd.addAll(List.of("python3", "-c", LAUNCHER, sock.toString()));
        }
        cmd.addAll(command);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT)
                .redirectOutput(tmp.resolve("stdout" + started.size()).toFile());
        pb.environment().remove("TARE_WORKER_FD");
        if (!viaFd) pb.environment().put("TARE_WORKER_PATH", sock.toString());
        Process p = pb.start();
        started.add(p);
        // A watchdog: a hung worker is killed, which ends the connection and fails the test.
        Thread dog = new Thread(() -> {
            try {
                if (!p.waitFor(120, TimeUnit.SECONDS)) p.destroyForcibly();
            } catch (InterruptedException e) {
                p.destroyForcibly();
            }
        });
        dog.setDaemon(true);
        dog.start();
        SocketChannel ch = server.accept();
        server.close();
        return new Master(p, ch);
    }

    Master startTestWorker(String... jvmFlags) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(java()));
        cmd.addAll(Arrays.asList(jvmFlags));
        cmd.addAll(List.of("-cp", classpath(), "dev.tare.worker.TestWorkerMain"));
        return start(cmd, true);
    }

    static double num(Protocol.Message m, String key) {
        String v = m.get(key);
        assertNotNull(v, () -> m.verb + " has no " + key + ": " + m.fields);
        return Double.parseDouble(v);
    }

    @Test
    void conversation() throws Exception {
        Master m = startTestWorker();
        Map<String, Map<String, String>> kernels = m.handshake("java");
        assertEquals("3", kernels.get("count").get("per"));
        assertEquals("a b%c", kernels.get("count").get("label"));
        assertTrue(kernels.containsKey("boom"));

        m.send("clock");
        Protocol.Message c = m.expect("clock");
        assertTrue(num(c, "resolution_ns") > 0 && num(c, "resolution_ns") < 1e6, c.fields::toString);
        assertTrue(num(c, "cost_ns") > 0 && num(c, "cost_ns") < 1e5, c.fields::toString);

        m.send("setup kernel=nosuch");
        assertTrue(m.expect("error").get("message").contains("nosuch"));
        m.send("setup kernel=count p.bogus=1");
        assertTrue(m.expect("error").get("message").contains("bogus"));
        m.send("run loops=1 reps=1");
        m.expect("error");
        m.send("teardown");
        m.expect("error");

        m.send("setup kernel=count p.per=5 unknownfield=x");
        m.expect("ok");
        m.send("setup kernel=count");
        m.expect("error");
        m.send("run loops=7 reps=3");
        for (int i = 1; i <= 3; i++) {
            Protocol.Message s = m.expect("sample");
            assertEquals(7, num(s, "loops"));
            assertEquals(7, num(s, "m.calls"));
            assertEquals(35, num(s, "bytes"));
            assertEquals(14, num(s, "items"));
            assertEquals(i, num(s, "m.inits"));
            assertEquals(5, num(s, "m.label_len"));
            assertEquals(0.25, num(s, "m.frac"));
            assertTrue(num(s, "ns") > 0);
            assertTrue(!s.fields.containsKey("cpu_ns"), "no cpu_ns: the JDK's process CPU time is too coarse");
        }
        m.expect("done");
        m.send("run loops=0 reps=1");
        m.expect("error");
        m.send("run loops=2");
        m.expect("error");
        m.send("frobnicate x=1");
        assertTrue(m.expect("error").get("message").contains("frobnicate"));
        m.send("teardown");
        m.expect("ok");
        m.send("teardown");
        m.expect("error");

        m.send("setup kernel=bodycount");
        m.expect("ok");
        m.send("run loops=11 reps=1");
        assertEquals(11, num(m.expect("sample"), "m.calls"));
        m.expect("done");
        m.send("teardown");
        m.expect("ok");

        m.send("setup kernel=failsetup");
        assertTrue(m.expect("error").get("message").contains("no GPU here"));
        m.send("setup kernel=boom");
        m.expect("ok");
        m.send("run loops=1 reps=2");
        String msg = m.expect("error").get("message");
        assertTrue(msg.contains("kaboom second line"), msg);
        m.send("teardown");
        m.expect("ok");
        m.send("setup kernel=count p.per=x");
        assertTrue(m.expect("error").get("message").contains("per='x'"));
        m.send("setup kernel=count p.x=%zz");
        m.expect("error");
        m.send("setup kernel=count kernel=count");
        m.expect("error");
        m.exit();
    }

    @Test
    void sampleTimesTheLoop() throws Exception {
        Master m = startTestWorker();
        m.handshake("java");
        m.send("setup kernel=sleepy");
        m.expect("ok");
        m.send("run loops=20 reps=1");
        double ns = num(m.expect("sample"), "ns");
        assertTrue(ns >= 20e6 && ns < 5e9, "ns=" + ns + " for 20 sleeps of 1 ms");
        m.expect("done");
        m.exit();
    }

    @Test
    void perLoopInputIsFreshForEveryLoop() throws Exception {
        Master m = startTestWorker();
        m.handshake("java");
        m.send("setup kernel=each");
        m.expect("ok");
        for (int loops : new int[] {5, 1, 7}) { // batches of 3: 3+2, 1, 3+3+1
            m.send("run loops=" + loops + " reps=2");
            for (int r = 0; r < 2; r++) {
                Protocol.Message s = m.expect("sample");
                assertEquals(loops, num(s, "loops"));
                assertEquals(loops, num(s, "m.inits"));
                assertEquals(loops, num(s, "m.loops"));
                assertEquals(0, num(s, "m.stale"));
            }
            m.expect("done");
        }
        m.exit();
    }

    @Test
    void threadedKernel() throws Exception {
        Master m = startTestWorker();
        assertEquals("4", m.handshake("java").get("threads").get("(threads)"));
        m.send("setup kernel=threads");
        m.expect("ok");
        m.send("run loops=5 reps=2");
        for (int r = 0; r < 2; r++) {
            Protocol.Message s = m.expect("sample");
            for (int i = 0; i < 4; i++) assertEquals(5, num(s, "m.t" + i), s.fields::toString);
            // 4 threads x 5 loops of 4 ms released together: about 20 ms, not 80 ms.
            double ns = num(s, "ns");
            assertTrue(ns >= 20e6 && ns < 70e6, "ns=" + ns);
        }
        m.expect("done");
        m.exit();
    }

    /** Without flags the fd is adopted through Unsafe; with --add-opens through reflection. */
    @Test
    void adoptsTheDescriptorBothWays() throws Exception {
        for (String[] flags : new String[][] {{}, {"--add-opens", "java.base/java.io=ALL-UNNAMED"}}) {
            Master m = startTestWorker(flags);
            m.handshake("java");
            m.send("setup kernel=probe");
            m.expect("ok");
            m.send("run loops=1 reps=1");
            assertEquals(flags.length == 0 ? 2 : 1, num(m.expect("sample"), "m.how"), Arrays.toString(flags));
            m.expect("done");
            m.exit();
        }
    }

    /**
     * An executable jar whose manifest says {@code Add-Opens: java.base/java.io} (as the blur
     * example's does) adopts the descriptor by reflection, with no flag on the command line.
     */
    @Test
    void aJarManifestOpensJavaIo() throws Exception {
        Path jar = tmp.resolve("probe.jar");
        java.util.jar.Manifest mf = new java.util.jar.Manifest();
        java.util.jar.Attributes a = mf.getMainAttributes();
        a.put(java.util.jar.Attributes.Name.MANIFEST_VERSION, "1.0");
        a.put(java.util.jar.Attributes.Name.MAIN_CLASS, "dev.tare.worker.TestWorkerMain");
        a.put(new java.util.jar.Attributes.Name("Add-Opens"), "java.base/java.io");
        // Class-Path entries are URLs relative to the jar: the two class directories.
        a.put(java.util.jar.Attributes.Name.CLASS_PATH, Paths.get(dirOf(Worker.class)).toUri() + " " + Paths.get(dirOf(TestWorkerMain.class)).toUri());
        try (java.util.jar.JarOutputStream out = new java.util.jar.JarOutputStream(Files.newOutputStream(jar), mf)) {
            // the manifest is the whole jar
        }
        Master m = start(List.of(java(), "-jar", jar.toString()), true);
        m.handshake("java");
        m.send("setup kernel=probe");
        m.expect("ok");
        m.send("run loops=1 reps=1");
        assertEquals(1, num(m.expect("sample"), "m.how"));
        m.expect("done");
        m.exit();
    }

    /** The proposed fallback: no inherited fd, TARE_WORKER_PATH names a socket to connect to. */
    @Test
    void connectsToThePath() throws Exception {
        Master m = start(List.of(java(), "-cp", classpath(), "dev.tare.worker.TestWorkerMain"), false);
        m.handshake("java");
        m.send("setup kernel=probe");
        m.expect("ok");
        m.send("run loops=1 reps=1");
        assertEquals(3, num(m.expect("sample"), "m.how"));
        m.expect("done");
        m.exit();
    }

    @Test
    void eofExitsZero() throws Exception {
        Master m = startTestWorker();
        m.handshake("java");
        m.out.close();
        assertTrue(m.proc.waitFor(60, TimeUnit.SECONDS), "worker did not exit after EOF");
        assertEquals(0, m.proc.exitValue());
    }

    static final class Run {
        int status;
        String out, err;
    }

    static Run standalone(String... args) throws Exception {
        return runWorker(null, args);
    }

    static Run runWorker(String fdEnv, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(java(), "-cp", classpath(), "dev.tare.worker.TestWorkerMain"));
        cmd.addAll(Arrays.asList(args));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().remove("TARE_WORKER_FD");
        pb.environment().remove("TARE_WORKER_PATH");
        if (fdEnv != null) pb.environment().put("TARE_WORKER_FD", fdEnv);
        Process p = pb.start();
        Run r = new Run();
        r.out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        r.err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        r.status = p.waitFor();
        return r;
    }

    @Test
    void standaloneMode() throws Exception {
        Run r = standalone("--list");
        assertEquals(0, r.status, r.err);
        assertTrue(r.out.contains("count  # counts its loops\n  per=3  # bytes per loop\n"), r.out);

        r = standalone("--filter", "^count$", "-p", "per=8", "--warmup", "0.05");
        assertEquals(0, r.status, r.err);
        assertTrue(r.out.startsWith("count per=8 label=a b%c "), r.out);
        assertTrue(r.out.contains(" ns/loop  ") && r.out.contains("B/s") && r.out.contains("items/s"), r.out);
        assertTrue(r.out.endsWith(", 10 samples, warm-up 0.1 s)\n"), r.out);
        int i = r.out.indexOf("(N=");
        long n = Long.parseLong(r.out.substring(i + 3, r.out.indexOf(',', i)));
        assertTrue(n >= 1024, "calibrated N=" + n + " for an increment");

        r = standalone("--filter", "^boom$", "--warmup", "0");
        assertEquals(1, r.status);
        assertTrue(r.err.startsWith("tare-worker: error: ") && r.err.contains("kaboom") && r.err.strip().lines().count() == 1, r.err);

        r = standalone("--bogus");
        assertEquals(1, r.status);
        assertTrue(r.err.startsWith("tare-worker: error: unknown argument"), r.err);
        r = standalone("-p", "nope=1");
        assertEquals(1, r.status);
        assertTrue(r.err.contains("nope"), r.err);
    }

    @Test
    void aDescriptorThatIsNoSocketIsAOneLineError() throws Exception {
        for (String fd : new String[] {"17", "1", "x"}) {
            Run r = runWorker(fd);
            assertEquals(1, r.status, r.err);
            assertTrue(r.err.startsWith("tare-worker: error: TARE_WORKER_FD=") && r.err.strip().lines().count() == 1, r.err);
        }
    }

    static Path repoRoot() throws Exception {
        return Paths.get(dirOf(Worker.class)).getParent().getParent().getParent().getParent();
    }

    @Test
    void blurExampleMatchesTheReference() throws Exception {
        String env = System.getenv("TARE_BLUR_CHECKSUMS");
        Path sums = env != null ? Paths.get(env) : repoRoot().resolve("examples/kernels/blur/CHECKSUMS");
        Assumptions.assumeTrue(Files.exists(sums), "no " + sums + ": it comes with examples/kernels/blur/reference.py");
        double want = Double.NaN;
        for (String line : Files.readAllLines(sums)) {
            String[] f = line.trim().split("\\s+");
            if (f.length == 3 && f[0].equals("64") && f[1].equals("3")) want = Double.parseDouble(f[2]);
        }
        assertTrue(!Double.isNaN(want), sums + " has no line for size 64 radius 3");

        Path src = repoRoot().resolve("examples/kernels/blur/java/src/main/java/dev/tare/examples/blur/Blur.java");
        Path classes = Files.createDirectories(tmp.resolve("blur-classes"));
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        int rc = javac.run(null, null, null, "--release", "17", "-cp", dirOf(Worker.class), "-d", classes.toString(), src.toString());
        assertEquals(0, rc, "javac " + src);

        Master m = start(List.of(java(), "-cp", classes + File.pathSeparator + dirOf(Worker.class), "dev.tare.examples.blur.Blur"), true);
        Map<String, Map<String, String>> kernels = m.handshake("java");
        assertEquals("256", kernels.get("blur").get("size"));
        assertEquals("3", kernels.get("blur").get("radius"));
        assertTrue(kernels.containsKey("empty"));
        m.send("setup kernel=blur p.size=64 p.radius=3");
        m.expect("ok");
        m.send("run loops=2 reps=2");
        for (int i = 0; i < 2; i++) {
            Protocol.Message s = m.expect("sample");
            double got = num(s, "m.checksum");
            assertTrue(Math.abs(got - want) <= 1e-9 * Math.abs(want), "checksum " + got + ", reference " + want);
            assertEquals(2 * 64 * 64 * 8, num(s, "bytes"));
        }
        m.expect("done");
        m.send("teardown");
        m.expect("ok");
        m.send("setup kernel=blur p.size=0");
        m.expect("error");
        m.send("setup kernel=empty");
        m.expect("ok");
        m.send("run loops=1000 reps=1");
        m.expect("sample");
        m.expect("done");
        m.exit();
        System.err.println("blur size=64 radius=3 checksum matches the reference " + want);
    }
}
